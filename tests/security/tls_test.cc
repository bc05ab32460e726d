// TLS and mutual TLS against the real lawnd: the handshake refuses plaintext clients, untrusted and expired
// certificates and (with tls.client_ca_file) clients without a certificate from that CA; a client
// certificate's subject authenticates alone; certificates rotate without a restart, and broken files written
// after start (a key that does not match, garbage, a missing file) are logged and ignored while the previous
// certificate keeps serving; the plaintext health listener keeps probes working and serves nothing else.
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "tests/integration/lawnd_process.h"
#include "tests/security/security_fixture.h"

namespace lawn::testing {
namespace {

using grpc::StatusCode;

// One ServerReflectionInfo exchange (list_services), as a generic call: OK where reflection is served.
StatusCode ReflectionCall(const std::shared_ptr<grpc::Channel>& channel) {
  // ServerReflectionRequest{list_services: ""}: field 7, length-delimited, empty.
  return RawUnaryCall(channel, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                      std::string("\x3a\x00", 2))
      .error_code();
}

class TlsTest : public ::testing::Test {
 protected:
  TlsTest() : certs_(MakeCerts(dir_.path() + "/certs")) {}

  std::string Cert(const std::string& name) const { return certs_ + "/" + name; }

  // Starts lawnd with TLS (server.crt), optionally mutual TLS and tokens; waits for SERVING over TLS.
  void StartLawnd(bool mutual, const std::string& tokens_yaml = "") {
    // Copies, so that the rotation test can replace them under lawnd.
    std::filesystem::copy_file(Cert("server.crt"), dir_.path() + "/tls.crt");
    std::filesystem::copy_file(Cert("server.key"), dir_.path() + "/tls.key");
    std::vector<std::string> args = {"--tls-cert-file", dir_.path() + "/tls.crt", "--tls-key-file",
                                     dir_.path() + "/tls.key", "--durability", "memory",
                                     "--health-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"};
    if (mutual) {
      args.push_back("--tls-client-ca-file");
      args.push_back(Cert("ca.crt"));
    }
    if (!tokens_yaml.empty()) {
      args.push_back("--auth-tokens-file");
      args.push_back(WriteFile(dir_.path() + "/tokens.yaml", tokens_yaml));
    }
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", args);
    lawnd_->set_credentials(mutual ? TlsCredentials(Cert("ca.crt"), Cert("client.crt"), Cert("client.key"))
                                   : TlsCredentials(Cert("ca.crt")));
    lawnd_->Start();
  }

  std::shared_ptr<grpc::Channel> Channel(const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    return grpc::CreateChannel(lawnd_->address(), credentials);
  }

  grpc::Status GetStats(const std::shared_ptr<grpc::Channel>& channel, const std::string& token = "") {
    v1::GetStatsResponse response;
    return v1::TimerService::NewStub(channel)->GetStats(Context(token).get(), v1::GetStatsRequest(), &response);
  }

  int HealthPort() const {
    const std::string log = lawnd_->Log();
    const size_t at = log.find("grpc.health.v1 only) on 127.0.0.1:");
    return at == std::string::npos ? 0 : std::stoi(log.substr(at + std::string("grpc.health.v1 only) on 127.0.0.1:").size()));
  }

  // lawn_tls_reload_failed, or -1 if /metrics does not answer.
  double TlsReloadFailed() const {
    return MetricSample(HttpGet(MetricsPortFromLog(lawnd_->Log()), "/metrics"), "lawn_tls_reload_failed");
  }

  // Replaces `name` in the test dir with `contents` by a rename, as an editor or a copy tool would.
  void Replace(const std::string& name, const std::string& contents) {
    WriteFile(dir_.path() + "/" + name + ".new", contents);
    std::filesystem::rename(dir_.path() + "/" + name + ".new", dir_.path() + "/" + name);
  }

  bool LogHas(const std::string& text) const { return lawnd_->Log().find(text) != std::string::npos; }

  // New connections trusting `ca` keep working for a few of lawnd's and gRPC's 1 s file checks.
  void ExpectServingFor(const std::string& ca, int seconds) {
    for (int i = 0; i < seconds; ++i) {
      EXPECT_TRUE(GetStats(Channel(TlsCredentials(Cert(ca)))).ok()) << "second " << i;
      std::this_thread::sleep_for(std::chrono::seconds(1));  // Nothing to await: the point is that nothing changes.
    }
  }

  // Waits until a new connection trusting `ca` works; sleeps between attempts since each failed handshake logs.
  bool WaitServingWith(const std::string& ca) {
    return WaitFor(
        [&] {
          if (GetStats(Channel(TlsCredentials(Cert(ca)))).ok()) return true;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          return false;
        },
        std::chrono::seconds(30));
  }

