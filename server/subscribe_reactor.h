// SubscribeReactor: one Subscribe stream. Reads `open` then `ack`s; writes expirations taken from its
// namespace's Outbox, one write in flight at a time: one per message (open.max_batch 0), or a batch of what
// is ready when the write starts (max_batch > 0; at most kMaxBatchCount, half of max_in_flight and about
// kMaxBatchBytes).
//
// The stream is raw (grpc::ByteBuffer both ways, see server/raw_call.h): the reactor parses each message
// itself, so one that does not parse ends the stream INVALID_ARGUMENT instead of looking like a half-close
// (gRPC's typed path reports both as OnReadDone(false)), and serializes each response itself.
//
// Lifetime: gRPC owns the reactor until OnDone, which deletes it. The Outbox reaches the stream only through
// a StreamHandle (shared_ptr), whose pointer to the reactor is cleared in OnDone under the handle's mutex,
// so a Wake racing with the end of the stream finds nothing to call.
//
// Thread-safety: reactions run on gRPC threads, Wake on worker threads, Close on the drain thread. Lock order:
// StreamHandle::mu_, then SubscribeReactor::mu_, then the Outbox mutex. Outbox calls that may wake other
// streams (AddSubscriber, RemoveSubscriber, Ack) are made without holding mu_.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.pb.h"
#include "server/auth.h"
#include "server/delivery.h"
#include "server/histogram_batch.h"
#include "server/metrics.h"
#include "server/stream_registry.h"

namespace lawn {

class ClusterRouter;
class Outbox;
class Runtime;
class SubscriptionRelay;
class NamespaceState;
class SubscribeReactor;

class SubscribeReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Bounds of one batched SubscribeResponse: open.max_batch above kMaxBatchCount means kMaxBatchCount, and a
  // batch stops before the expiration that would take it past kMaxBatchBytes (Delivery::WireBytes; a first
  // one larger than that goes alone). 1 MiB keeps a batch well inside gRPC's default 4 MiB receive limit.
  static constexpr uint32_t kMaxBatchCount = 1000;
  static constexpr uint64_t kMaxBatchBytes = 1 << 20;
  // A response whose expirations took more than this on the wire is not kept for reuse (TrySend).
  static constexpr uint64_t kMaxReusedBytes = 256 << 10;
  // The most expirations one response of a stream may carry: open.max_batch, at most kMaxBatchCount and, for
  // a subscriber (not an observer), at most half its max_in_flight, so that a second batch can be on its way
  // while the first is being acked. 0 (one per message) stays 0.
  static uint32_t BatchBound(uint32_t max_batch, uint32_t max_in_flight, bool observe);

  // `admission`: OK, or why new streams are refused now (unauthenticated, recovering, draining): the stream
  // ends with it. `caller` opens the stream only with the subscribe (observe) permission on its namespace.
  // Cluster mode: with `relay_router` (not owned), the stream also receives the namespace's expirations
  // from every other member (server/subscription_relay.h); `relay_metadata` (the caller's authorization) goes
  // along to them. `relayed`: the stream is another member's relay (counted apart in the stats).
  SubscribeReactor(Runtime& runtime, StreamRegistry& registry, const grpc::Status& admission, Caller caller,
                   const Authenticator& auth, ClusterRouter* relay_router = nullptr,
                   std::vector<std::pair<std::string, std::string>> relay_metadata = {}, bool relayed = false);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // Sends the next expiration if no write is in flight. Any thread.
  void TrySend();
  // Ends the stream with `status` (once). Any thread.
  void Close(const grpc::Status& status);
  // Ends an open stream whose caller lost its permission (tokens file reloaded). Any thread that holds no
  // stream's mutex (Close may wake other streams).
  void Recheck();

 private:
  class StreamHandle;

  void Open(const v1::SubscribeRequest::Open& open);
  // The next message of response_ to fill (the shape max_batch_ asks for), reused from the last write when
  // it has one; counts it in filled_.
  v1::Expiration* NextMessage() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets every field of `e` from `d` (called by the outbox, under its lock: nothing slow here).
  void FillExpiration(const Delivery& d, v1::Expiration* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After response_ is serialized: deletes the messages relayed_ was swapped into, and empties relayed_.
  void DropRelayed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const bool from_member_;  // The `relayed` of the constructor.
  Runtime& runtime_;
  StreamRegistry& registry_;
  const Caller caller_;
  std::string open_ns_ ABSL_GUARDED_BY(mu_);  // The namespace as `open` named it (for Recheck).
  bool open_observe_ ABSL_GUARDED_BY(mu_) = false;
  const Authenticator& auth_;
  // Only touched by the read chain (one read in flight).
  grpc::ByteBuffer read_buf_;
  v1::SubscribeRequest request_;
  uint64_t messages_read_ = 0;  // Numbers messages in errors, from 1.

  absl::Mutex mu_;
  // Expirations per response (open.max_batch, capped); 0: one, in the original `expiration` field.
  uint32_t max_batch_ ABSL_GUARDED_BY(mu_) = 0;
  int filled_ ABSL_GUARDED_BY(mu_) = 0;  // Messages of response_ filled for the write being prepared.
  // Seconds late of its first deliveries (for the metric), and how many of its expirations were sent before.
  HistogramBatch lateness_ ABSL_GUARDED_BY(mu_){Metrics::LatenessBuckets()};
  size_t redelivered_ ABSL_GUARDED_BY(mu_) = 0;
  // Cluster mode: expirations relayed from the other members, written after the local ones in the same
  // response.
  std::vector<v1::Expiration> relayed_ ABSL_GUARDED_BY(mu_);
  ClusterRouter* const relay_router_;
  const std::vector<std::pair<std::string, std::string>> relay_metadata_;
  std::shared_ptr<SubscriptionRelay> relay_ ABSL_GUARDED_BY(mu_);
  v1::SubscribeResponse response_ ABSL_GUARDED_BY(mu_);
  // response_ serialized; gRPC reads it from StartWrite to OnWriteDone, while writing_ keeps it unchanged.
  grpc::ByteBuffer write_buf_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<StreamHandle> handle_ ABSL_GUARDED_BY(mu_);
  NamespaceState* ns_ ABSL_GUARDED_BY(mu_) = nullptr;
  Outbox* outbox_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status close_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
