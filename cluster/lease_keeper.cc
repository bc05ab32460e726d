// LeaseKeeper (cluster/lease_keeper.h): renewal thread and fencing clock.
#include "cluster/lease_keeper.h"

#include <time.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lawn {

using std::chrono::milliseconds;

BootClock::time_point BootClock::now() noexcept {
  timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

namespace {

milliseconds RenewEvery(const LeaseKeeperOptions& options, std::chrono::seconds ttl) {
  if (options.renew_every.count() > 0) return options.renew_every;
  return std::max<milliseconds>(std::chrono::duration_cast<milliseconds>(ttl) / 3, milliseconds(100));
}

}  // namespace

absl::StatusOr<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Start(EtcdClient& etcd, const LeaseKeeperOptions& options) {
  if (options.margin >= options.ttl || options.margin.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("lease margin (", options.margin.count(),
                                                   " ms) must be at least 0 and below the TTL (",
                                                   options.ttl.count(), " s)"));
  }
  if (RenewEvery(options, options.ttl) >= options.ttl - options.margin) {
    return absl::InvalidArgumentError(absl::StrCat("lease renewals every ", RenewEvery(options, options.ttl).count(),
                                                   " ms would let the fence close between them: renew more often than"
                                                   " the TTL minus the margin"));
  }
  const BootClock::time_point sent = BootClock::now();
  absl::StatusOr<int64_t> lease = etcd.GrantLease(options.ttl);
  if (!lease.ok()) return lease.status();
  // etcd grants at least the TTL asked for; count from the send, as for every renewal.
  return std::unique_ptr<LeaseKeeper>(new LeaseKeeper(etcd, options, *lease, options.ttl, sent + options.ttl));
}

LeaseKeeper::LeaseKeeper(EtcdClient& etcd, const LeaseKeeperOptions& options, int64_t lease, std::chrono::seconds ttl,
                         BootClock::time_point valid_until)
    : etcd_(etcd), options_(options), lease_(lease), ttl_(ttl), valid_until_(valid_until) {
  {
    absl::MutexLock lock(&mu_);
    PublishLocked();
  }
  thread_ = std::thread([this] { Run(); });
}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::Stop() {
  std::call_once(stop_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(sleep_mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  });
}

absl::Status LeaseKeeper::Revoke() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    valid_until_ = BootClock::time_point::min();
    PublishLocked();
  }
  return etcd_.RevokeLease(lease_);
}

bool LeaseKeeper::SleepUntil(std::chrono::steady_clock::time_point until) {
  std::unique_lock<std::mutex> lock(sleep_mu_);
  // libstdc++ waits on the steady clock itself (pthread_cond_clockwait), so a wall-clock step changes nothing.
  wake_.wait_until(lock, until, [this] { return stopping_; });
  return !stopping_;
}

void LeaseKeeper::Run() {
  using Steady = std::chrono::steady_clock;
  Steady::time_point next = Steady::now() + RenewEvery(options_, options_.ttl);
  for (;;) {
    if (!SleepUntil(next)) return;
    const Steady::time_point attempt = Steady::now();
    const BootClock::time_point sent = BootClock::now();
    absl::StatusOr<std::chrono::seconds> granted = etcd_.KeepAliveOnce(lease_);
    absl::MutexLock lock(&mu_);
    const milliseconds every = RenewEvery(options_, ttl_);
    if (granted.ok()) {
      ++renewals_;
      ttl_ = *granted;
      valid_until_ = std::max(valid_until_, sent + *granted);
      PublishLocked();
      next = attempt + every;  // A fixed rate from each send, whatever the call took.
    } else if (absl::IsNotFound(granted.status())) {
      lost_ = true;  // Gone at etcd: nothing to renew any more.
      valid_until_ = BootClock::time_point::min();
      PublishLocked();
      return;
    } else {
      ++failures_;  // etcd unreachable or slow: try again soon; Fresh() runs out by itself meanwhile.
      next = std::max(Steady::now(), attempt + std::max(every / 4, milliseconds(100)));
    }
  }
}

std::chrono::seconds LeaseKeeper::ttl() const {
  absl::MutexLock lock(&mu_);
  return ttl_;
}

void LeaseKeeper::PublishLocked() {
  const int64_t until = valid_until_ == BootClock::time_point::min()
                            ? std::numeric_limits<int64_t>::min()
                            : (valid_until_ - options_.margin).time_since_epoch().count();
  fresh_until_ns_.store(until, std::memory_order_release);
}

bool LeaseKeeper::Fresh() const {
  return BootClock::now().time_since_epoch().count() < fresh_until_ns_.load(std::memory_order_acquire);
}

BootClock::duration LeaseKeeper::FreshFor() const {
  absl::MutexLock lock(&mu_);
  if (lost_ || valid_until_ == BootClock::time_point::min()) return BootClock::duration::min();
  return (valid_until_ - options_.margin) - BootClock::now();
}

bool LeaseKeeper::lost() const {
  absl::MutexLock lock(&mu_);
  return lost_;
}

int64_t LeaseKeeper::renewals() const {
  absl::MutexLock lock(&mu_);
  return renewals_;
}

int64_t LeaseKeeper::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

}  // namespace lawn
