#include "tests/integration/test_client.h"

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

TestSubscriber::TestSubscriber(v1::TimerService::Stub& stub, const std::string& ns, uint32_t max_in_flight,
                               bool observe) {
  stream_ = stub.Subscribe(&ctx_);
  v1::SubscribeRequest open;
  open.mutable_open()->set_namespace_(ns);
  open.mutable_open()->set_max_in_flight(max_in_flight);
  open.mutable_open()->set_observe(observe);
  stream_->Write(open);
  reader_ = std::thread([this] {
    v1::SubscribeResponse r;
    while (stream_->Read(&r)) {
      std::lock_guard lock(mu_);
      received_.push_back(r.expiration());
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

std::optional<grpc::Status> TestSubscriber::WaitEnd(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return ended_; });
  return final_;
}

}  // namespace lawn::testing