  TempDir dir_;
  const std::string certs_;
  std::unique_ptr<LawndProcess> lawnd_;
};

TEST_F(TlsTest, TrustedClientsConnectOthersAreRefused) {
  StartLawnd(false);
  EXPECT_TRUE(GetStats(Channel(TlsCredentials(Cert("ca.crt")))).ok());
  EXPECT_EQ(GetStats(Channel(grpc::InsecureChannelCredentials())).error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("other-ca.crt")))).error_code(), StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, ExpiredServerCertificateIsRefusedByClients) {
  // lawnd starts (with a warning) so that a rotation can fix it, but no client accepts the certificate.
  std::vector<std::string> args = {"--tls-cert-file", Cert("expired-server.crt"), "--tls-key-file",
                                   Cert("expired-server.key"), "--durability", "memory", "--health-listen",
                                   "127.0.0.1:0"};
  lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", args);
  lawnd_->StartNoWait();
  EXPECT_TRUE(WaitFor([&] { return lawnd_->Log().find("has expired") != std::string::npos; }));
  // Serving (seen on the plaintext health port), so UNAVAILABLE below is the handshake, not recovery.
  ASSERT_TRUE(WaitFor([&] { return HealthPort() > 0; }));
  auto health = grpc::CreateChannel("127.0.0.1:" + std::to_string(HealthPort()), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(WaitFor([&] { return HealthCall(health) == StatusCode::OK; }));
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("ca.crt")))).error_code(), StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, MutualTlsNeedsAClientCertificateFromTheCa) {
  StartLawnd(true);
  EXPECT_TRUE(GetStats(Channel(TlsCredentials(Cert("ca.crt"), Cert("client.crt"), Cert("client.key")))).ok());
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("ca.crt")))).error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("ca.crt"), Cert("other-client.crt"), Cert("other-client.key"))))
                .error_code(),
            StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, ClientCertificateSubjectAuthenticatesWithoutToken) {
  const std::string tokens =
      "tokens:\n"
      "  - name: billing-by-cert\n    subject: billing-client\n    grants:\n"
      "      - namespaces: [billing]\n        permissions: [start, read]\n"
      "  - name: ops\n    sha256: " + Sha256Hex("ops-token") + "\n    grants:\n"
      "      - namespaces: [\"*\"]\n        permissions: [admin]\n";
  StartLawnd(true, tokens);
  auto channel = Channel(TlsCredentials(Cert("ca.crt"), Cert("client.crt"), Cert("client.key")));
  auto stub = v1::TimerService::NewStub(channel);
  v1::StartTimerRequest start;
  start.set_namespace_("billing");
  start.set_id("by-cert");
  start.mutable_ttl()->set_seconds(60);
  v1::StartTimerResponse started;
  EXPECT_TRUE(stub->StartTimer(Context("").get(), start, &started).ok());
  start.set_namespace_("other");
  const grpc::Status denied = stub->StartTimer(Context("").get(), start, &started);
  EXPECT_EQ(denied.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find("'billing-by-cert'"), std::string::npos) << denied.error_message();
  // A token, when sent, decides the identity.
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub->GetStats(Context("ops-token").get(), v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.pending_timers(), 1u);
  EXPECT_EQ(stub->GetStats(Context("wrong").get(), v1::GetStatsRequest(), &stats).error_code(),
            StatusCode::UNAUTHENTICATED);
}

TEST_F(TlsTest, CertificateRotatesWithoutRestart) {
  StartLawnd(false);
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("other-ca.crt")))).error_code(), StatusCode::UNAVAILABLE);
  // Replace key and certificate (as a Secret update would), then new connections get the new certificate.
  std::filesystem::copy_file(Cert("other-server.key"), dir_.path() + "/tls.key.new");
  std::filesystem::copy_file(Cert("other-server.crt"), dir_.path() + "/tls.crt.new");
  std::filesystem::rename(dir_.path() + "/tls.key.new", dir_.path() + "/tls.key");
  std::filesystem::rename(dir_.path() + "/tls.crt.new", dir_.path() + "/tls.crt");
  EXPECT_TRUE(WaitFor(
      [&] {
        if (GetStats(Channel(TlsCredentials(Cert("other-ca.crt")))).ok()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // Each failed handshake logs a line.
        return false;
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("ca.crt")))).error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(lawnd_->pid() > 0, true);
}

