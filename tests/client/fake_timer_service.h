// FakeTimerService: a scripted lawn.v1.TimerService for client tests, and FakeServer, a real gRPC server on
// 127.0.0.1 port 0 that serves it (plus gRPC's default health service), plaintext or TLS. The fake records
// the `authorization` metadata of each call it answers.
//
// Thread-safety: the fake's recorded requests are guarded by its mutex; set the script fields (expirations,
// window, end) before the server is started.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

// How the fake's Subscribe ends.
enum class StreamEnd {
  kWhenAllAcked,  // Return OK once every expiration sent has been acked.
  kOnHalfClose,   // Keep reading acks until the client half-closes, then return OK.
};

// A scripted TimerService. Subscribe sends `expirations` expirations (delivery ids 1..n) while no more than
// `window` are unacked, like lawnd: one per response in `expiration` when open.max_batch is 0, else as many
// as the window allows (at most max_batch) per response in `expirations`. A namespace "bad" is refused with
// INVALID_ARGUMENT. StartTimers echoes a timer (its id) per started item only when asked (return_timers).
class FakeTimerService final : public v1::TimerService::Service {
 public:
  int expirations = 0;
  size_t window = 100;
  StreamEnd end = StreamEnd::kWhenAllAcked;

  grpc::Status StartTimer(grpc::ServerContext* context, const v1::StartTimerRequest* request,
                          v1::StartTimerResponse* response) override {
    RecordAuthorization(*context);
    absl::MutexLock lock(&mu_);
    last_start_ = *request;
    v1::Timer* timer = response->mutable_timer();
    timer->set_namespace_(request->namespace_().empty() ? "default" : request->namespace_());
    timer->set_id(request->id());
    timer->set_payload(request->payload());
    if (request->has_ttl()) *timer->mutable_ttl() = request->ttl();
    return grpc::Status::OK;
  }

  grpc::Status StartTimers(grpc::ServerContext* context, const v1::StartTimersRequest* request,
                           v1::StartTimersResponse* response) override {
    RecordAuthorization(*context);
    for (const v1::StartTimerRequest& r : request->timers()) {
      v1::StartTimerResult* result = response->add_results();
      if (r.id() == "taken") {
        result->set_code(grpc::StatusCode::ALREADY_EXISTS);
        result->set_message("timer 'taken' exists");
      } else if (request->return_timers()) {
        result->mutable_timer()->set_id(r.id());
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status GetTimer(grpc::ServerContext* context, const v1::GetTimerRequest* request,
                        v1::GetTimerResponse*) override {
    RecordAuthorization(*context);
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no timer '" + request->id() + "'");
  }

  grpc::Status RescheduleTimer(grpc::ServerContext* context, const v1::RescheduleTimerRequest* request,
                               v1::RescheduleTimerResponse* response) override {
    RecordAuthorization(*context);
    absl::MutexLock lock(&mu_);
    last_reschedule_ = *request;
    response->mutable_timer()->set_id(request->id());
    return grpc::Status::OK;
  }

  grpc::Status Subscribe(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::SubscribeResponse, v1::SubscribeRequest>* stream) override {
    RecordAuthorization(*context);
    v1::SubscribeRequest request;
    if (!stream->Read(&request) || !request.has_open()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "open first");
    }
    {
      absl::MutexLock lock(&mu_);
      open_ = request.open();
    }
    if (request.open().namespace_() == "bad") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "namespace: \"bad\" is bad");
    }
    const uint32_t max_batch = request.open().max_batch();
    int sent = 0;
    size_t unacked = 0;
    for (;;) {
      while (sent < expirations && (request.open().observe() || unacked < window)) {
        v1::SubscribeResponse response;
        size_t in_response = 0;
        do {
          ++sent;
          ++unacked;
          ++in_response;
          v1::Expiration* e = max_batch == 0 ? response.mutable_expiration() : response.add_expirations();
          e->mutable_timer()->set_id("t" + std::to_string(sent));
          e->set_delivery_id(static_cast<uint64_t>(sent));
          e->set_attempt(1);
        } while (max_batch != 0 && in_response < max_batch && sent < expirations &&
                 (request.open().observe() || unacked < window));
        {
          absl::MutexLock lock(&mu_);
          sent_ = sent;
          response_sizes_.push_back(in_response);
        }
        if (!stream->Write(response)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
      }
      if (end == StreamEnd::kWhenAllAcked && sent == expirations && unacked == 0) return grpc::Status::OK;
      if (!stream->Read(&request)) return grpc::Status::OK;  // Half-close.
      absl::MutexLock lock(&mu_);
      ++ack_messages_;
      for (uint64_t id : request.ack().delivery_ids()) acked_.push_back(id);
      unacked -= std::min<size_t>(unacked, static_cast<size_t>(request.ack().delivery_ids_size()));
    }
  }

  // The `authorization` values of the calls answered so far, in order ("" for a call without one).
  std::vector<std::string> authorizations() {
    absl::MutexLock lock(&mu_);
    return authorizations_;
  }
  v1::StartTimerRequest last_start() {
    absl::MutexLock lock(&mu_);
    return last_start_;
  }
  v1::RescheduleTimerRequest last_reschedule() {
    absl::MutexLock lock(&mu_);
    return last_reschedule_;
  }
  v1::SubscribeRequest::Open open() {
    absl::MutexLock lock(&mu_);
    return open_;
  }
  std::vector<uint64_t> acked() {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  int ack_messages() {
    absl::MutexLock lock(&mu_);
    return ack_messages_;
  }
  // Expirations per Subscribe response written, in order.
  std::vector<size_t> response_sizes() {
    absl::MutexLock lock(&mu_);
    return response_sizes_;
  }
  void AwaitSent(int n) {
    const auto enough = [&] {
      mu_.AssertReaderHeld();
      return sent_ >= n;
    };
    absl::MutexLock lock(&mu_, absl::Condition(&enough));
  }

 private:
  void RecordAuthorization(const grpc::ServerContext& context) {
    const auto& metadata = context.client_metadata();
    const auto it = metadata.find("authorization");
    absl::MutexLock lock(&mu_);
    authorizations_.push_back(it == metadata.end() ? "" : std::string(it->second.data(), it->second.size()));
  }

  absl::Mutex mu_;
  std::vector<std::string> authorizations_ ABSL_GUARDED_BY(mu_);
  v1::StartTimerRequest last_start_ ABSL_GUARDED_BY(mu_);
  v1::RescheduleTimerRequest last_reschedule_ ABSL_GUARDED_BY(mu_);
  v1::SubscribeRequest::Open open_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> acked_ ABSL_GUARDED_BY(mu_);
  int ack_messages_ ABSL_GUARDED_BY(mu_) = 0;
  int sent_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<size_t> response_sizes_ ABSL_GUARDED_BY(mu_);
};

// A gRPC server on 127.0.0.1, port 0, with the fake (or another test service, e.g. timer_batcher_test.cc's)
// and the default health service; plaintext unless `credentials` say otherwise.
class FakeServer {
 public:
  explicit FakeServer(grpc::Service& service, std::shared_ptr<grpc::ServerCredentials> credentials =
                                                  grpc::InsecureServerCredentials()) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_);
    builder.RegisterService(&service);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { Shutdown(); }
  void Shutdown() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Collects what a subscription's callback saw.
}  // namespace lawn
