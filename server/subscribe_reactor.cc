#include "server/subscribe_reactor.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/metrics.h"
#include "server/namespaces.h"
#include "server/outbox.h"
#include "server/proto_convert.h"
#include "server/raw_call.h"
#include "server/runtime.h"
#include "server/subscription_relay.h"
#include "server/time_base.h"
#include "server/validation.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

constexpr uint32_t kDefaultMaxInFlight = 100;

}  // namespace

class SubscribeReactor::StreamHandle final : public Subscriber {
 public:
  StreamHandle(SubscribeReactor* reactor, uint32_t max_in_flight, bool observe, bool relay)
      : Subscriber(max_in_flight, observe, relay), reactor_(reactor) {}
  void Wake() override {
    absl::MutexLock lock(&mu_);
    if (reactor_ != nullptr) reactor_->TrySend();
  }
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  SubscribeReactor* reactor_ ABSL_GUARDED_BY(mu_);
};

// ---- SubscribeReactor -------------------------------------------------------------------------------------

SubscribeReactor::SubscribeReactor(Runtime& runtime, StreamRegistry& registry, const grpc::Status& admission,
                                   Caller caller, const Authenticator& auth, ClusterRouter* relay_router,
                                   std::vector<std::pair<std::string, std::string>> relay_metadata, bool relayed)
    : from_member_(relayed),
      runtime_(runtime),
      registry_(registry),
      caller_(std::move(caller)),
      auth_(auth),
      relay_router_(relay_router),
      relay_metadata_(std::move(relay_metadata)) {
  registry_.Add(this);
  const grpc::Status closing = registry_.closing_status();
  if (!closing.ok()) {
    Close(closing);
    return;
  }
  if (!admission.ok()) {
    Close(admission);
    return;
  }
  StartRead(&read_buf_);
}

void SubscribeReactor::OnReadDone(bool ok) {
  if (!ok) {  // The client half-closed or the stream broke (never a message that does not parse: see below).
    Close(grpc::Status::OK);
    return;
  }
  ++messages_read_;
  const bool parsed = ParseMessage(read_buf_, &request_);
  read_buf_.Clear();  // Not held until the next message arrives.
  if (!parsed) {
    Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "Subscribe: message " + std::to_string(messages_read_) + " is not a valid " +
                           request_.GetDescriptor()->full_name() + " (its bytes do not parse)"));
    return;
  }
  bool opened;
  {
    absl::MutexLock lock(&mu_);
    opened = handle_ != nullptr;
  }
  if (!opened) {
    if (!request_.has_open()) {
      Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first Subscribe message must be `open`"));
      return;
    }
    Open(request_.open());
    return;
  }
  if (!request_.has_ack()) {
    Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "`open` may be sent only once, as the first message; later messages must be `ack`"));
    return;
  }
  NamespaceState* ns;
  std::shared_ptr<StreamHandle> handle;
  {
    absl::MutexLock lock(&mu_);
    ns = ns_;
    handle = handle_;
  }
  std::vector<uint64_t> acked;
  const auto* ids = &request_.ack().delivery_ids();
  std::shared_ptr<SubscriptionRelay> relay;
  {
    absl::MutexLock lock(&mu_);
    relay = relay_;
  }
  google::protobuf::RepeatedField<uint64_t> own;
  if (relay != nullptr) {
    // Relayed expirations' acks go back to their members; the rest are this member's.
    for (uint64_t id : relay->Ack(std::vector<uint64_t>(ids->begin(), ids->end()))) own.Add(id);
    ids = &own;
  }
  // Only this stream's own deliveries are acked; anything else is counted and ignored.
  const AckResult result = ns->outbox.Ack(*handle, ids->data(), static_cast<size_t>(ids->size()), &acked);
  if (result.unknown + result.foreign > 0) {
    spdlog::debug("namespace '{}': ignored {} unknown and {} foreign acked ids", ns->name(), result.unknown,
                  result.foreign);
    if (Metrics* m = runtime_.metrics()) {
      if (result.unknown > 0) m->acks_ignored_unknown().Increment(static_cast<double>(result.unknown));
      if (result.foreign > 0) m->acks_ignored_foreign().Increment(static_cast<double>(result.foreign));
    }
  }
  runtime_.PersistAcks(ns, std::move(acked));
  StartRead(&read_buf_);
}

