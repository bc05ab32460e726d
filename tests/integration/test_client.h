// Small helpers over the generated stub for integration tests: request builders and a Subscribe stream
// that collects expirations on a reader thread.
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

class TestSubscriber {
 public:
  TestSubscriber(v1::TimerService::Stub& stub, const std::string& ns, uint32_t max_in_flight = 100,
                 bool observe = false);
  ~TestSubscriber();
  // The next expiration received (within `timeout`), or nullopt.
  std::optional<v1::Expiration> Next(std::chrono::milliseconds timeout);
  // All received within `window`.
  std::vector<v1::Expiration> Drain(std::chrono::milliseconds window);
  bool Ack(const std::vector<uint64_t>& ids);
  bool Ack(uint64_t id) { return Ack(std::vector<uint64_t>{id}); }
  // Half-closes and returns the final status (waits at most `timeout`).
  grpc::Status Close(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits for the server to end the stream; returns its status.
  std::optional<grpc::Status> WaitEnd(std::chrono::milliseconds timeout);

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SubscribeRequest, v1::SubscribeResponse>> stream_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::Expiration> received_;
  bool ended_ = false;
  std::mutex write_mu_;
  bool closed_ = false;
  std::optional<grpc::Status> final_;
};

}  // namespace lawn::testing
