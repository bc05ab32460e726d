// LeaseKeeper: one etcd lease kept alive by a thread of its own, and the fencing clock built on it.
//
// etcd's documentation warns that a lease alone gives no mutual exclusion: a member that is paused (GC,
// SIGSTOP, an overloaded host) or cut off from etcd cannot know that its lease expired. So a member never
// asks "is my lease alive?" but "is it certainly alive?": each renewal is timed from when its request was
// SENT, and since etcd renewed the lease no earlier than that, the lease lives at least until
// send time + the TTL etcd granted. Fresh() is true only while now < that instant - margin; a member checks
// it before answering writes and before publishing expirations, and a new owner of a vanished member's
// partitions waits the full TTL + margin before it takes them. A paused member wakes up with Fresh() false
// (the clock is monotonic and kept running during the pause), so it does nothing until a renewal that it
// sends after waking succeeds, and if its lease expired meanwhile that renewal fails and lost() is set.
//
// The clock is CLOCK_BOOTTIME: monotonic, and it keeps counting while the host is suspended, so a member
// whose whole machine slept wakes with Fresh() false too. (A hypervisor that freezes a VM without its
// clock advancing is beyond any lease: fencing at the storage level, docs/cluster.md's next step, covers it.)
// etcd renews a lease on whichever member believes it leads, so with a multi-member etcd the margin should
// exceed etcd's election timeout.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <limits>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_client.h"

namespace lawn {

struct LeaseKeeperOptions {
  std::chrono::seconds ttl{10};
  // Fresh() turns false this long before the lease could expire (clock rates, the delay of a check).
  std::chrono::milliseconds margin{1000};
  // Time between renewals, counted from each one's send; 0: a third of the TTL. A failed renewal is retried
  // after a quarter of that. INVALID_ARGUMENT unless it is below ttl - margin.
  std::chrono::milliseconds renew_every{0};
};

// CLOCK_BOOTTIME as a std::chrono clock (see the top of this file).
struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

class LeaseKeeper {
 public:
  // Grants the lease (one call to etcd) and starts renewing it. INVALID_ARGUMENT if margin >= ttl or
  // renew_every >= ttl - margin.
  // `etcd` must outlive the keeper.
  static absl::StatusOr<std::unique_ptr<LeaseKeeper>> Start(EtcdClient& etcd, const LeaseKeeperOptions& options);

  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;
  // Stops renewing; the lease then expires by itself after its TTL (use Revoke to end it at once).
  ~LeaseKeeper();

  int64_t lease() const { return lease_; }
  std::chrono::seconds ttl() const;
  // True while the lease is certainly alive at etcd, with the margin to spare (see the top of this file).
  bool Fresh() const;
  // How long Fresh() stays true from now without another renewal; zero or negative once it is false.
  BootClock::duration FreshFor() const;
  // True once etcd answered that the lease expired: the keys under it are gone, and this keeper stays
  // stale for good. A member then starts over with a new lease (and a new member epoch).
  bool lost() const;
  // Renewals that etcd answered, and those that failed (unreachable, timed out), since Start.
  int64_t renewals() const;
  int64_t failures() const;

  // Stops renewing and revokes the lease: the keys attached to it go at once.
  absl::Status Revoke();

 private:
  LeaseKeeper(EtcdClient& etcd, const LeaseKeeperOptions& options, int64_t lease, std::chrono::seconds ttl,
              BootClock::time_point valid_until);
  void Run();
  void Stop();
  // Sleeps until `until` on the steady clock (the wall clock may step; Abseil's timed waits of this
  // version follow it) or until Stop; returns false if stopping.
  bool SleepUntil(std::chrono::steady_clock::time_point until);

  EtcdClient& etcd_;
  const LeaseKeeperOptions options_;
  const int64_t lease_;
  std::thread thread_;
  std::once_flag stop_once_;

  // The renewal thread's sleep and its wake-up by Stop.
  std::mutex sleep_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // Guarded by sleep_mu_.

  // Copies valid_until_ - margin into fresh_until_ns_ (Fresh() reads it without the mutex: workers of every
  // shard check it before they fire).
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::chrono::seconds ttl_ ABSL_GUARDED_BY(mu_);
  BootClock::time_point valid_until_ ABSL_GUARDED_BY(mu_);
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  int64_t renewals_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> fresh_until_ns_{std::numeric_limits<int64_t>::min()};  // BootClock ns.
};

}  // namespace lawn