void SubscribeReactor::Open(const v1::SubscribeRequest::Open& open) {
  // Before anything is looked up: a stream learns nothing about a namespace it may not read.
  if (absl::Status s = auth_.Authorize(caller_, open.observe() ? kPermObserve : kPermSubscribe, open.namespace_(),
                                       "Subscribe");
      !s.ok()) {
    Close(ToGrpcStatus(s));
    return;
  }
  absl::StatusOr<std::string_view> ns_name = ValidateNamespace(open.namespace_());
  if (!ns_name.ok()) {
    Close(ToGrpcStatus(ns_name.status()));
    return;
  }
  const uint32_t limit = runtime_.options().max_in_flight;
  uint32_t max_in_flight = open.max_in_flight() == 0 ? std::min(kDefaultMaxInFlight, limit) : open.max_in_flight();
  if (max_in_flight > limit) {
    Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "open.max_in_flight: " + std::to_string(max_in_flight) + " is above the limit of " +
                           std::to_string(limit) + " (config key max_in_flight); 0 means " +
                           std::to_string(std::min(kDefaultMaxInFlight, limit))));
    return;
  }
  // Acquired for the life of the stream (released in OnDone): the namespace is not forgotten under it.
  absl::StatusOr<NamespaceState*> ns = runtime_.namespaces().AcquireToWatch(*ns_name);
  if (!ns.ok()) {
    Close(ToGrpcStatus(ns.status()));
    return;
  }
  const uint32_t max_subscribers = runtime_.options().max_subscribers_per_namespace;
  // Checked, not reserved: concurrent opens may pass the cap by a few (one per gRPC thread).
  if ((*ns)->outbox.subscriber_count() >= max_subscribers) {
    (*ns)->Release();
    Close(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       "namespace '" + std::string(*ns_name) + "' has max_subscribers_per_namespace (" +
                           std::to_string(max_subscribers) + ") streams attached; close some or raise the limit"));
    return;
  }
  auto handle = std::make_shared<StreamHandle>(this, max_in_flight, open.observe(), from_member_);
  const uint32_t max_batch = BatchBound(open.max_batch(), max_in_flight, open.observe());
  {
    absl::MutexLock lock(&mu_);
    if (closing_) {
      (*ns)->Release();
      return;
    }
    handle_ = handle;
    max_batch_ = max_batch;
    ns_ = *ns;
    outbox_ = &(*ns)->outbox;
    open_ns_ = open.namespace_();
    open_observe_ = open.observe();
  }
  // A reload between the check above and now would have found no handle to recheck: check again against
  // the current tokens file (once the handle is set, a reload's Recheck sees this stream).
  if (absl::Status s = auth_.Recheck(caller_, open.observe() ? kPermObserve : kPermSubscribe, open.namespace_(),
                                     "Subscribe");
      !s.ok()) {
    Close(ToGrpcStatus(s));
    return;
  }
  spdlog::debug("subscriber opened namespace '{}' (max_in_flight {}, observe {}, max_batch {})", *ns_name,
                max_in_flight, open.observe(), max_batch);
  if (relay_router_ != nullptr) {
    // The handle's Wake is safe after the stream ends (it is detached then): the relay may outlive it.
    std::weak_ptr<StreamHandle> weak = handle;
    std::shared_ptr<SubscriptionRelay> relay =
        SubscriptionRelay::Start(*relay_router_, relay_metadata_, open, [weak] {
          if (auto h = weak.lock()) h->Wake();
        });
    bool closing;
    {
      absl::MutexLock lock(&mu_);
      closing = closing_;
      if (!closing) relay_ = relay;
    }
    if (closing) relay->Stop();
  }
  StartRead(&read_buf_);
  (*ns)->outbox.AddSubscriber(handle);  // Wakes us: the first sends start here.
}

