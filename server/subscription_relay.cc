// SubscriptionRelay (server/subscription_relay.h): upstream Subscribe streams to the other members.
#include "server/subscription_relay.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "base/partition.h"
#include "server/cluster_router.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

// An upstream that is still open this long after the relay stopped (its half-close unanswered) is cancelled.
constexpr std::chrono::seconds kCloseGrace(5);
// At most one "a member refuses this relay" warning per relay this often.
constexpr std::chrono::seconds kWarnEvery(30);

// splitmix64's finalizer: a bijection of 64-bit values that spreads every input bit.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t SubscriptionRelay::RelayId(std::string_view member, uint64_t delivery_id) {
  const uint64_t id = Mix(PartitionHash(member, "") ^ Mix(delivery_id));  // The member name's FNV-1a, mixed.
  return id == 0 ? 1 : id;
}

// One upstream Subscribe stream to one member, on gRPC's client callback API. Owned by gRPC from StartCall
// until OnDone, which tells the relay and deletes it. Writes (acks, the half-close) are started from other
// threads, so a hold keeps the stream object alive until the read chain has ended, and every write starts
// under mu_ after checking that it has not (client reactions never run inline, so starting one under mu_
// cannot re-enter it).
class SubscriptionRelay::Upstream final
    : public grpc::ClientBidiReactor<v1::SubscribeRequest, v1::SubscribeResponse> {
 public:
  Upstream(std::shared_ptr<SubscriptionRelay> relay, std::string member, const std::shared_ptr<grpc::Channel>& channel)
      : relay_(std::move(relay)), member_(std::move(member)), stub_(v1::TimerService::NewStub(channel)) {
    for (const auto& [key, value] : relay_->metadata_) context_.AddMetadata(key, value);
    context_.AddMetadata(ClusterRouter::kForwardedBy, relay_->router_.node().options().member);
  }

  void Begin() {
    stub_->async()->Subscribe(&context_, this);
    {
      absl::MutexLock lock(&mu_);
      writing_ = true;
      request_ = relay_->open_;
      StartWrite(&request_);
    }
    StartRead(&response_);
    AddHold();  // Released when the read chain ends: outside writes need the stream alive.
    StartCall();
  }

  // Queues `ids` to be acked on this stream (dropped if it is ending: the member redelivers them).
  void Ack(const std::vector<uint64_t>& ids) {
    absl::MutexLock lock(&mu_);
    if (ended_ || half_close_) return;
    pending_.insert(pending_.end(), ids.begin(), ids.end());
    if (!writing_) WriteNextLocked();
  }

  // Writes what is pending, then half-closes: the member ends the stream OK after taking the acks.
  void Close() {
    absl::MutexLock lock(&mu_);
    if (ended_ || half_close_) return;
    half_close_ = true;
    if (!writing_) WriteNextLocked();
  }

  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // The stream ended; OnDone follows once the hold is gone.
      {
        absl::MutexLock lock(&mu_);
        ended_ = true;
      }
      RemoveHold();
      return;
    }
    std::vector<v1::Expiration> batch;
    if (response_.has_expiration()) batch.push_back(std::move(*response_.mutable_expiration()));
    for (v1::Expiration& e : *response_.mutable_expirations()) batch.push_back(std::move(e));
    response_.Clear();
    relay_->OnExpirations(member_, std::move(batch));
    StartRead(&response_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      ended_ = true;  // The stream is ending: acks not sent mean redeliveries, never losses.
      return;
    }
    if (!ended_) WriteNextLocked();
  }

  void OnDone(const grpc::Status& status) override {
    relay_->OnUpstreamDone(this, member_, status);
    delete this;
  }

 private:
  // Starts the next write: the pending acks, else the half-close if asked for. REQUIRES: no write in flight.
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!pending_.empty()) {
      request_.Clear();
      auto* ids = request_.mutable_ack()->mutable_delivery_ids();
      ids->Reserve(static_cast<int>(pending_.size()));
      for (uint64_t id : pending_) ids->Add(id);
      pending_.clear();
      writing_ = true;
      StartWrite(&request_);
    } else if (half_close_ && !writes_done_) {
      writes_done_ = true;
      StartWritesDone();
    }
  }

  const std::shared_ptr<SubscriptionRelay> relay_;
  const std::string member_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
  grpc::ClientContext context_;
  v1::SubscribeResponse response_;  // Read chain only.
  absl::Mutex mu_;
  v1::SubscribeRequest request_ ABSL_GUARDED_BY(mu_);  // gRPC reads it from StartWrite until OnWriteDone.
  std::vector<uint64_t> pending_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;       // The read chain ended or a write failed: write nothing more.
  bool half_close_ ABSL_GUARDED_BY(mu_) = false;  // Close asked for; no more acks are queued.
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
};

std::shared_ptr<SubscriptionRelay> SubscriptionRelay::Start(ClusterRouter& router,
                                                            std::vector<std::pair<std::string, std::string>> metadata,
                                                            const v1::SubscribeRequest::Open& open,
                                                            std::function<void()> wake) {
  std::shared_ptr<SubscriptionRelay> relay(
      new SubscriptionRelay(router, std::move(metadata), open, std::move(wake)));
  relay->Maintain();
  router.Register(relay);
  return relay;
}

SubscriptionRelay::SubscriptionRelay(ClusterRouter& router, std::vector<std::pair<std::string, std::string>> metadata,
                                     const v1::SubscribeRequest::Open& open, std::function<void()> wake)
    : router_(router),
      metadata_(std::move(metadata)),
      wake_(std::move(wake)),
      observe_cap_(std::max<size_t>(open.max_in_flight(), 100)) {
  *open_.mutable_open() = open;
}

