// client/client_security.h: loading and checking TLS files, and token checks. What the bearer metadata looks
// like on the wire is checked against a server in lawn_client_test.cc.
#include "client/client_security.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace lawn {
namespace {

constexpr char kPem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

class LoadClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/lawn-client-security-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

TEST_F(LoadClientTlsTest, ReadsEachGivenFile) {
  const std::string ca = Write("ca.crt", std::string(kPem) + "ca");
  const std::string cert = Write("c.crt", std::string(kPem) + "cert");
  const std::string key = Write("c.key", "-----BEGIN PRIVATE KEY-----\nkey\n");
  absl::StatusOr<ClientTls> tls = LoadClientTls(ca, cert, key, "lawn.example");
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->ca_pem, std::string(kPem) + "ca");
  EXPECT_EQ(tls->cert_pem, std::string(kPem) + "cert");
  EXPECT_EQ(tls->key_pem, "-----BEGIN PRIVATE KEY-----\nkey\n");
  EXPECT_EQ(tls->server_name, "lawn.example");
  EXPECT_TRUE(ValidateClientTls(*tls).ok());
}

TEST_F(LoadClientTlsTest, EmptyPathsLeaveTheirPartEmpty) {
  absl::StatusOr<ClientTls> tls = LoadClientTls("", "", "");
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->ca_pem, "");
  EXPECT_EQ(tls->cert_pem, "");
  EXPECT_EQ(tls->key_pem, "");
}

TEST_F(LoadClientTlsTest, AMissingFileIsNotFoundNamingIt) {
  const std::string missing = dir_ + "/nope.crt";
  absl::StatusOr<ClientTls> tls = LoadClientTls(missing, "", "");
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(tls.status().message().find("cannot open " + missing), std::string::npos) << tls.status();
}

TEST_F(LoadClientTlsTest, AnUnreadableFileNamesIt) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const std::string locked = Write("locked.key", kPem);
  ASSERT_EQ(chmod(locked.c_str(), 0), 0);
  const std::string cert = Write("c.crt", kPem);
  absl::StatusOr<ClientTls> tls = LoadClientTls("", cert, locked);
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(tls.status().message().find(locked), std::string::npos) << tls.status();
}

TEST_F(LoadClientTlsTest, ADirectoryIsRefusedNamingIt) {
  absl::StatusOr<ClientTls> tls = LoadClientTls(dir_, "", "");
  EXPECT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find(dir_), std::string::npos) << tls.status();
}

TEST_F(LoadClientTlsTest, AFileWithoutPemIsInvalidNamingIt) {
  const std::string der = Write("ca.der", std::string("\x30\x82\x01\x0a", 4));
  absl::StatusOr<ClientTls> tls = LoadClientTls(der, "", "");
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tls.status().message().find(der + ": no PEM block"), std::string::npos) << tls.status();
  // An empty CA file must not quietly mean "gRPC's default roots".
  const std::string empty = Write("empty.crt", "");
  EXPECT_EQ(LoadClientTls(empty, "", "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LoadClientTlsTest, CertificateAndKeyComeTogether) {
  const std::string pem = Write("c.crt", kPem);
  absl::StatusOr<ClientTls> cert_only = LoadClientTls("", pem, "");
  EXPECT_EQ(cert_only.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cert_only.status().message().find("needs its key"), std::string::npos) << cert_only.status();
  absl::StatusOr<ClientTls> key_only = LoadClientTls("", "", pem);
  EXPECT_EQ(key_only.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(key_only.status().message().find("needs its certificate"), std::string::npos)
      << key_only.status();
}

ClientTls Tls(std::string ca_pem, std::string cert_pem, std::string key_pem) {
  ClientTls tls;
  tls.ca_pem = std::move(ca_pem);
  tls.cert_pem = std::move(cert_pem);
  tls.key_pem = std::move(key_pem);
  return tls;
}

TEST(ValidateClientTlsTest, RefusesHalfAKeyPairAndNonPemParts) {
  EXPECT_TRUE(ValidateClientTls(ClientTls{}).ok());
  EXPECT_TRUE(ValidateClientTls(Tls(kPem, "", "")).ok());
  EXPECT_EQ(ValidateClientTls(Tls("", "", kPem)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateClientTls(Tls("", kPem, "")).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status der = ValidateClientTls(Tls("\x30\x82", "", ""));
  EXPECT_EQ(der.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(der.message().find("ca_pem"), std::string::npos) << der;
}

TEST(ValidateTokenTest, AllowsVisibleAsciiOnly) {
  EXPECT_TRUE(ValidateToken("").ok());
  EXPECT_TRUE(ValidateToken("abc.DEF-123_~+/=").ok());
  EXPECT_TRUE(ValidateToken("!\"#$%&'()*,:;<>?@[\\]^`{|}").ok());
  for (const std::string& bad :
       std::vector<std::string>{"a b", "tab\t", "nl\n", std::string("nul\0", 4), "caf\xc3\xa9", "del\x7f"}) {
    const absl::Status s = ValidateToken(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  const absl::Status s = ValidateToken("secret\r\n");
  EXPECT_NE(s.message().find("byte 6 is 0x0d"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("secret"), std::string::npos) << s;
}

}  // namespace
}  // namespace lawn
