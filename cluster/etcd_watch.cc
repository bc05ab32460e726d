// EtcdWatch (cluster/etcd_watch.h): one etcd Watch stream on a prefix, reopened whenever it ends.
#include "cluster/etcd_watch.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "cluster/etcd_client.h"
#include "spdlog/spdlog.h"

namespace lawn {

EtcdWatch::EtcdWatch(std::shared_ptr<grpc::Channel> channel, std::string prefix,
                     std::function<void()> changed)
    : stub_(etcdserverpb::Watch::NewStub(std::move(channel))),
      prefix_(std::move(prefix)),
      changed_(std::move(changed)) {
  thread_ = std::thread([this] { Run(); });
}

EtcdWatch::~EtcdWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (open_call_ != nullptr) open_call_->TryCancel();
  }
  thread_.join();
}

// Opens streams one after another until the watch stops. The pause before a reopen doubles from 100 ms to
// 2 s, and starts over after a stream that was healthy: one that stayed open for the longest pause or
// carried a change (a stream that etcd or a proxy ends right after creating it must not make every member
// re-read etcd ten times a second).
void EtcdWatch::Run() {
  constexpr std::chrono::milliseconds kFirstPause{100};
  constexpr std::chrono::milliseconds kLongestPause{2000};
  std::chrono::milliseconds pause = kFirstPause;
  std::string last_failure;  // Why the last stream ended; "" after a healthy one.
  while (true) {
    const auto opened = std::chrono::steady_clock::now();
    const StreamEnd end = Stream();
    if (end.stopping) return;
    streams_ended_.fetch_add(1, std::memory_order_acq_rel);
    if (end.changes > 0 || std::chrono::steady_clock::now() - opened >= kLongestPause) {
      pause = kFirstPause;
      last_failure.clear();
    }
    // Once per cause, as ClusterNode logs etcd's failures: a broken watch leaves the member on its periodic
    // re-read alone, which an operator should hear about.
    if (end.why != last_failure) {
      spdlog::warn("etcd watch on {}: {}; reopening (until it is, changes are seen by the periodic re-read)",
                   prefix_, end.why);
      last_failure = end.why;
    }
    absl::MutexLock lock(&mu_);
    const auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stop), absl::FromChrono(pause))) return;
    pause = std::min(pause * 2, kLongestPause);
  }
}

EtcdWatch::StreamEnd EtcdWatch::Stream() {
  StreamEnd end;
  grpc::ClientContext context;  // No deadline: the stream lives as long as etcd keeps it.
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      end.stopping = true;
      return end;
    }
    open_call_ = &context;
  }
  auto stream = stub_->Watch(&context);
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  create->set_range_end(EtcdPrefixEnd(prefix_));
  bool ended_by_us = false;
  if (stream->Write(request)) {
    etcdserverpb::WatchResponse response;
    while (stream->Read(&response)) {
      // The watcher is over while the stream is not: end the stream and open a new one.
      if (response.canceled()) {
        end.why = "etcd canceled the watch (" + response.cancel_reason() + ")";
        ended_by_us = true;
        break;
      }
      if (response.compact_revision() != 0) {
        end.why = "the watch fell behind etcd's compaction (revision " +
                  std::to_string(response.compact_revision()) + ")";
        ended_by_us = true;
        break;
      }
      if (response.created()) {
        if (opens_.fetch_add(1, std::memory_order_acq_rel) > 0) {
          spdlog::info("etcd watch on {}: open again", prefix_);
        }
      } else if (response.events_size() > 0) {
        ++end.changes;
      }
      if (response.created() || response.events_size() > 0) changed_();
    }
  }
  if (ended_by_us) context.TryCancel();  // Otherwise the call has ended, and Finish reports how.
  const grpc::Status status = stream->Finish();
  absl::MutexLock lock(&mu_);
  open_call_ = nullptr;
  end.stopping = stopping_;
  if (end.why.empty()) {
    end.why = status.ok() ? std::string("etcd ended the stream")
                          : "the stream failed (" + status.error_message() + ")";
  }
  return end;
}

}  // namespace lawn
