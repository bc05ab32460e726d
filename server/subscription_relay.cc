// SubscriptionRelay (server/subscription_relay.h): upstream Subscribe streams to the other members.
#include "server/subscription_relay.h"

#include <utility>

#include "absl/container/flat_hash_set.h"

#include "server/cluster_router.h"
#include "spdlog/spdlog.h"

namespace lawn {

// One upstream Subscribe stream to one member, on gRPC's client callback API. Owned by gRPC from StartCall
// until OnDone, which tells the relay and deletes it; the relay calls it only while it is in upstreams_.
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
    }
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }

  // Queues `ids` to be acked on this stream.
  void Ack(const std::vector<uint64_t>& ids) {
    {
      absl::MutexLock lock(&mu_);
      pending_.insert(pending_.end(), ids.begin(), ids.end());
      if (writing_ || done_writing_) return;
      writing_ = true;
      FillAckLocked();
    }
    StartWrite(&request_);
  }

  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // The stream ended; OnDone follows.
    std::vector<v1::Expiration> batch;
    if (response_.has_expiration()) batch.push_back(std::move(*response_.mutable_expiration()));
    for (v1::Expiration& e : *response_.mutable_expirations()) batch.push_back(std::move(e));
    response_.Clear();
    relay_->OnExpirations(member_, std::move(batch));
    StartRead(&response_);
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {
        done_writing_ = true;  // The stream is ending; acks not sent mean redeliveries, never losses.
        return;
      }
      if (pending_.empty()) return;
      writing_ = true;
      FillAckLocked();
    }
    StartWrite(&request_);
  }

  void OnDone(const grpc::Status& status) override {
    relay_->OnUpstreamDone(this, member_, status);
    delete this;
  }

 private:
  void FillAckLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    request_.Clear();
    auto* ids = request_.mutable_ack()->mutable_delivery_ids();
    ids->Reserve(static_cast<int>(pending_.size()));
    for (uint64_t id : pending_) ids->Add(id);
    pending_.clear();
  }

  const std::shared_ptr<SubscriptionRelay> relay_;
  const std::string member_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
  grpc::ClientContext context_;
  v1::SubscribeResponse response_;  // Read chain only.
  absl::Mutex mu_;
  v1::SubscribeRequest request_;  // Being written while writing_; gRPC reads it until OnWriteDone.
  std::vector<uint64_t> pending_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_writing_ ABSL_GUARDED_BY(mu_) = false;
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
    : router_(router), metadata_(std::move(metadata)), wake_(std::move(wake)) {
  *open_.mutable_open() = open;
}

SubscriptionRelay::~SubscriptionRelay() = default;

void SubscriptionRelay::Maintain() {
  const std::shared_ptr<const ClusterMap> map = router_.node().map();
  std::vector<Upstream*> started;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    for (const auto& [member, address] : map->live) {
      if (member == map->self || upstreams_.contains(member)) continue;
      auto* upstream = new Upstream(shared_from_this(), member, router_.Channel(address));
      upstreams_.emplace(member, upstream);
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
      uint64_t relay_id;
      if (observe) {
        relay_id = next_id_++;  // Copies are not acked: nothing to remember.
      } else {
        auto [it, inserted] = relay_ids_.try_emplace({member, e.delivery_id()}, next_id_);
        if (inserted) {
          ++next_id_;
          origins_.emplace(it->second, Origin{member, e.delivery_id()});
        }
        relay_id = it->second;
      }
      if (next_id_ >= kRelayIdLimit) next_id_ = 1;  // 2^40 relayed expirations on one stream: start over.
      e.set_delivery_id(relay_id);
      ready_.push_back(std::move(e));
    }
  }
  wake_();
}

size_t SubscriptionRelay::Take(size_t max, std::vector<v1::Expiration>* out) {
  absl::MutexLock lock(&mu_);
  size_t taken = 0;
  while (taken < max && !ready_.empty()) {
    out->push_back(std::move(ready_.front()));
    ready_.pop_front();
    ++taken;
  }
  return taken;
}

void SubscriptionRelay::Ack(const std::vector<uint64_t>& relay_ids) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::vector<uint64_t>> by_member;
  for (uint64_t id : relay_ids) {
    auto it = origins_.find(id);
    if (it == origins_.end()) continue;  // Unknown, or its upstream ended (the member redelivers it).
    by_member[it->second.member].push_back(it->second.id);
    relay_ids_.erase({it->second.member, it->second.id});
    origins_.erase(it);
  }
  for (auto& [member, ids] : by_member) {
    auto upstream = upstreams_.find(member);
    if (upstream != upstreams_.end()) upstream->second->Ack(ids);
  }
}

void SubscriptionRelay::Stop() {
  absl::MutexLock lock(&mu_);
  if (stopped_) return;
  stopped_ = true;
  ready_.clear();
  for (auto& [member, upstream] : upstreams_) upstream->Cancel();
}

void SubscriptionRelay::OnUpstreamDone(Upstream* upstream, const std::string& member, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  auto it = upstreams_.find(member);
  if (it != upstreams_.end() && it->second == upstream) upstreams_.erase(it);
  // What that member had in flight to this relay goes back to its outbox: forget it here (still-queued ones
  // too, so the downstream never acks what the member no longer holds for this stream).
  absl::flat_hash_set<uint64_t> forgotten;
  for (auto o = relay_ids_.lower_bound({member, 0}); o != relay_ids_.end() && o->first.first == member;) {
    origins_.erase(o->second);
    forgotten.insert(o->second);
    o = relay_ids_.erase(o);
  }
  std::erase_if(ready_, [&](const v1::Expiration& e) { return forgotten.contains(e.delivery_id()); });
  if (!stopped_ && !status.ok()) {
    spdlog::debug("subscription relay: stream from member {} ended: {}; reconnecting", member,
                  status.error_message());
  }
}

}  // namespace lawn
