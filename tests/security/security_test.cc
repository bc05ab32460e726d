// Tokens and grants against the real lawnd (plaintext on loopback; TLS is tls_test.cc): every permission
// against every RPC, unauthenticated calls, what a denied caller can learn, GetStats filtering, the tokens
// file's reload, start rate limits and the audit log.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "tests/integration/lawnd_process.h"
#include "tests/security/security_fixture.h"

namespace lawn::testing {
namespace {

using grpc::StatusCode;

// One identity per permission on namespace "billing", plus a few with wider or other grants.
const std::vector<std::string> kPermissions = {"start", "delete", "read", "subscribe", "observe"};

std::string TokenOf(const std::string& name) { return "token-of-" + name; }

std::string TokensYaml() {
  std::string yaml = "tokens:\n";
  auto entry = [&yaml](const std::string& name, const std::string& namespaces, const std::string& permissions) {
    yaml += "  - name: " + name + "\n    sha256: " + Sha256Hex(TokenOf(name)) + "\n    grants:\n";
    if (!permissions.empty()) {
      yaml += "      - namespaces: " + namespaces + "\n        permissions: " + permissions + "\n";
    } else {
      yaml.replace(yaml.size() - 1, 1, " []\n");
    }
  };
  for (const std::string& p : kPermissions) entry(p, "[billing]", "[" + p + "]");
  entry("admin", "[\"*\"]", "[admin]");
  entry("billing-all", "[billing, \"billing-*\"]", "[start, delete, read, subscribe, observe]");
  entry("nothing", "", "");
  return yaml;
}

class SecurityTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& extra_yaml = "") {
    tokens_ = WriteFile(dir_.path() + "/tokens.yaml", TokensYaml());
    const std::string config = WriteFile(dir_.path() + "/lawn.yaml", "auth:\n  tokens_file: " + tokens_ + "\n" + extra_yaml);
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data",
                                            std::vector<std::string>{"--config", config, "--durability", "memory",
                                                                     "--metrics-listen", "127.0.0.1:0"});
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }

  grpc::Status Start(const std::string& token, const std::string& ns, const std::string& id) {
    v1::StartTimerRequest request;
    request.set_namespace_(ns);
    request.set_id(id);
    request.mutable_ttl()->set_seconds(3600);
    v1::StartTimerResponse response;
    return stub_->StartTimer(Context(token).get(), request, &response);
  }

  // The status a Subscribe stream ends with within `wait`, or DEADLINE_EXCEEDED if it stays open (allowed).
  grpc::Status Subscribe(const std::string& token, const std::string& ns, bool observe,
                         std::chrono::milliseconds wait = std::chrono::seconds(3)) {
    auto context = Context(token, wait);
    auto stream = stub_->Subscribe(context.get());
    v1::SubscribeRequest open;
    open.mutable_open()->set_namespace_(ns);
    open.mutable_open()->set_observe(observe);
    stream->Write(open);
    v1::SubscribeResponse response;
    while (stream->Read(&response)) {
    }
    return stream->Finish();
  }

  grpc::Status Call(const std::string& method, const std::string& token, const std::string& ns) {
    const std::string id = "t1";
    if (method == "StartTimer") return Start(token, ns, "new-" + token);
    if (method == "StartTimers") {
      v1::StartTimersRequest request;
      v1::StartTimerRequest* item = request.add_timers();
      item->set_namespace_(ns);
      item->set_id("batch-" + token);
      item->mutable_ttl()->set_seconds(3600);
      v1::StartTimersResponse response;
      grpc::Status s = stub_->StartTimers(Context(token).get(), request, &response);
      if (!s.ok() || response.results_size() != 1) return s;
      return grpc::Status(static_cast<StatusCode>(response.results(0).code()), response.results(0).message());
    }
    if (method == "DeleteTimer") {
      v1::DeleteTimerRequest request;
      request.set_namespace_(ns);
      request.set_id("absent");
      v1::DeleteTimerResponse response;
      return stub_->DeleteTimer(Context(token).get(), request, &response);
    }
    if (method == "RescheduleTimer") {
      v1::RescheduleTimerRequest request;
      request.set_namespace_(ns);
      request.set_id("absent");
      request.mutable_ttl()->set_seconds(10);
      v1::RescheduleTimerResponse response;
      return stub_->RescheduleTimer(Context(token).get(), request, &response);
    }
    if (method == "GetTimer") {
      v1::GetTimerRequest request;
      request.set_namespace_(ns);
      request.set_id(id);
      v1::GetTimerResponse response;
      return stub_->GetTimer(Context(token).get(), request, &response);
    }
    if (method == "ListTimers") {
      v1::ListTimersRequest request;
      request.set_namespace_(ns);
      v1::ListTimersResponse response;
      return stub_->ListTimers(Context(token).get(), request, &response);
    }
    if (method == "Subscribe") return Subscribe(token, ns, false);
    if (method == "Observe") return Subscribe(token, ns, true);
    if (method == "GetStats") {
      v1::GetStatsResponse response;
      return stub_->GetStats(Context(token).get(), v1::GetStatsRequest(), &response);
    }
    if (method == "CreateCheckpoint") {
      auto admin = v1::AdminService::NewStub(lawnd_->channel());
      v1::CreateCheckpointResponse response;
      return admin->CreateCheckpoint(Context(token).get(), v1::CreateCheckpointRequest(), &response);
    }
    if (method == "SetTick") {
      auto admin = v1::AdminService::NewStub(lawnd_->channel());
      v1::SetTickResponse response;
      return admin->SetTick(Context(token).get(), v1::SetTickRequest(), &response);
    }
    ADD_FAILURE() << "unknown method " << method;
    return grpc::Status::OK;
  }

  TempDir dir_;
  std::string tokens_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

