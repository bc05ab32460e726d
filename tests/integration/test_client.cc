#include "tests/integration/test_client.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace lawn::testing {

int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t ToNs(const google::protobuf::Timestamp& t) { return t.seconds() * 1'000'000'000LL + t.nanos(); }

v1::StartTimerRequest TtlRequest(const std::string& ns, const std::string& id, std::chrono::milliseconds ttl,
                                 const std::string& payload) {
  v1::StartTimerRequest r;
  r.set_namespace_(ns);
  r.set_id(id);
  r.mutable_ttl()->set_seconds(ttl.count() / 1000);
  r.mutable_ttl()->set_nanos(static_cast<int32_t>(ttl.count() % 1000) * 1'000'000);
  r.set_payload(payload);
  return r;
}

grpc::Status GetTimer(v1::TimerService::Stub& stub, const std::string& ns, const std::string& id, v1::Timer* out) {
  grpc::ClientContext ctx;
  v1::GetTimerRequest r;
  r.set_namespace_(ns);
  r.set_id(id);
  v1::GetTimerResponse resp;
  grpc::Status s = stub.GetTimer(&ctx, r, &resp);
  *out = resp.timer();
  return s;
}

grpc::Status Call(v1::TimerService::Stub& stub, const v1::StartTimerRequest& request, v1::Timer* out) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::StartTimerResponse response;
  grpc::Status s = stub.StartTimer(&ctx, request, &response);
  if (out != nullptr) *out = response.timer();
  return s;
}

grpc::Status StartTtl(v1::TimerService::Stub& stub, const std::string& ns, const std::string& id,
                      std::chrono::milliseconds ttl, v1::Timer* out, const std::string& payload) {
  return Call(stub, TtlRequest(ns, id, ttl, payload), out);
}

grpc::Status FillUntilRefused(v1::TimerService::Stub& stub, const std::string& ns, uint64_t seed,
                              std::vector<std::string>* taken) {
  std::mt19937_64 rng(seed);
  std::string payload(60'000, '\0');
  grpc::Status status;
  for (int i = 0; i < 5000 && status.ok(); ++i) {
    for (char& c : payload) c = static_cast<char>(rng());
    const std::string id = "big" + std::to_string(i);
    status = StartTtl(stub, ns, id, std::chrono::hours(1), nullptr, payload);
    if (status.ok() && taken != nullptr) taken->push_back(id);
  }
  return status;
}

void SetTimestampNs(int64_t ns, google::protobuf::Timestamp* out) {
  int64_t seconds = ns / 1'000'000'000;
  int64_t nanos = ns % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    --seconds;
  }
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(nanos));
}

v1::StartTimerRequest DeadlineRequest(const std::string& ns, const std::string& id, int64_t deadline_ns,
                                      const std::string& payload) {
  v1::StartTimerRequest r;
  r.set_namespace_(ns);
  r.set_id(id);
  SetTimestampNs(deadline_ns, r.mutable_deadline());
  r.set_payload(payload);
  return r;
}

bool StartAll(v1::TimerService::Stub& stub, const std::vector<v1::StartTimerRequest>& requests) {
  constexpr size_t kBatch = 10'000;
  for (size_t i = 0; i < requests.size(); i += kBatch) {
    v1::StartTimersRequest batch;
    for (size_t j = i; j < std::min(requests.size(), i + kBatch); ++j) *batch.add_timers() = requests[j];
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::StartTimersResponse resp;
    const grpc::Status s = stub.StartTimers(&ctx, batch, &resp);
    if (!s.ok()) {
      ADD_FAILURE() << "StartTimers: " << s.error_code() << " " << s.error_message();
      return false;
    }
    for (const v1::StartTimerResult& r : resp.results()) {
      if (r.code() != 0) {
        ADD_FAILURE() << "StartTimers item: " << r.code() << " " << r.message();
        return false;
      }
    }
  }
  return true;
}

v1::GetStatsResponse StatsOf(v1::TimerService::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetStatsResponse resp;
  const grpc::Status s = stub.GetStats(&ctx, v1::GetStatsRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

v1::NamespaceStats NamespaceStatsOf(v1::TimerService::Stub& stub, const std::string& ns) {
  const v1::GetStatsResponse resp = StatsOf(stub);
  for (const auto& n : resp.namespaces()) {
    if (n.namespace_() == ns) return n;
  }
  return v1::NamespaceStats();
}

std::optional<ServingStatus> CheckHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  if (!stub->Check(&ctx, request, &response).ok()) return std::nullopt;
  return response.status();
}

HealthWatch::HealthWatch(const std::shared_ptr<grpc::Channel>& channel, const std::string& service)
    : stub_(grpc::health::v1::Health::NewStub(channel)) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  reader_ = stub_->Watch(&ctx_, request);
  thread_ = std::thread([this] {
    grpc::health::v1::HealthCheckResponse r;
    while (reader_->Read(&r)) {
      std::lock_guard lock(mu_);
      seen_.push_back(r.status());
      cv_.notify_all();
    }
    grpc::Status s = reader_->Finish();
    std::lock_guard lock(mu_);
    final_ = s;
    cv_.notify_all();
  });
}