TEST_F(TlsTest, KeyNotMatchingTheCertificateIsIgnoredUntilAValidPairArrives) {
  StartLawnd(false);
  EXPECT_EQ(TlsReloadFailed(), 0);
  // gRPC reads lawnd's private, checked copy, never the operator's files.
  const std::filesystem::path active = dir_.path() + "/data/tls-active";
  EXPECT_EQ(std::filesystem::status(active).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  EXPECT_TRUE(std::filesystem::exists(active / "current" / "tls.key"));
  Replace("tls.key", ReadText(Cert("other-server.key")));
  EXPECT_TRUE(WaitFor([&] { return LogHas("the key does not match the certificate"); })) << lawnd_->Log();
  EXPECT_EQ(TlsReloadFailed(), 1);
  ExpectServingFor("ca.crt", 3);
  // A valid pair replaces it (both files replaced at once, e.g. by a Secret update).
  Replace("tls.crt", ReadText(Cert("other-server.crt")));
  EXPECT_TRUE(WaitServingWith("other-ca.crt")) << lawnd_->Log();
  EXPECT_TRUE(WaitFor([&] { return TlsReloadFailed() == 0; }));
  EXPECT_EQ(GetStats(Channel(TlsCredentials(Cert("ca.crt")))).error_code(), StatusCode::UNAVAILABLE);
  // The warning was logged once for that broken version, not once a second.
  const std::string log = lawnd_->Log();
  EXPECT_EQ(log.find("the key does not match"), log.rfind("the key does not match")) << log;
}

TEST_F(TlsTest, GarbageOrMissingFilesAreIgnoredAndTheOldPairKept) {
  StartLawnd(false);
  const std::string certificate = ReadText(dir_.path() + "/tls.crt");
  Replace("tls.crt", "this is not a certificate\n");
  EXPECT_TRUE(WaitFor([&] { return LogHas("no PEM certificate in the file"); })) << lawnd_->Log();
  EXPECT_EQ(TlsReloadFailed(), 1);
  ExpectServingFor("ca.crt", 3);
  Replace("tls.crt", certificate);
  std::filesystem::remove(dir_.path() + "/tls.key");
  EXPECT_TRUE(WaitFor([&] { return LogHas("(" + dir_.path() + "/tls.key): cannot open the file"); })) << lawnd_->Log();
  ExpectServingFor("ca.crt", 2);
  // The same pair back: nothing to publish, the failure clears.
  std::filesystem::copy_file(Cert("server.key"), dir_.path() + "/tls.key");
  EXPECT_TRUE(WaitFor([&] { return LogHas("the files are valid again"); })) << lawnd_->Log();
  EXPECT_TRUE(WaitFor([&] { return TlsReloadFailed() == 0; }))
      << TlsReloadFailed();  // Set after the log line.
  EXPECT_TRUE(GetStats(Channel(TlsCredentials(Cert("ca.crt")))).ok());
}

TEST_F(TlsTest, PlaintextHealthListenerServesHealthOnly) {
  StartLawnd(true);
  const int port = HealthPort();
  ASSERT_GT(port, 0) << lawnd_->Log();
  auto plain = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  EXPECT_EQ(HealthCall(plain), StatusCode::OK);
  EXPECT_EQ(GetStats(plain).error_code(), StatusCode::UNIMPLEMENTED);
  // Not even reflection: it lists services on the main port only.
  EXPECT_EQ(ReflectionCall(plain), StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(ReflectionCall(lawnd_->channel()), StatusCode::OK);
}

TEST_F(TlsTest, HealthPortInUseStopsLawnd) {
  RefusingPort taken;
  LawndProcess lawnd(dir_.path() + "/data", {"--health-listen", taken.address(), "--durability", "memory"});
  EXPECT_EQ(lawnd.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(lawnd.Log().find("config key health_listen"), std::string::npos) << lawnd.Log();
}

TEST_F(TlsTest, BadTlsFilesStopLawndWithTheirName) {
  LawndProcess mismatched(dir_.path() + "/data", {"--tls-cert-file", Cert("server.crt"), "--tls-key-file",
                                                  Cert("client.key"), "--durability", "memory"});
  EXPECT_EQ(mismatched.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(mismatched.Log().find("the key does not match the certificate"), std::string::npos) << mismatched.Log();
  LawndProcess missing(dir_.path() + "/data", {"--tls-cert-file", dir_.path() + "/none.crt", "--tls-key-file",
                                               Cert("server.key"), "--durability", "memory"});
  EXPECT_EQ(missing.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(missing.Log().find("tls.cert_file"), std::string::npos) << missing.Log();
  LawndProcess half(dir_.path() + "/data", {"--tls-cert-file", Cert("server.crt"), "--durability", "memory"});
  EXPECT_EQ(half.RunToExit(std::chrono::seconds(30)), 2);
  // lawnd keeps a checked copy of the files in <data_dir>/tls-active: without it, no TLS.
  std::filesystem::create_directory(dir_.path() + "/data2");
  WriteFile(dir_.path() + "/data2/tls-active", "a file where lawnd wants its directory");
  LawndProcess no_dir(dir_.path() + "/data2", {"--tls-cert-file", Cert("server.crt"), "--tls-key-file",
                                                Cert("server.key"), "--durability", "memory"});
  EXPECT_EQ(no_dir.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(no_dir.Log().find("tls-active): it exists and is not a directory"), std::string::npos) << no_dir.Log();
}

}  // namespace
}  // namespace lawn::testing