uint32_t SubscribeReactor::BatchBound(uint32_t max_batch, uint32_t max_in_flight, bool observe) {
  const uint32_t bound = std::min(max_batch, kMaxBatchCount);
  // A batch that fills the whole window leaves nothing to send until the client has read, processed and
  // acked it: one window per round trip. Half of it keeps a second batch on its way meanwhile (an
  // observer holds no window).
  if (bound == 0 || observe) return bound;
  return std::min(bound, std::max<uint32_t>(1, max_in_flight / 2));
}

void SubscribeReactor::TrySend() {
  {
    absl::MutexLock lock(&mu_);
    if (writing_ || closing_ || handle_ == nullptr) return;
    // What is ready now, never more: a batch is not waited for, so batching adds no latency.
    const size_t want = max_batch_ == 0 ? 1 : max_batch_;
    // The response's messages are reused from write to write with their submessages and strings (their
    // allocations with them), and every field is set each time. Not Clear(): off an arena, proto3's generated
    // Clear deletes the singular submessages (the Timer, its Timestamp and Durations, fired_at), which cost
    // each expiration about seven mallocs and frees on gRPC's thread (BENCHMARKS.md section 20). The outbox
    // shows each delivery to FillExpiration under its lock, so no copy of it is made (section 23).
    filled_ = 0;
    redelivered_ = 0;
    Metrics* metrics = handle_->observe ? nullptr : runtime_.metrics();
    const double wall_now = metrics != nullptr ? static_cast<double>(TimeBase::WallNowNs()) : 0.0;
    uint64_t local_bytes = 0;
    uint64_t first_id = 0;
    const size_t local =
        outbox_->NextBatch(*handle_, TimeBase::MonoNowNs(), want, kMaxBatchBytes, [&](const Delivery& d) {
          mu_.AssertHeld();  // Still ours: the outbox calls back within NextBatch.
          if (filled_ == 0) first_id = d.delivery_id;
          local_bytes += d.WireBytes();
          FillExpiration(d, NextMessage());
          if (d.attempt == 1 && metrics != nullptr) {
            // In double: a deadline near the int64 edge (1678) subtracted from now overflows int64.
            const double lateness = wall_now - static_cast<double>(d.deadline_unix_ns);
            lateness_.Add(lateness > 0 ? lateness * 1e-9 : 0.0);
          }
        });
    // Within the same byte bound as the local part: a relayed one larger than it goes alone.
    const size_t budget = local_bytes < kMaxBatchBytes ? kMaxBatchBytes - local_bytes : 0;
    const size_t relayed = relay_ != nullptr && local < want && budget > 0
                               ? relay_->Take(want - local, budget, /*first_may_exceed=*/local == 0, &relayed_)
                               : 0;
    if (local + relayed == 0) return;
    writing_ = true;
    // Relayed ones as they came (their member measured their lateness); with max_batch 0, only when no local
    // one was taken. They come last, so DropRelayed finds them at the end.
    for (v1::Expiration& e : relayed_) NextMessage()->Swap(&e);
    google::protobuf::RepeatedPtrField<v1::Expiration>* many = response_.mutable_expirations();
    if (max_batch_ != 0 && filled_ < many->size()) many->DeleteSubrange(filled_, many->size() - filled_);
    if (metrics != nullptr) lateness_.ObserveInto(metrics->expiry_lateness());
    if (redelivered_ != 0) {
      spdlog::debug("redelivering {} expiration(s) in namespace '{}'", redelivered_, outbox_->name());
    }
    // Cannot fail: a response is at most kMaxBatchBytes of expirations, or one expiration of at most its
    // payload (4 MiB, config max_payload_bytes) plus a few hundred bytes, far below protobuf's 2 GiB. Closing
    // the stream here instead would run RemoveSubscriber, which wakes other streams, while this stream's
    // StreamHandle mutex may be held (Wake): two at once deadlock.
    if (const grpc::Status s = SerializeMessage(response_, &write_buf_); !s.ok()) {
      spdlog::critical("cannot serialize {} expiration(s) from {}: {}", local + relayed, first_id,
                       s.error_message());
      std::abort();
    }
    DropRelayed();
    // Reused messages keep their strings' capacity: after a batch of large payloads, let them go, so an idle
    // stream holds a few KiB, not up to kMaxBatchBytes.
    if (local_bytes > kMaxReusedBytes) response_.Clear();
  }
  StartWrite(&write_buf_);
}

