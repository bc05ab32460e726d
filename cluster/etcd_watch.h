// EtcdWatch: tells its owner when anything under a key prefix changes in etcd, through one etcd Watch stream,
// so that a member re-reads the cluster's keys when they change instead of polling them (ClusterNode).
//
// It says *that* something changed, not what: the owner re-reads the keys it needs after each call. That
// keeps one source of truth (the range read) and makes a lost stream harmless. Every time a stream opens (the
// first time and after each reconnect) `changed` is called once, because what changed while no stream was open
// was not seen; a watch created without a start revision sees every change after it was created, so a read
// made after that call misses nothing. A stream that fails (etcd unreachable, restarted, the watcher
// canceled or compacted away) is reopened after a pause of 100 ms, doubling up to 2 s, for as long as the
// watch lives; the first failure of each kind is logged as a warning.
//
// Thread-safety: `changed` runs on the watch's own thread and must not block for long (it only wakes its
// owner). The destructor cancels the stream, joins the thread and may be called from any other thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace lawn {

class EtcdWatch {
 public:
  // Watches every key that starts with `prefix` over `channel` (an EtcdClient's: EtcdClient::Watch).
  // Returns at once; the first `changed` follows when etcd has created the watcher.
  EtcdWatch(std::shared_ptr<grpc::Channel> channel, std::string prefix, std::function<void()> changed);
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  // Watchers etcd has created for this watch so far: 1 once the first stream is open, +1 per reconnect.
  uint64_t opens() const { return opens_.load(std::memory_order_acquire); }
  // Streams that ended other than by the destructor (each is then reopened); for tests and logs.
  uint64_t streams_ended() const { return streams_ended_.load(std::memory_order_acquire); }

 private:
  struct StreamEnd {
    bool stopping = false;  // The destructor ended it.
    uint64_t changes = 0;   // Responses with events it carried.
    std::string why;        // How it ended, for the log.
  };
  void Run();
  // Opens one stream and reads it until it ends (or the watch stops).
  StreamEnd Stream();

  const std::unique_ptr<etcdserverpb::Watch::Stub> stub_;
  const std::string prefix_;
  const std::function<void()> changed_;
  std::atomic<uint64_t> opens_{0};
  std::atomic<uint64_t> streams_ended_{0};

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* open_call_ ABSL_GUARDED_BY(mu_) = nullptr;  // The stream being read, to cancel.
  std::thread thread_;
};

}  // namespace lawn