SubscriptionRelay::~SubscriptionRelay() = default;

void SubscriptionRelay::Maintain() {
  const std::shared_ptr<const ClusterMap> map = router_.node().map();
  std::vector<Upstream*> started;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      if (std::chrono::steady_clock::now() - stopped_at_ >= kCloseGrace) {
        for (auto& [member, link] : upstreams_) link.upstream->Cancel();
      }
      return;
    }
    for (auto& [member, link] : upstreams_) {
      const auto live = map->live.find(member);
      // Gone from etcd, or back at another address: this stream leads nowhere useful any more.
      if (live == map->live.end() || live->second != link.address) link.upstream->Cancel();
    }
    for (const auto& [member, address] : map->live) {
      if (member == map->self || upstreams_.contains(member)) continue;
      auto* upstream = new Upstream(shared_from_this(), member, router_.Channel(address));
      upstreams_.emplace(member, Link{upstream, address});
      started.push_back(upstream);
    }
  }
  for (Upstream* upstream : started) upstream->Begin();
}

void SubscriptionRelay::OnExpirations(const std::string& member, std::vector<v1::Expiration> batch) {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    const bool observe = open_.open().observe();
    for (v1::Expiration& e : batch) {
      const uint64_t id = RelayId(member, e.delivery_id());
      if (observe) {
        // Best-effort copies, as from a member's own outbox: bounded, the rest dropped.
        if (ready_.size() >= observe_cap_) {
          ++observe_dropped_;
          continue;
        }
      } else {
        auto [it, inserted] = origins_.try_emplace(id, Origin{member, e.delivery_id()});
        if (!inserted && it->second.member == member && it->second.id == e.delivery_id()) {
          // Redelivered by the member before the downstream acked it: deliver it again (same id). If it is
          // still queued, the queued copy serves.
          bool queued = false;
          for (const v1::Expiration& q : ready_) queued = queued || q.delivery_id() == id;
          if (queued) continue;
        }
      }
      e.set_delivery_id(id);
      ready_.push_back(std::move(e));
    }
  }
  wake_();
}

size_t SubscriptionRelay::Take(size_t max_count, size_t max_bytes, bool first_may_exceed,
                               std::vector<v1::Expiration>* out) {
  absl::MutexLock lock(&mu_);
  size_t taken = 0;
  size_t bytes = 0;
  while (taken < max_count && !ready_.empty()) {
    const size_t size = ready_.front().ByteSizeLong() + 8;  // Plus its field tag and length, about.
    const bool alone = taken == 0 && first_may_exceed && size > max_bytes;
    if (bytes + size > max_bytes && !alone) break;
    bytes += size;
    out->push_back(std::move(ready_.front()));
    ready_.pop_front();
    ++taken;
    if (alone) break;
  }
  return taken;
}

std::vector<uint64_t> SubscriptionRelay::Ack(const std::vector<uint64_t>& ids) {
  std::vector<uint64_t> others;
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::vector<uint64_t>> by_member;
  for (uint64_t id : ids) {
    auto it = origins_.find(id);
    if (it == origins_.end()) {
      others.push_back(id);
      continue;
    }
    by_member[it->second.member].push_back(it->second.id);
    origins_.erase(it);
  }
  for (auto& [member, member_ids] : by_member) {
    auto link = upstreams_.find(member);
    if (link != upstreams_.end()) link->second.upstream->Ack(member_ids);
  }
  return others;
}

void SubscriptionRelay::Stop() {
  absl::MutexLock lock(&mu_);
  if (stopped_) return;
  stopped_ = true;
  stopped_at_ = std::chrono::steady_clock::now();
  ready_.clear();
  for (auto& [member, link] : upstreams_) link.upstream->Close();
  if (observe_dropped_ > 0) {
    spdlog::debug("subscription relay of namespace '{}': {} observed copies dropped (observer too slow)",
                  open_.open().namespace_(), observe_dropped_);
  }
}

void SubscriptionRelay::OnUpstreamDone(Upstream* upstream, const std::string& member, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  auto it = upstreams_.find(member);
  if (it != upstreams_.end() && it->second.upstream == upstream) upstreams_.erase(it);
  // What that member had in flight to this relay goes back to its outbox: forget it here (still-queued ones
  // too, so the downstream never acks what the member no longer holds for this stream).
  absl::flat_hash_set<uint64_t> forgotten;
  for (auto o = origins_.begin(); o != origins_.end();) {
    if (o->second.member == member) {
      forgotten.insert(o->first);
      origins_.erase(o++);
    } else {
      ++o;
    }
  }
  std::erase_if(ready_, [&](const v1::Expiration& e) { return forgotten.contains(e.delivery_id()); });
  if (stopped_ || status.ok() || status.error_code() == grpc::StatusCode::CANCELLED) return;
  // Refused (subscriber cap, a revoked token, a max_in_flight above that member's limit) or broken: this
  // stream gets only part of the namespace until the next attempt (every second) succeeds. Say so, rarely.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_warning_ >= kWarnEvery) {
    last_warning_ = now;
    spdlog::warn("subscription to namespace '{}': the stream from member {} ended ({}: {}); its expirations reach "
                 "this subscriber only once a retry succeeds (every second)",
                 open_.open().namespace_(), member, static_cast<int>(status.error_code()), status.error_message());
  }
}

}  // namespace lawn