v1::Expiration* SubscribeReactor::NextMessage() {
  if (max_batch_ == 0) return response_.mutable_expiration();
  google::protobuf::RepeatedPtrField<v1::Expiration>* many = response_.mutable_expirations();
  return filled_ < many->size() ? many->Mutable(filled_++) : (++filled_, many->Add());
}

void SubscribeReactor::FillExpiration(const Delivery& d, v1::Expiration* e) {
  FillTimer(d.key, d.payload, d.deadline_unix_ns, d.ttl_ns, d.interval_ns, e->mutable_timer());
  SetTimestamp(d.fired_at_unix_ns, e->mutable_fired_at());
  e->set_delivery_id(d.delivery_id);
  e->set_attempt(d.attempt);
  e->set_late(d.late);
  if (d.attempt > 1) ++redelivered_;
}

void SubscribeReactor::DropRelayed() {
  // A relayed message was parsed from another member's stream and may carry fields this build does not know
  // (unknown fields, which a reused message would keep): its message is deleted, not reused.
  if (relayed_.empty()) return;
  if (max_batch_ == 0) {
    response_.clear_expiration();
  } else {
    google::protobuf::RepeatedPtrField<v1::Expiration>* many = response_.mutable_expirations();
    const int n = static_cast<int>(relayed_.size());
    many->DeleteSubrange(many->size() - n, n);
  }
  relayed_.clear();
}

void SubscribeReactor::OnWriteDone(bool ok) {
  grpc::Status finish_with;
  bool finish = false;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (closing_ && !finished_) {
      finished_ = true;
      finish = true;
      finish_with = close_status_;
    }
  }
  if (finish) {
    Finish(finish_with);
  } else if (!ok) {
    Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write to subscriber failed"));
  } else {
    TrySend();
  }
}

void SubscribeReactor::Close(const grpc::Status& status) {
  std::shared_ptr<SubscriptionRelay> relay;
  std::shared_ptr<StreamHandle> handle;
  Outbox* outbox;
  bool finish_now = false;
  {
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    close_status_ = status;
    handle = handle_;
    outbox = outbox_;
    relay = std::move(relay_);
    if (!writing_) {
      finished_ = true;
      finish_now = true;
    }
  }
  // The members that relayed to this stream take back what it held unacked.
  if (relay != nullptr) relay->Stop();
  // Whatever this stream held unacked goes back to the namespace's ready queue for other subscribers.
  if (outbox != nullptr) outbox->RemoveSubscriber(handle.get());
  if (finish_now) Finish(status);
}

void SubscribeReactor::Recheck() {
  std::string ns;
  bool observe;
  {
    absl::MutexLock lock(&mu_);
    if (handle_ == nullptr || closing_) return;  // Not open yet (checked at open) or ending anyway.
    ns = open_ns_;
    observe = open_observe_;
  }
  if (absl::Status s = auth_.Recheck(caller_, observe ? kPermObserve : kPermSubscribe, ns, "Subscribe"); !s.ok()) {
    Close(ToGrpcStatus(s));
  }
}

void SubscribeReactor::OnCancel() { Close(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled")); }

void SubscribeReactor::OnDone() {
  std::shared_ptr<StreamHandle> handle;
  NamespaceState* ns;
  Outbox* outbox;
  {
    absl::MutexLock lock(&mu_);
    handle = handle_;
    ns = ns_;
    outbox = outbox_;
  }
  if (handle != nullptr) handle->Detach();
  // Again (Close did it once): a Close between Open's registration and its AddSubscriber left the handle
  // in the outbox. Idempotent.
  if (handle != nullptr && outbox != nullptr) outbox->RemoveSubscriber(handle.get());
  // After Close (which detached it from the outbox): nothing of this stream uses the namespace any more.
  if (ns != nullptr) ns->Release();
  registry_.Remove(this);
  delete this;
}

}  // namespace lawn
