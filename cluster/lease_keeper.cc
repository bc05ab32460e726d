// LeaseKeeper (cluster/lease_keeper.h): renewal thread and fencing clock.
#include "cluster/lease_keeper.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace lawn {

using Clock = std::chrono::steady_clock;

absl::StatusOr<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Start(EtcdClient& etcd, const LeaseKeeperOptions& options) {
  if (options.margin >= options.ttl || options.margin.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("lease margin (", options.margin.count(),
                                                   " ms) must be at least 0 and below the TTL (",
                                                   options.ttl.count(), " s)"));
  }
  const Clock::time_point sent = Clock::now();
  absl::StatusOr<int64_t> lease = etcd.GrantLease(options.ttl);
  if (!lease.ok()) return lease.status();
  // etcd grants at least the TTL asked for; count from the send, as for every renewal.
  return std::unique_ptr<LeaseKeeper>(new LeaseKeeper(etcd, options, *lease, options.ttl, sent + options.ttl));
}

LeaseKeeper::LeaseKeeper(EtcdClient& etcd, const LeaseKeeperOptions& options, int64_t lease, std::chrono::seconds ttl,
                         Clock::time_point valid_until)
    : etcd_(etcd), options_(options), lease_(lease), ttl_(ttl), valid_until_(valid_until) {
  thread_ = std::thread([this] { Run(); });
}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status LeaseKeeper::Revoke() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    valid_until_ = Clock::time_point::min();
  }
  return etcd_.RevokeLease(lease_);
}

void LeaseKeeper::Run() {
  for (;;) {
    std::chrono::milliseconds every = options_.renew_every;
    {
      absl::MutexLock lock(&mu_);
      if (every.count() == 0) every = std::max<std::chrono::milliseconds>(ttl_ / 3, std::chrono::milliseconds(100));
      // Sleeps until the next renewal is due or Stop is called.
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::FromChrono(every));
      if (stopping_ || lost_) return;
    }
    const Clock::time_point sent = Clock::now();
    absl::StatusOr<std::chrono::seconds> granted = etcd_.KeepAliveOnce(lease_);
    absl::MutexLock lock(&mu_);
    if (granted.ok()) {
      ++renewals_;
      ttl_ = *granted;
      valid_until_ = std::max(valid_until_, sent + *granted);
    } else if (absl::IsNotFound(granted.status())) {
      lost_ = true;  // Gone at etcd: nothing to renew any more.
      valid_until_ = Clock::time_point::min();
      return;
    } else {
      ++failures_;  // etcd unreachable or slow: try again; Fresh() runs out by itself meanwhile.
    }
  }
}

std::chrono::seconds LeaseKeeper::ttl() const {
  absl::MutexLock lock(&mu_);
  return ttl_;
}

bool LeaseKeeper::Fresh() const { return FreshFor() > Clock::duration::zero(); }

Clock::duration LeaseKeeper::FreshFor() const {
  absl::MutexLock lock(&mu_);
  if (lost_ || valid_until_ == Clock::time_point::min()) return Clock::duration::min();
  return (valid_until_ - options_.margin) - Clock::now();
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