// The permission each call needs (GetStats needs none: it shows what the caller may read), and what an
// allowed call answers here (timer t1 exists in billing; deletes target an absent id; a Subscribe stream
// stays open until its deadline; memory durability has no store to checkpoint; an empty tick is invalid).
struct CallCase {
  std::string method;
  std::string needed;
  StatusCode allowed;
};
const std::vector<CallCase> kCalls = {
    {"StartTimer", "start", StatusCode::OK},
    {"StartTimers", "start", StatusCode::OK},
    {"DeleteTimer", "delete", StatusCode::NOT_FOUND},
    {"RescheduleTimer", "delete", StatusCode::NOT_FOUND},
    {"GetTimer", "read", StatusCode::OK},
    {"ListTimers", "read", StatusCode::OK},
    {"Subscribe", "subscribe", StatusCode::DEADLINE_EXCEEDED},
    {"Observe", "observe", StatusCode::DEADLINE_EXCEEDED},
    {"CreateCheckpoint", "admin", StatusCode::FAILED_PRECONDITION},
    {"SetTick", "admin", StatusCode::INVALID_ARGUMENT},
};

TEST_F(SecurityTest, EveryPermissionAgainstEveryCall) {
  StartLawnd();
  ASSERT_TRUE(Start(TokenOf("billing-all"), "billing", "t1").ok());
  std::vector<std::string> identities = kPermissions;
  identities.push_back("admin");
  identities.push_back("nothing");
  for (const auto& [method, needed, allowed_code] : kCalls) {
    for (const std::string& who : identities) {
      for (const std::string ns : {"billing", "other"}) {
        const grpc::Status s = Call(method, TokenOf(who), ns);
        // admin is server-wide and grants only AdminService (and every namespace in GetStats).
        const bool allowed = who == needed && (ns == "billing" || needed == "admin");
        SCOPED_TRACE(method + " by " + who + " on " + ns + ": " + std::to_string(s.error_code()) + " " +
                     s.error_message());
        if (allowed) {
          EXPECT_EQ(s.error_code(), allowed_code);
        } else {
          EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
          EXPECT_NE(s.error_message().find("'" + who + "' has no " + needed + " permission"), std::string::npos);
        }
      }
    }
  }
  // The widest grant: billing and billing-* but nothing else, and never admin.
  EXPECT_TRUE(Call("ListTimers", TokenOf("billing-all"), "billing-eu").ok());
  EXPECT_EQ(Call("ListTimers", TokenOf("billing-all"), "billingx").error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Call("CreateCheckpoint", TokenOf("billing-all"), "").error_code(), StatusCode::PERMISSION_DENIED);
}

