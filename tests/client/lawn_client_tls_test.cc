// LawnClient over TLS against FakeTimerService on a real TLS gRPC server, with throw-away certificates from
// tests/testing/make_certs.sh (server.crt is for 127.0.0.1 and localhost, signed by ca.crt; client.crt is
// signed by the same CA; other-ca.crt is unrelated). A failed handshake is UNAVAILABLE on the first call.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "client/lawn_client.h"
#include "gtest/gtest.h"
#include "tests/client/fake_timer_service.h"

namespace lawn {
namespace {

using std::chrono::seconds;

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_TRUE(in.good() || in.eof()) << path;
  return ss.str();
}

class LawnClientTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/lawn-client-tls-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    certs_ = new std::string(pattern);
    const std::string command = std::string("bash ") + LAWN_MAKE_CERTS + " " + *certs_;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() {
    if (certs_ != nullptr) std::filesystem::remove_all(*certs_);
    delete certs_;
    certs_ = nullptr;
  }

  static std::string Cert(const std::string& name) { return ReadFileOrDie(*certs_ + "/" + name); }

  // lawnd's side: server.crt, and with `require_client_certificate` only clients with a certificate of
  // ca.crt.
  static std::shared_ptr<grpc::ServerCredentials> ServerTls(bool require_client_certificate) {
    grpc::SslServerCredentialsOptions ssl(require_client_certificate
                                              ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                              : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_root_certs = Cert("ca.crt");
    ssl.pem_key_cert_pairs.push_back({Cert("server.key"), Cert("server.crt")});
    return grpc::SslServerCredentials(ssl);
  }

  static ClientOptions TlsOptions(const std::string& ca_file) {
    absl::StatusOr<ClientTls> tls = LoadClientTls(*certs_ + "/" + ca_file, "", "");
    EXPECT_TRUE(tls.ok()) << tls.status();
    ClientOptions options;
    options.tls = tls.value_or(ClientTls{});
    return options;
  }

  static absl::StatusCode StartCode(const std::string& target, const ClientOptions& options) {
    absl::StatusOr<std::unique_ptr<LawnClient>> client = LawnClient::Create(target, options);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return client.status().code();
    return (*client)->StartTimer("ns", "id", seconds(1)).status().code();
  }

  static std::string* certs_;
};

std::string* LawnClientTlsTest::certs_ = nullptr;

TEST_F(LawnClientTlsTest, ConnectsWithTheCaAndSendsTheTokenOnCallsAndStreams) {
  FakeTimerService service;
  service.expirations = 1;
  FakeServer server(service, ServerTls(false));
  ClientOptions options = TlsOptions("ca.crt");
  options.token = "tls-token";
  absl::StatusOr<std::unique_ptr<LawnClient>> client = LawnClient::Create(server.address(), options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<v1::Timer> timer = (*client)->StartTimer("ns", "id", seconds(1));
  ASSERT_TRUE(timer.ok()) << timer.status();
  std::unique_ptr<Subscription> subscription = (*client)->Subscribe("ns", {}, [](const v1::Expiration&) {});
  EXPECT_TRUE(subscription->Wait().ok());
  absl::StatusOr<ServingStatus> health = (*client)->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(service.authorizations(), std::vector<std::string>(2, "Bearer tls-token"));
}

TEST_F(LawnClientTlsTest, TheServerNameOverrideIsWhatTheCertificateMustMatch) {
  FakeTimerService service;
  FakeServer server(service, ServerTls(false));
  ClientOptions options = TlsOptions("ca.crt");
  options.tls->server_name = "localhost";  // In server.crt's SAN, though the target is an IP.
  EXPECT_EQ(StartCode(server.address(), options), absl::StatusCode::kOk);
  options.tls->server_name = "elsewhere.example";  // Not in the SAN: the handshake fails.
  EXPECT_EQ(StartCode(server.address(), options), absl::StatusCode::kUnavailable);
}

TEST_F(LawnClientTlsTest, AServerCertificateFromAnotherCaIsRefused) {
  FakeTimerService service;
  FakeServer server(service, ServerTls(false));
  EXPECT_EQ(StartCode(server.address(), TlsOptions("other-ca.crt")), absl::StatusCode::kUnavailable);
  // Without a CA file gRPC's default roots are used, and they do not hold the test CA either.
  ClientOptions default_roots;
  default_roots.tls = ClientTls{};
  EXPECT_EQ(StartCode(server.address(), default_roots), absl::StatusCode::kUnavailable);
}

TEST_F(LawnClientTlsTest, APlaintextClientCannotTalkToATlsServer) {
  FakeTimerService service;
  FakeServer server(service, ServerTls(false));
  EXPECT_EQ(StartCode(server.address(), ClientOptions{}), absl::StatusCode::kUnavailable);
}

TEST_F(LawnClientTlsTest, MutualTlsNeedsTheClientCertificate) {
  FakeTimerService service;
  FakeServer server(service, ServerTls(true));
  EXPECT_EQ(StartCode(server.address(), TlsOptions("ca.crt")), absl::StatusCode::kUnavailable);

  absl::StatusOr<ClientTls> tls =
      LoadClientTls(*certs_ + "/ca.crt", *certs_ + "/client.crt", *certs_ + "/client.key");
  ASSERT_TRUE(tls.ok()) << tls.status();
  ClientOptions options;
  options.tls = *tls;
  EXPECT_EQ(StartCode(server.address(), options), absl::StatusCode::kOk);

  // A certificate from a CA the server does not trust is no better than none.
  tls = LoadClientTls(*certs_ + "/ca.crt", *certs_ + "/other-client.crt", *certs_ + "/other-client.key");
  ASSERT_TRUE(tls.ok()) << tls.status();
  options.tls = *tls;
  EXPECT_EQ(StartCode(server.address(), options), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace lawn
