// The lawnctl binary against the real lawnd: exit codes per status (README, `lawnctl --help`), --json
// output that parses back into the API's messages with the values lawnd holds, and `subscribe`, which prints
// and acks what it receives, stops after --count (acking none past it) and exits 0 on SIGTERM.
//
// lawnctl runs as a child process with its stdout and stderr in files; only that child is ever signalled.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.pb.h"
#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/spawn.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kWait = seconds(30);

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

using Env = std::vector<std::pair<std::string, std::string>>;

// One lawnctl child process; `env` is set in its environment ($LAWN_ADDR and $LAWN_TOKEN are cleared first).
class Lawnctl {
 public:
  Lawnctl(const std::string& dir, std::vector<std::string> args, const Env& env = {})
      : out_(dir + "/out"), err_(dir + "/err") {
    static int counter = 0;
    out_ += std::to_string(counter);
    err_ += std::to_string(counter++);
    args.insert(args.begin(), LAWNCTL_PATH);
    std::vector<std::string> child_env = CurrentEnvironment({"LAWN_ADDR", "LAWN_TOKEN"});
    for (const auto& [name, value] : env) child_env.push_back(name + "=" + value);
    std::string error;
    pid_ = Spawn(args, child_env, {out_, err_, /*append=*/false}, &error);
    if (pid_ < 0) ADD_FAILURE() << error;
  }
  ~Lawnctl() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void Signal(int signal) {
    if (pid_ > 0) ::kill(pid_, signal);
  }
  // The exit status, or -1 (and the child killed) if it did not exit within `timeout`.
  int Wait(std::chrono::milliseconds timeout = kWait) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return -1;
  }
  std::string out() const { return ReadAll(out_); }
  std::string err() const { return ReadAll(err_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
};

struct Result {
  int code;
  std::string out;
  std::string err;
};

class LawnctlTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& config_yaml = "") {
    std::vector<std::string> args;
    if (!config_yaml.empty()) args = {"--config", WriteFile(dir_.path() + "/lawn.yaml", config_yaml)};
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", args);
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  // Runs lawnctl against lawnd (--addr first, then `args`) to its exit.
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--addr", lawnd_->address()});
    return RunRaw(std::move(args));
  }
  Result RunRaw(std::vector<std::string> args, const Env& env = {}) {
    Lawnctl child(dir_.path(), std::move(args), env);
    const int code = child.Wait();
    return {code, child.out(), child.err()};
  }
  std::unique_ptr<Lawnctl> Spawn(std::vector<std::string> args) {
    args.insert(args.begin(), {"--addr", lawnd_->address()});
    return std::make_unique<Lawnctl>(dir_.path(), std::move(args));
  }
  // tests/testing/make_certs.sh's throw-away certificates, in a folder of the test's temp dir it returns.
  std::string MakeCerts() {
    const std::string certs = dir_.path() + "/certs";
    const std::string command = std::string("bash ") + LAWN_MAKE_CERTS + " " + certs;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return certs;
  }
  template <typename Message>
  static Message ParseJson(const std::string& line) {
    Message m;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    const auto status = google::protobuf::util::JsonStringToMessage(line, &m, options);
    EXPECT_TRUE(status.ok()) << status.ToString() << ": " << line;
    return m;
  }
  v1::Timer GetTimer(const std::string& ns, const std::string& id) {
    grpc::ClientContext ctx;
    v1::GetTimerRequest r;
    r.set_namespace_(ns);
    r.set_id(id);
    v1::GetTimerResponse resp;
    EXPECT_TRUE(stub_->GetTimer(&ctx, r, &resp).ok()) << id;
    return resp.timer();
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(LawnctlTest, ExitCodesFollowTheStatus) {
  StartLawnd("max_pending_timers: 2\n");
  Result r = Run({"start", "a", "-n", "cli", "--ttl", "1h"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  r = Run({"start", "a", "-n", "cli", "--ttl", "1h"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: ALREADY_EXISTS: ", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = Run({"start", "b", "-n", "cli", "--ttl", "1h", "--replace"});  // Replacing a missing id starts it.
  EXPECT_EQ(r.code, 0) << r.err;
  r = Run({"start", "c", "-n", "cli", "--ttl", "1h"});  // max_pending_timers: 2
  EXPECT_EQ(r.code, 7) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: RESOURCE_EXHAUSTED: ", 0), 0u) << r.err;
  r = Run({"get", "missing", "-n", "cli"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: NOT_FOUND: ", 0), 0u) << r.err;
  r = Run({"reschedule", "missing", "-n", "cli", "--ttl", "1h"});
  EXPECT_EQ(r.code, 3) << r.err;
  r = Run({"start", "x", "-n", "NOT valid", "--ttl", "1h"});  // Bad namespace: lawnd's INVALID_ARGUMENT.
  EXPECT_EQ(r.code, 6) << r.err;
  EXPECT_NE(r.err.find("namespace"), std::string::npos) << r.err;
  r = Run({"delete", "a", "-n", "cli"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = Run({"delete", "a", "-n", "cli"});
  EXPECT_EQ(r.code, 3) << r.err;
  r = Run({"health"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
  r = Run({"health", "--service", "no.such.Service"});
  EXPECT_EQ(r.code, 3) << r.err;
  // Usage errors never reach lawnd.
  r = Run({"start", "x", "--ttl", "5 parsecs"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--ttl"), std::string::npos) << r.err;
  r = Run({"frobnicate"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = Run({"start", "x", "--ttl", "1s", "--deadline", "2030-01-01T00:00:00Z"});
  EXPECT_EQ(r.code, 2) << r.err;
  // Nobody listening: UNAVAILABLE.
  RefusingPort refusing;
  r = RunRaw({"--addr", refusing.address(), "get", "a"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: UNAVAILABLE: ", 0), 0u) << r.err;
  r = RunRaw({"--addr", refusing.address(), "health"});
  EXPECT_EQ(r.code, 5) << r.err;
  // Only the successful calls changed anything.
  EXPECT_EQ(NamespaceStatsOf(*stub_, "cli").pending_timers(), 1u);
}

TEST_F(LawnctlTest, JsonOutputIsTheApisMessagesWithLawndsValues) {
  StartLawnd();
  Result r = Run({"--json", "start", "j1", "-n", "cli", "--ttl", "1h", "--payload", "hi", "--interval", "90s"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
  const v1::Timer started = ParseJson<v1::Timer>(Lines(r.out)[0]);
  const v1::Timer stored = GetTimer("cli", "j1");
  EXPECT_EQ(started.namespace_(), "cli");
  EXPECT_EQ(started.id(), "j1");
  EXPECT_EQ(started.payload(), "hi");
  EXPECT_EQ(started.interval().seconds(), 90);
  EXPECT_EQ(started.ttl().seconds(), 3600);
  EXPECT_EQ(ToNs(started.deadline()), ToNs(stored.deadline()));

  r = Run({"--json", "get", "j1", "-n", "cli"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ToNs(ParseJson<v1::Timer>(Lines(r.out).at(0)).deadline()), ToNs(stored.deadline()));

  // A deadline given in RFC 3339 with an offset lands on that instant, to the nanosecond.
  r = Run({"--json", "start", "j2", "-n", "cli", "--deadline", "2100-01-01T01:00:00.123456789+01:00"});
  ASSERT_EQ(r.code, 0) << r.err;
  const v1::Timer at = ParseJson<v1::Timer>(Lines(r.out).at(0));
  EXPECT_EQ(at.deadline().seconds(), 4102444800);  // 2100-01-01T00:00:00Z
  EXPECT_EQ(at.deadline().nanos(), 123456789);
  EXPECT_EQ(ToNs(GetTimer("cli", "j2").deadline()), ToNs(at.deadline()));

  r = Run({"--json", "reschedule", "j2", "-n", "cli", "--deadline", "2101-01-01T00:00:00Z"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson<v1::Timer>(Lines(r.out).at(0)).deadline().seconds(), 4133980800);

  r = Run({"--json", "list", "-n", "cli"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
  const auto page = ParseJson<v1::ListTimersResponse>(Lines(r.out)[0]);
  ASSERT_EQ(page.timers_size(), 2);
  EXPECT_EQ(page.timers(0).id(), "j1");
  EXPECT_EQ(page.timers(1).id(), "j2");
  EXPECT_TRUE(page.next_page_token().empty());

  r = Run({"--json", "stats"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto stats = ParseJson<v1::GetStatsResponse>(Lines(r.out).at(0));
  EXPECT_EQ(stats.pending_timers(), 2u);
  EXPECT_EQ(stats.shards_size(), 2);

  r = Run({"--json", "health"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson<grpc::health::v1::HealthCheckResponse>(Lines(r.out).at(0)).status(),
            grpc::health::v1::HealthCheckResponse::SERVING);

  r = Run({"--json", "checkpoint", "from-cli"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto checkpoint = ParseJson<v1::CreateCheckpointResponse>(Lines(r.out).at(0));
  EXPECT_NE(checkpoint.path().find("checkpoints/from-cli"), std::string::npos) << checkpoint.path();
  r = Run({"--json", "checkpoint", "from-cli"});  // Name taken.
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: ALREADY_EXISTS: ", 0), 0u) << r.err;

  r = Run({"--json", "delete", "j1", "-n", "cli"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson<v1::Timer>(Lines(r.out).at(0)).payload(), "hi");
}

// subscribe --count N prints N expirations (one JSON object per line), acks those and no more, and exits 0;
// what it did not print goes back to lawnd for the next subscriber.
TEST_F(LawnctlTest, SubscribeAcksWhatItPrintsAndStopsAtCount) {
  StartLawnd();
  std::vector<v1::StartTimerRequest> requests;
  for (int i = 0; i < 5; ++i) requests.push_back(TtlRequest("sub", "s" + std::to_string(i), milliseconds(50), "p"));
  ASSERT_TRUE(StartAll(*stub_, requests));
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "sub").outbox() == 5; }, kWait));
  Result r = Run({"--json", "subscribe", "-n", "sub", "--count", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  std::set<std::string> printed;
  for (const std::string& line : lines) {
    EXPECT_NE(line.find("\"latenessMs\":"), std::string::npos) << line;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;  // latenessMs is lawnctl's own field.
    v1::Expiration e;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &e, options).ok()) << line;
    EXPECT_EQ(e.timer().namespace_(), "sub");
    EXPECT_EQ(e.timer().payload(), "p");
    EXPECT_NE(e.delivery_id(), 0u);
    EXPECT_GE(ToNs(e.fired_at()), ToNs(e.timer().deadline()));
    printed.insert(e.timer().id());
  }
  EXPECT_EQ(printed.size(), 3u);
  // Its three acks reached lawnd; the two it never printed are back, unacked, for the next subscriber.
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "sub").outbox() == 2; }, kWait));
  TestSubscriber next(*stub_, "sub");
  std::vector<v1::Expiration> rest = next.Take(2, kWait);
  ASSERT_EQ(rest.size(), 2u);
  for (const auto& e : rest) EXPECT_EQ(printed.count(e.timer().id()), 0u) << e.timer().id() << " printed and redelivered";

  // Human output: one line per expiration, as the README shows; here over the original one-per-message
  // shape (--max-batch 0), the JSON run above over batches (the default).
  ASSERT_TRUE(StartTtl(*stub_, "human", "hello", milliseconds(50), nullptr, "hi").ok());
  r = Run({"subscribe", "-n", "human", "--count", "1", "--max-batch", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
  EXPECT_EQ(r.out.rfind("hello deadline=", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" attempt=1 payload=hi"), std::string::npos) << r.out;
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "human").outbox() == 0; }, kWait));
}

// A running `subscribe` prints expirations as they fire, acks them, and ends with exit 0 on SIGTERM.
TEST_F(LawnctlTest, SubscribeRunsUntilSigtermAndExitsZero) {
  StartLawnd();
  std::unique_ptr<Lawnctl> sub = Spawn({"--json", "subscribe", "-n", "live"});
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "live").subscribers() == 1; }, kWait));
  ASSERT_TRUE(StartTtl(*stub_, "live", "one", milliseconds(100)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "live", "two", milliseconds(200)).ok());
  ASSERT_TRUE(WaitFor([&] { return Lines(sub->out()).size() == 2; }, kWait)) << sub->out() << sub->err();
  ASSERT_TRUE(WaitFor([&] {
    const v1::NamespaceStats s = NamespaceStatsOf(*stub_, "live");
    return s.pending_timers() == 0 && s.outbox() == 0;
  }, kWait)) << "acks of a running subscribe did not arrive";
  sub->Signal(SIGTERM);
  EXPECT_EQ(sub->Wait(), 0) << sub->err();
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "live").subscribers() == 0; }, kWait));
  // A stream lawnd ends (its drain) is an error for subscribe: UNAVAILABLE, exit 5.
  sub = Spawn({"subscribe", "-n", "live"});
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "live").subscribers() == 1; }, kWait));
  ASSERT_EQ(lawnd_->Stop(SIGTERM), 0);
  EXPECT_EQ(sub->Wait(), 5) << sub->err();
}

// lawnctl against a lawnd with TLS (tests/testing/make_certs.sh's throw-away certificates) and a tokens file:
// --tls-ca and the token get a call through, from --token or $LAWN_TOKEN; without a token lawnd answers
// UNAUTHENTICATED, with one lacking the permission PERMISSION_DENIED (both exit 1); a plaintext lawnctl
// cannot reach the TLS port; a --tls-* file that cannot be read is a usage error (exit 2) naming the file.
TEST_F(LawnctlTest, TlsAndTokenAgainstASecuredLawnd) {
  const std::string certs = MakeCerts();
  constexpr char kToken[] = "cli-token-0123456789";        // Granted start, delete, read in "cli-sec".
  constexpr char kReaderToken[] = "cli-reader-0123456789";  // Granted read in "cli-sec" only.
  const std::string tokens = WriteFile(dir_.path() + "/tokens.yaml", R"(tokens:
  - name: cli
    sha256: 8adad2ac6345574506397da9ca20a2017e5cca355f85240f68d0334d36be3ac2  # sha256 of kToken
    grants:
      - namespaces: ["cli-sec"]
        permissions: [start, delete, read]
  - name: cli-reader
    sha256: 026c21b7663fee4894b66fb8943635a3831b138626e7ee18ecc89b31a02e7f95  # sha256 of kReaderToken
    grants:
      - namespaces: ["cli-sec"]
        permissions: [read]
)");
  lawnd_ = std::make_unique<LawndProcess>(
      dir_.path() + "/data",
      std::vector<std::string>{"--tls-cert-file", certs + "/server.crt", "--tls-key-file",
                               certs + "/server.key", "--auth-tokens-file", tokens});
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadAll(certs + "/ca.crt");
  lawnd_->set_credentials(grpc::SslCredentials(ssl));  // For Start's wait for SERVING.
  lawnd_->Start();
  const std::vector<std::string> tls = {"--addr", lawnd_->address(), "--tls-ca", certs + "/ca.crt"};
  const auto with_tls = [&](std::vector<std::string> args) {
    args.insert(args.begin(), tls.begin(), tls.end());
    return args;
  };
  // Health needs no token.
  Result r = RunRaw(with_tls({"health"}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");

  r = RunRaw(with_tls({"--token", kToken, "start", "a", "-n", "cli-sec", "--ttl", "1h"}));
  EXPECT_EQ(r.code, 0) << r.err;
  r = RunRaw(with_tls({"get", "a", "-n", "cli-sec"}), {{"LAWN_TOKEN", kToken}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cli-sec"), std::string::npos) << r.out;

  r = RunRaw(with_tls({"start", "b", "-n", "cli-sec", "--ttl", "1h"}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: UNAUTHENTICATED: ", 0), 0u) << r.err;
  // An empty --token overrides $LAWN_TOKEN: no token.
  r = RunRaw(with_tls({"--token=", "start", "b", "-n", "cli-sec", "--ttl", "1h"}), {{"LAWN_TOKEN", kToken}});
  EXPECT_EQ(r.err.rfind("lawnctl: UNAUTHENTICATED: ", 0), 0u) << r.err;
  r = RunRaw(with_tls({"--token", kReaderToken, "start", "b", "-n", "cli-sec", "--ttl", "1h"}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: PERMISSION_DENIED: ", 0), 0u) << r.err;

  // By IP with the name in the certificate given explicitly; then a name the certificate does not carry.
  r = RunRaw(with_tls({"--tls-server-name", "localhost", "--token", kToken, "get", "a", "-n", "cli-sec"}));
  EXPECT_EQ(r.code, 0) << r.err;
  r = RunRaw(
      with_tls({"--tls-server-name", "elsewhere.example", "--token", kToken, "get", "a", "-n", "cli-sec"}));
  EXPECT_EQ(r.code, 5) << r.err;
  // Plaintext to the TLS port, and TLS with a CA that did not sign lawnd's certificate: UNAVAILABLE.
  r = RunRaw({"--addr", lawnd_->address(), "--token", kToken, "get", "a", "-n", "cli-sec"});
  EXPECT_EQ(r.code, 5) << r.err;
  r = RunRaw({"--addr", lawnd_->address(), "--tls-ca", certs + "/other-ca.crt", "--token", kToken, "get", "a",
              "-n", "cli-sec"});
  EXPECT_EQ(r.code, 5) << r.err;

  r = RunRaw({"--addr", lawnd_->address(), "--tls-ca", certs + "/missing.crt", "health"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(certs + "/missing.crt"), std::string::npos) << r.err;
  r = RunRaw(with_tls({"--tls-cert", certs + "/client.crt", "health"}));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--tls-key"), std::string::npos) << r.err;

  // Only the granted start went through.
  r = RunRaw(with_tls({"--json", "list", "-n", "cli-sec"}), {{"LAWN_TOKEN", kToken}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson<v1::ListTimersResponse>(Lines(r.out).at(0)).timers_size(), 1) << r.out;
}

// lawnctl with --tls-cert / --tls-key against lawnd with tls.client_ca_file: the certificate's subject is the
// identity (no token needed); without a certificate the handshake fails (UNAVAILABLE, exit 5).
TEST_F(LawnctlTest, MutualTlsClientCertificateIsTheIdentity) {
  const std::string certs = MakeCerts();
  const std::string tokens = WriteFile(dir_.path() + "/tokens.yaml", R"(tokens:
  - name: billing-cert
    subject: billing-client
    grants:
      - namespaces: ["billing"]
        permissions: [start, read]
)");
  lawnd_ = std::make_unique<LawndProcess>(
      dir_.path() + "/data",
      std::vector<std::string>{"--tls-cert-file", certs + "/server.crt", "--tls-key-file",
                               certs + "/server.key", "--tls-client-ca-file", certs + "/ca.crt",
                               "--auth-tokens-file", tokens});
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadAll(certs + "/ca.crt");
  ssl.pem_cert_chain = ReadAll(certs + "/client.crt");
  ssl.pem_private_key = ReadAll(certs + "/client.key");
  lawnd_->set_credentials(grpc::SslCredentials(ssl));
  lawnd_->Start();

  const std::vector<std::string> tls = {"--addr", lawnd_->address(), "--tls-ca", certs + "/ca.crt"};
  const auto with = [&](std::vector<std::string> flags, std::vector<std::string> args) {
    flags.insert(flags.begin(), tls.begin(), tls.end());
    flags.insert(flags.end(), args.begin(), args.end());
    return flags;
  };
  const std::vector<std::string> client_cert = {"--tls-cert", certs + "/client.crt", "--tls-key",
                                                certs + "/client.key"};
  Result r = RunRaw(with(client_cert, {"start", "m", "-n", "billing", "--ttl", "1h"}));
  EXPECT_EQ(r.code, 0) << r.err;
  r = RunRaw(with(client_cert, {"start", "m", "-n", "orders", "--ttl", "1h"}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("lawnctl: PERMISSION_DENIED: ", 0), 0u) << r.err;
  r = RunRaw(with({}, {"get", "m", "-n", "billing"}));
  EXPECT_EQ(r.code, 5) << r.err;
  // A certificate from another CA is no better than none.
  r = RunRaw(with({"--tls-cert", certs + "/other-client.crt", "--tls-key", certs + "/other-client.key"},
                  {"get", "m", "-n", "billing"}));
  EXPECT_EQ(r.code, 5) << r.err;
}

}  // namespace
}  // namespace lawn::testing