TEST_F(SecurityTest, NoOrUnknownTokenIsUnauthenticatedHealthAndReflectionStayOpen) {
  StartLawnd();
  for (const auto& [method, needed, allowed_code] : kCalls) {
    for (const std::string token : {"", "not-a-known-token"}) {
      const grpc::Status s = Call(method, token, "billing");
      EXPECT_EQ(s.error_code(), StatusCode::UNAUTHENTICATED) << method << " with '" << token << "': " << s.error_message();
    }
  }
  EXPECT_EQ(Call("GetStats", "", "").error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(HealthCall(lawnd_->channel()), StatusCode::OK);
  // A malformed authorization header is no token at all.
  auto context = Context("");
  context->AddMetadata("authorization", "Basic " + TokenOf("admin"));
  v1::GetStatsResponse stats;
  EXPECT_EQ(stub_->GetStats(context.get(), v1::GetStatsRequest(), &stats).error_code(), StatusCode::UNAUTHENTICATED);
}

TEST_F(SecurityTest, DeniedCallersLearnNothingAndLeaveNoTrace) {
  // A limit on every namespace: a denied start must not reach the limiter either (no bucket, no series).
  StartLawnd("rate_limits:\n  - namespaces: [\"*\"]\n    starts_per_second: 1000\n");
  ASSERT_TRUE(Start(TokenOf("billing-all"), "billing", "exists").ok());
  // Same answer whether the timer exists or not.
  v1::GetTimerRequest get;
  get.set_namespace_("billing");
  v1::GetTimerResponse got;
  get.set_id("exists");
  const grpc::Status a = stub_->GetTimer(Context(TokenOf("start")).get(), get, &got);
  get.set_id("absent");
  const grpc::Status b = stub_->GetTimer(Context(TokenOf("start")).get(), get, &got);
  EXPECT_EQ(a.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(a.error_code(), b.error_code());
  EXPECT_EQ(a.error_message(), b.error_message());
  // Denied starts into other namespaces create nothing: no timer, no namespace in the admin's stats.
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Start(TokenOf("start"), "secret-" + std::to_string(i), "x").error_code(), StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(Start("", "secret-" + std::to_string(i), "x").error_code(), StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(Subscribe(TokenOf("start"), "secret-x", false).error_code(), StatusCode::PERMISSION_DENIED);
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub_->GetStats(Context(TokenOf("admin")).get(), v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.pending_timers(), 1u);
  for (const auto& n : stats.namespaces()) EXPECT_EQ(n.namespace_().rfind("secret", 0), std::string::npos) << n.namespace_();
  // Nor in the metrics: no series names a namespace a denied caller tried.
  const std::string metrics = HttpGet(MetricsPortFromLog(lawnd_->Log()), "/metrics");
  ASSERT_NE(metrics.find("lawn_auth_denials_total"), std::string::npos);
  EXPECT_EQ(metrics.find("secret"), std::string::npos) << metrics;
}

TEST_F(SecurityTest, GetStatsShowsOnlyReadableNamespaces) {
  StartLawnd();
  ASSERT_TRUE(Start(TokenOf("billing-all"), "billing", "a").ok());
  ASSERT_TRUE(Start(TokenOf("billing-all"), "billing-eu", "b").ok());
  ASSERT_TRUE(Start(TokenOf("billing-all"), "billing-eu", "c").ok());
  v1::GetStatsResponse admin;
  ASSERT_TRUE(stub_->GetStats(Context(TokenOf("admin")).get(), v1::GetStatsRequest(), &admin).ok());
  EXPECT_EQ(admin.pending_timers(), 3u);
  EXPECT_EQ(admin.namespaces_size(), 2);
  EXPECT_GT(admin.shards_size(), 0);
  v1::GetStatsResponse reader;
  ASSERT_TRUE(stub_->GetStats(Context(TokenOf("read")).get(), v1::GetStatsRequest(), &reader).ok());
  ASSERT_EQ(reader.namespaces_size(), 1);
  EXPECT_EQ(reader.namespaces(0).namespace_(), "billing");
  EXPECT_EQ(reader.pending_timers(), 1u);  // Totals over what it may see.
  EXPECT_EQ(reader.shards_size(), 0);      // Per-shard figures count every namespace: admin only.
  v1::GetStatsResponse nothing;
  ASSERT_TRUE(stub_->GetStats(Context(TokenOf("nothing")).get(), v1::GetStatsRequest(), &nothing).ok());
  EXPECT_EQ(nothing.namespaces_size(), 0);
  EXPECT_EQ(nothing.pending_timers(), 0u);
}

TEST_F(SecurityTest, StartTimersChecksEachItem) {
  StartLawnd();
  v1::StartTimersRequest request;
  for (const std::string ns : {"billing", "other", "billing"}) {
    v1::StartTimerRequest* item = request.add_timers();
    item->set_namespace_(ns);
    item->set_id("id-" + std::to_string(request.timers_size()));
    item->mutable_ttl()->set_seconds(60);
  }
  v1::StartTimersResponse response;
  const grpc::Status s = stub_->StartTimers(Context(TokenOf("start")).get(), request, &response);
  ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message() << "\nlawnd log:\n" << lawnd_->Log();
  ASSERT_EQ(response.results_size(), 3);
  EXPECT_EQ(response.results(0).code(), 0);
  EXPECT_EQ(response.results(1).code(), static_cast<int>(StatusCode::PERMISSION_DENIED));
  EXPECT_FALSE(response.results(1).has_timer());
  EXPECT_EQ(response.results(2).code(), 0);
}

TEST_F(SecurityTest, TokensFileReloadsWithoutRestartAndKeepsTheOldOneOnABadReload) {
  StartLawnd();
  ASSERT_TRUE(Call("ListTimers", TokenOf("read"), "billing").ok());
  // Revoke: rewrite the file without the reader's entry.
  std::string yaml = TokensYaml();
  const size_t begin = yaml.find("  - name: read\n");
  const size_t end = yaml.find("  - name: ", begin + 1);
  const std::string revoked = yaml.substr(0, begin) + yaml.substr(end);
  const std::string tmp = tokens_ + ".tmp";
  WriteFile(tmp, revoked);
  ASSERT_EQ(std::rename(tmp.c_str(), tokens_.c_str()), 0);  // Atomic, like a Kubernetes Secret update.
  EXPECT_TRUE(WaitFor([&] { return Call("ListTimers", TokenOf("read"), "billing").error_code() == StatusCode::UNAUTHENTICATED; },
                      std::chrono::seconds(20)));
  // Grant again.
  WriteFile(tmp, yaml);
  ASSERT_EQ(std::rename(tmp.c_str(), tokens_.c_str()), 0);
  EXPECT_TRUE(WaitFor([&] { return Call("ListTimers", TokenOf("read"), "billing").ok(); }, std::chrono::seconds(20)));
  // A broken file is not applied: the last good one stays, and the log says why.
  WriteFile(tmp, "tokens:\n  - name: x\n    sha256: nothex\n");
  ASSERT_EQ(std::rename(tmp.c_str(), tokens_.c_str()), 0);
  EXPECT_TRUE(WaitFor([&] { return lawnd_->Log().find("keeping the previous one") != std::string::npos; },
                      std::chrono::seconds(20)));
  EXPECT_TRUE(Call("ListTimers", TokenOf("read"), "billing").ok());
}

TEST_F(SecurityTest, RevokingATokenEndsTheStreamsItOpened) {
  StartLawnd();
  auto context = Context(TokenOf("subscribe"), std::chrono::seconds(60));
  auto stream = stub_->Subscribe(context.get());
  v1::SubscribeRequest open;
  open.mutable_open()->set_namespace_("billing");
  ASSERT_TRUE(stream->Write(open));
  // Open: a timer due now reaches it.
  v1::StartTimerRequest start;
  start.set_namespace_("billing");
  start.set_id("due");
  start.mutable_ttl()->set_nanos(1'000'000);
  v1::StartTimerResponse started;
  ASSERT_TRUE(stub_->StartTimer(Context(TokenOf("start")).get(), start, &started).ok());
  v1::SubscribeResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.expiration().timer().id(), "due");
  // Revoke the subscriber's token: the stream ends without a restart, UNAUTHENTICATED.
  std::string yaml = TokensYaml();
  const size_t begin = yaml.find("  - name: subscribe\n");
  const size_t end = yaml.find("  - name: ", begin + 1);
  WriteFile(tokens_ + ".tmp", yaml.substr(0, begin) + yaml.substr(end));
  ASSERT_EQ(std::rename((tokens_ + ".tmp").c_str(), tokens_.c_str()), 0);
  while (stream->Read(&response)) {
  }
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), StatusCode::UNAUTHENTICATED) << ended.error_message();
  EXPECT_NE(ended.error_message().find("removed from the tokens file"), std::string::npos) << ended.error_message();
}

