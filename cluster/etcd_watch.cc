// EtcdWatch (cluster/etcd_watch.h): one etcd Watch stream on a prefix, reopened whenever it ends.
#include "cluster/etcd_watch.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <utility>

#include "cluster/etcd_client.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace lawn {

EtcdWatch::EtcdWatch(std::shared_ptr<grpc::Channel> channel, std::string prefix, std::function<void()> changed)
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

void EtcdWatch::Run() {
  constexpr std::chrono::milliseconds kFirstPause{100};
  constexpr std::chrono::milliseconds kLongestPause{2000};
  std::chrono::milliseconds pause = kFirstPause;
  while (true) {
    // A stream that got as far as a watcher had a working connection: start the pauses over.
    if (Stream()) pause = kFirstPause;
    absl::MutexLock lock(&mu_);
    const auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stop), absl::FromChrono(pause))) return;
    pause = std::min(pause * 2, kLongestPause);
  }
}

bool EtcdWatch::Stream() {
  grpc::ClientContext context;  // No deadline: the stream lives as long as etcd keeps it.
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    open_call_ = &context;
  }
  bool created = false;
  auto stream = stub_->Watch(&context);
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  create->set_range_end(EtcdPrefixEnd(prefix_));
  if (stream->Write(request)) {
    etcdserverpb::WatchResponse response;
    while (stream->Read(&response)) {
      // The watcher is over (etcd canceled it, or it fell behind a compaction): open a new one.
      if (response.canceled() || response.compact_revision() != 0) break;
      if (response.created()) {
        created = true;
        opens_.fetch_add(1, std::memory_order_acq_rel);
      }
      if (response.created() || response.events_size() > 0) changed_();
    }
  }
  context.TryCancel();  // Done reading: do not wait for etcd to end the stream.
  const grpc::Status status = stream->Finish();
  {
    absl::MutexLock lock(&mu_);
    open_call_ = nullptr;
    if (stopping_) return created;
  }
  spdlog::debug("etcd watch on {}: stream ended ({}); reopening", prefix_,
                status.ok() ? std::string("by etcd") : status.error_message());
  return created;
}

}  // namespace lawn
