// Small helpers over the generated stub for integration tests: request builders, a Subscribe stream that
// collects expirations on a reader thread, and grpc.health.v1 Check / Watch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn::testing {

int64_t WallNowNs();
int64_t ToNs(const google::protobuf::Timestamp& t);
v1::StartTimerRequest TtlRequest(const std::string& ns, const std::string& id, std::chrono::milliseconds ttl,
                                 const std::string& payload = "");
grpc::Status StartTtl(v1::TimerService::Stub& stub, const std::string& ns, const std::string& id,
                      std::chrono::milliseconds ttl, v1::Timer* out = nullptr, const std::string& payload = "");
grpc::Status Call(v1::TimerService::Stub& stub, const v1::StartTimerRequest& request, v1::Timer* out = nullptr);
// Starts timers of 60,000 random (incompressible: RocksDB compresses SSTs) bytes, an hour out, in namespace
// `ns` until lawnd refuses one or 5000 were taken; returns the last answer (RESOURCE_EXHAUSTED once a small
// disk's free-space guard refuses) and adds the ids taken to `taken` if given. For the full-disk tests.
grpc::Status FillUntilRefused(v1::TimerService::Stub& stub, const std::string& ns, uint64_t seed,
                              std::vector<std::string>* taken = nullptr);

// A request starting a timer at the absolute wall-clock `deadline_ns` (may be negative: before 1970).
v1::StartTimerRequest DeadlineRequest(const std::string& ns, const std::string& id, int64_t deadline_ns,
                                      const std::string& payload = "");
void SetTimestampNs(int64_t ns, google::protobuf::Timestamp* out);
// Starts `requests` with StartTimers in calls of at most 10,000; returns false (with a test failure) if any
// call or item failed.
bool StartAll(v1::TimerService::Stub& stub, const std::vector<v1::StartTimerRequest>& requests);
// GetTimer of `ns`/`id` into `out` (cleared if there is none).
grpc::Status GetTimer(v1::TimerService::Stub& stub, const std::string& ns, const std::string& id, v1::Timer* out);
// GetStats of one namespace (empty stats if lawnd does not know it).
// GetStats (10 s deadline); a failed call is a test failure and an empty response.
v1::GetStatsResponse StatsOf(v1::TimerService::Stub& stub);
v1::NamespaceStats NamespaceStatsOf(v1::TimerService::Stub& stub, const std::string& ns);

using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;
// grpc.health.v1.Health/Check of `service`; nullopt if the call failed (e.g. nobody listens).
std::optional<ServingStatus> CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                         const std::string& service = "");

// A grpc.health.v1.Health/Watch stream that records every status lawnd pushes, on a reader thread.
class HealthWatch {
 public:
  HealthWatch(const std::shared_ptr<grpc::Channel>& channel, const std::string& service = "");
  ~HealthWatch();
  // Waits until `status` has been received (at any time since the watch began) or `timeout` passes.
  bool WaitFor(ServingStatus status, std::chrono::milliseconds timeout);
  // Waits for the stream to end; returns its status.
  std::optional<grpc::Status> WaitEnd(std::chrono::milliseconds timeout);
  std::vector<ServingStatus> seen();

 private:
  std::unique_ptr<grpc::health::v1::Health::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<grpc::health::v1::HealthCheckResponse>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ServingStatus> seen_;
  std::optional<grpc::Status> final_;
};

// A Subscribe stream read on a thread of its own; expirations queue until taken. `max_batch` is
// open.max_batch: 0 asks for the original one-per-response shape, N > 0 for batches of up to N.
class TestSubscriber {
 public:
  TestSubscriber(v1::TimerService::Stub& stub, const std::string& ns, uint32_t max_in_flight = 100,
                 bool observe = false, uint32_t max_batch = 0);
  ~TestSubscriber();
  // The next expiration received (within `timeout`), or nullopt.
  std::optional<v1::Expiration> Next(std::chrono::milliseconds timeout);
  // All received within `window`.
  std::vector<v1::Expiration> Drain(std::chrono::milliseconds window);
  // Exactly `n` expirations, waiting at most `timeout` for them all; fewer if the time ran out.
  std::vector<v1::Expiration> Take(size_t n, std::chrono::milliseconds timeout);
  // Expirations received and not yet taken (does not wait).
  size_t queued();
  bool Ack(const std::vector<uint64_t>& ids);
  bool Ack(uint64_t id) { return Ack(std::vector<uint64_t>{id}); }
  // Half-closes and returns the final status (waits at most `timeout`).
  grpc::Status Close(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits for the server to end the stream; returns its status.
  std::optional<grpc::Status> WaitEnd(std::chrono::milliseconds timeout);

  // The shape of the responses read so far: how many expirations each batched one (`expirations`) held, in
  // order, and how many carried a single `expiration` instead. A response with both or neither counts in
  // malformed_responses.
  std::vector<size_t> batch_sizes();
  size_t single_responses();
  size_t malformed_responses();

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SubscribeRequest, v1::SubscribeResponse>> stream_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::Expiration> received_;
  std::vector<size_t> batch_sizes_;
  size_t single_responses_ = 0;
  size_t malformed_responses_ = 0;
  bool ended_ = false;
  std::mutex write_mu_;
  bool closed_ = false;
  std::optional<grpc::Status> final_;
};

}  // namespace lawn::testing