HealthWatch::~HealthWatch() {
  ctx_.TryCancel();
  if (thread_.joinable()) thread_.join();
}

bool HealthWatch::WaitFor(ServingStatus status, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    return std::find(seen_.begin(), seen_.end(), status) != seen_.end() || final_.has_value();
  }) && std::find(seen_.begin(), seen_.end(), status) != seen_.end();
}

std::optional<grpc::Status> HealthWatch::WaitEnd(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return final_.has_value(); });
  return final_;
}

std::vector<ServingStatus> HealthWatch::seen() {
  std::lock_guard lock(mu_);
  return seen_;
}

TestSubscriber::TestSubscriber(v1::TimerService::Stub& stub, const std::string& ns, uint32_t max_in_flight,
                               bool observe, uint32_t max_batch) {
  stream_ = stub.Subscribe(&ctx_);
  v1::SubscribeRequest open;
  open.mutable_open()->set_namespace_(ns);
  open.mutable_open()->set_max_in_flight(max_in_flight);
  open.mutable_open()->set_observe(observe);
  open.mutable_open()->set_max_batch(max_batch);
  stream_->Write(open);
  reader_ = std::thread([this] {
    v1::SubscribeResponse r;
    while (stream_->Read(&r)) {
      std::lock_guard lock(mu_);
      if (r.has_expiration() == (r.expirations_size() > 0)) ++malformed_responses_;
      if (r.expirations_size() > 0) {
        batch_sizes_.push_back(static_cast<size_t>(r.expirations_size()));
        for (const v1::Expiration& e : r.expirations()) received_.push_back(e);
      } else {
        ++single_responses_;
        received_.push_back(r.expiration());
      }
      cv_.notify_all();
    }
    grpc::Status s = stream_->Finish();
    std::lock_guard lock(mu_);
    ended_ = true;
    final_ = s;
    cv_.notify_all();
  });
}

TestSubscriber::~TestSubscriber() {
  ctx_.TryCancel();
  if (reader_.joinable()) reader_.join();
}

std::optional<v1::Expiration> TestSubscriber::Next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return !received_.empty() || ended_; });
  if (received_.empty()) return std::nullopt;
  v1::Expiration e = received_.front();
  received_.pop_front();
  return e;
}

std::vector<v1::Expiration> TestSubscriber::Drain(std::chrono::milliseconds window) {
  std::vector<v1::Expiration> out;
  const auto deadline = std::chrono::steady_clock::now() + window;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::optional<v1::Expiration> e = Next(left);
    if (!e) break;
    out.push_back(*e);
  }
  return out;
}

std::vector<v1::Expiration> TestSubscriber::Take(size_t n, std::chrono::milliseconds timeout) {
  std::vector<v1::Expiration> out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::optional<v1::Expiration> e = Next(left);
    if (!e) break;
    out.push_back(*e);
  }
  return out;
}

size_t TestSubscriber::queued() {
  std::lock_guard lock(mu_);
  return received_.size();
}

bool TestSubscriber::Ack(const std::vector<uint64_t>& ids) {
  v1::SubscribeRequest r;
  for (uint64_t id : ids) r.mutable_ack()->add_delivery_ids(id);
  std::lock_guard lock(write_mu_);
  if (closed_) return false;
  return stream_->Write(r);
}

grpc::Status TestSubscriber::Close(std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(write_mu_);
    if (!closed_) stream_->WritesDone();
    closed_ = true;
  }
  std::optional<grpc::Status> s = WaitEnd(timeout);
  return s ? *s : grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "stream did not end");
}

std::vector<size_t> TestSubscriber::batch_sizes() {
  std::lock_guard lock(mu_);
  return batch_sizes_;
}

size_t TestSubscriber::single_responses() {
  std::lock_guard lock(mu_);
  return single_responses_;
}

size_t TestSubscriber::malformed_responses() {
  std::lock_guard lock(mu_);
  return malformed_responses_;
}

std::optional<grpc::Status> TestSubscriber::WaitEnd(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return ended_; });
  return final_;
}

}  // namespace lawn::testing