TEST_F(SecurityTest, StartRateLimitPerNamespace) {
  StartLawnd("rate_limits:\n  - namespaces: [\"billing*\"]\n    starts_per_second: 0.01\n    burst: 3\n");
  const std::string token = TokenOf("billing-all");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Start(token, "billing", "r" + std::to_string(i)).ok()) << i;
  const grpc::Status refused = Start(token, "billing", "r3");
  EXPECT_EQ(refused.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("rate limit"), std::string::npos) << refused.error_message();
  EXPECT_NE(refused.error_message().find("burst 3"), std::string::npos) << refused.error_message();
  // Each namespace has its own bucket.
  EXPECT_TRUE(Start(token, "billing-eu", "r0").ok());
  // Batches take one token per item.
  v1::StartTimersRequest batch;
  for (int i = 0; i < 4; ++i) {
    v1::StartTimerRequest* item = batch.add_timers();
    item->set_namespace_("billing-us");
    item->set_id("b" + std::to_string(i));
    item->mutable_ttl()->set_seconds(60);
  }
  v1::StartTimersResponse response;
  ASSERT_TRUE(stub_->StartTimers(Context(token).get(), batch, &response).ok());
  int limited = 0;
  for (const auto& r : response.results()) {
    limited += r.code() == static_cast<int>(StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_EQ(limited, 1);
  const int metrics_port = MetricsPortFromLog(lawnd_->Log());
  ASSERT_GT(metrics_port, 0);
  const std::string metrics = HttpGet(metrics_port, "/metrics");
  EXPECT_EQ(MetricSample(metrics, R"(lawn_rate_limited_total\{namespace="billing"\})"), 1);
  EXPECT_EQ(MetricSample(metrics, R"(lawn_rate_limited_total\{namespace="billing-us"\})"), 1);
}

TEST_F(SecurityTest, DenialsAreAuditedCountedAndRateLimitedInTheLog) {
  StartLawnd();
  // Admin calls are audited when allowed too.
  Call("CreateCheckpoint", TokenOf("admin"), "");
  EXPECT_TRUE(WaitFor([&] {
    return lawnd_->Log().find("audit: identity=admin method=CreateCheckpoint namespace=- outcome=ALLOWED") !=
           std::string::npos;
  }));
  ASSERT_EQ(Call("DeleteTimer", TokenOf("read"), "billing").error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(lawnd_->Log().find("audit: identity=read method=DeleteTimer namespace=billing outcome=PERMISSION_DENIED"),
            std::string::npos);
  // A flood of denials: at most the audit budget reaches the log, the rest is summed up in one line.
  constexpr int kFlood = 2000;
  for (int i = 0; i < kFlood; ++i) ASSERT_EQ(Call("GetTimer", "bad-token", "billing").error_code(), StatusCode::UNAUTHENTICATED);
  ASSERT_EQ(Call("GetTimer", TokenOf("start"), "billing").error_code(), StatusCode::PERMISSION_DENIED);
  const std::string log = lawnd_->Log();
  size_t audit_lines = 0;
  for (size_t at = log.find("audit: identity="); at != std::string::npos; at = log.find("audit: identity=", at + 1)) {
    ++audit_lines;
  }
  // 100 at once plus 20/s: below 1000 unless the 2000 calls took over 45 s (they take about one here).
  EXPECT_LT(audit_lines, 1000u);
  EXPECT_NE(log.find("lines dropped"), std::string::npos);
  const std::string metrics = HttpGet(MetricsPortFromLog(log), "/metrics");
  EXPECT_GE(MetricSample(metrics, R"(lawn_auth_denials_total\{reason="unauthenticated"\})"), kFlood);
  EXPECT_GE(MetricSample(metrics, R"(lawn_auth_denials_total\{reason="permission_denied"\})"), 2);
}

TEST_F(SecurityTest, BadTokensFileStopsLawnd) {
  const std::string tokens = WriteFile(dir_.path() + "/bad.yaml", "tokens:\n  - name: a\n    grants: []\n");
  LawndProcess lawnd(dir_.path() + "/data", {"--auth-tokens-file", tokens, "--durability", "memory"});
  EXPECT_EQ(lawnd.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(lawnd.Log().find("give exactly one of sha256"), std::string::npos) << lawnd.Log();
  LawndProcess missing(dir_.path() + "/data", {"--auth-tokens-file", dir_.path() + "/none.yaml", "--durability", "memory"});
  EXPECT_EQ(missing.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(missing.Log().find("tokens file does not exist"), std::string::npos) << missing.Log();
}

}  // namespace
}  // namespace lawn::testing
