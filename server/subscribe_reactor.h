// SubscribeReactor: one Subscribe stream. Reads `open` then `ack`s; writes expirations taken from its
// namespace's Outbox, one write in flight at a time.
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

#include <memory>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.pb.h"
#include "server/auth.h"
#include "server/delivery.h"
#include "server/stream_registry.h"

namespace lawn {

class Outbox;
class Runtime;
class NamespaceState;
class SubscribeReactor;

class SubscribeReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `admission`: OK, or why new streams are refused now (unauthenticated, recovering, draining): the stream
  // ends with it. `caller` opens the stream only with the subscribe (observe) permission on its namespace.
  SubscribeReactor(Runtime& runtime, StreamRegistry& registry, const grpc::Status& admission, Caller caller,
                   const Authenticator& auth);

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
