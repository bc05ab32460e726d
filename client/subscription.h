// Subscription: one Subscribe stream of lawn.v1.TimerService, run on threads of its own.
//
// The stream sends `open`, then hands every expiration it receives to the caller's callback, one at a time
// and in arrival order, and acks it (SubscribeOptions::auto_ack) once the callback has returned. By default
// it asks lawnd for batched responses (SubscribeOptions::max_batch: several expirations per message, as many
// as are ready); the callback sees them one by one either way. Acks that pile up while the callback runs go
// out together in one `ack` message; they are sent at the latest when nothing else is waiting for the
// callback, or once half the in-flight window is acked, so the stream never sits on a full in-flight window
// of finished work and no ack waits for expirations that may never come.
//
// Two threads per subscription: a reader (blocking Read, queues at most max_in_flight expirations) and a
// dispatcher (runs the callback, writes acks; the only writer on the stream). The callback runs on the
// dispatcher thread and never concurrently with itself.
//
// Stop is graceful: acks of finished callbacks are written, then the client half-closes and lawnd ends the
// stream with OK; expirations received but not yet handed to the callback are dropped unacked, and lawnd
// gives them to another subscriber when the stream closes. If lawnd does not close within kStopGrace, the
// stream is cancelled.
//
// Thread-safety: every public method may be called from any thread. Ack and Stop may also be called from the
// callback; Wait, WaitFor and the destructor must not be (they would wait for the callback to return).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "lawn/v1/timer.pb.h"

namespace lawn {

struct SubscribeOptions {
  // Unacked expirations lawnd may hand this stream at once, 1..lawnd's max_in_flight; 0 lets lawnd pick
  // (100). Also bounds the expirations the client buffers ahead of the callback.
  uint32_t max_in_flight = 100;
  // Receive a best-effort copy of every expiration instead of sharing the work; nothing is acked.
  bool observe = false;
  // Ack each expiration when the callback returns. With false the caller acks with Subscription::Ack.
  bool auto_ack = true;
  // Expirations lawnd may put in one response (open.max_batch): up to this many of those ready when it
  // writes, never waiting for more; lawnd caps it at 1000, at half of max_in_flight (unless observing) and
  // at about 1 MiB per response. 0: one per response (the shape from before batching). The callback is
  // called once per expiration either way. A batched response can be about 1 MiB: keep
  // ClientOptions::max_message_bytes (the channel's receive limit) above that.
  uint32_t max_batch = 1000;
};

class Subscription {
 public:
  using Callback = std::function<void(const v1::Expiration&)>;

  // How long a graceful Stop waits for lawnd to end the stream before cancelling it.
  static constexpr std::chrono::milliseconds kStopGrace{2000};

  // Starts the stream on `channel` (shared, so the subscription may outlive the LawnClient that made it),
  // with `authorization: Bearer <token>` metadata unless `token` is empty (client/client_security.h). Returns
  // at once; connection, `open` and auth errors (UNAUTHENTICATED, PERMISSION_DENIED) arrive through Wait.
  // REQUIRES: ValidateToken(token).ok().
  Subscription(std::shared_ptr<grpc::Channel> channel, std::string ns, SubscribeOptions options,
               Callback on_expiration, std::string_view token = {});
  // Stop(). REQUIRES: not called from the callback.
  ~Subscription();

  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Acks `delivery_id` (Expiration::delivery_id). Never blocks on the network: the ack is queued and written
  // by the stream's thread, together with others that are waiting. Ignored in observe mode and after the
  // stream has ended. Acking an id twice, or an id lawnd does not know, is harmless.
  void Ack(uint64_t delivery_id);

  // Ends the stream (see the top of the file) and, unless called from the callback, waits until the callback
  // has returned for the last time and both threads are gone. Idempotent. When called from the callback it
  // only requests the stop: the current expiration is still auto-acked and no further one is delivered.
  void Stop();

  // Blocks until the stream has ended and returns how: OK when lawnd closed it gracefully (including after
  // Stop), CANCELLED if Stop had to cancel it, otherwise lawnd's or the transport's status (UNAVAILABLE when
  // lawnd is unreachable or draining, INVALID_ARGUMENT for a bad namespace or max_in_flight, ...).
  absl::Status Wait();
  // Like Wait, but gives up after `timeout`: nullopt while the stream is still running.
  std::optional<absl::Status> WaitFor(std::chrono::nanoseconds timeout);

 private:
  using Stream = grpc::ClientReaderWriter<v1::SubscribeRequest, v1::SubscribeResponse>;

  void Dispatch();  // Body of the dispatcher thread.
  void ReadAll();   // Body of the reader thread.
  // Runs the callback / writes acks until the stream ends or a stop is requested.
  void DeliverUntilDone() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes `ids` as one `ack`; false once the stream is broken.
  bool WriteAcks(std::vector<uint64_t> ids);
  // The ack batch to write now, or empty when acks should keep accumulating.
  std::vector<uint64_t> TakeAcksToWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<v1::TimerService::Stub> stub_;
  const std::string namespace_;
  const SubscribeOptions options_;
  const size_t buffer_limit_;     // Expirations the reader may queue ahead of the callback.
  const size_t ack_batch_limit_;  // Acks written at once even while expirations wait for the callback.
  const Callback on_expiration_;

  grpc::ClientContext context_;  // TryCancel is thread-safe; the rest is used by the dispatcher only.
  std::unique_ptr<Stream>
      stream_;  // Set by the dispatcher before the reader starts; Read by the reader only.

  mutable absl::Mutex mu_;
  std::deque<v1::Expiration> received_ ABSL_GUARDED_BY(mu_);  // Not yet handed to the callback.
  std::vector<uint64_t> pending_acks_ ABSL_GUARDED_BY(mu_);   // Not yet written.
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;             // Read returned false.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;                // Stop was called.
  bool streaming_ ABSL_GUARDED_BY(mu_) = false;               // The dispatcher reached its delivery loop.
  bool done_ ABSL_GUARDED_BY(mu_) = false;                    // Finish returned; status_ is final.
  absl::Status status_ ABSL_GUARDED_BY(mu_);

  std::thread::id dispatcher_id_ ABSL_GUARDED_BY(mu_);  // Set by the dispatcher itself when it starts.

  absl::Mutex join_mu_;  // Serializes the join of dispatcher_ by concurrent Stop calls.
  std::thread dispatcher_ ABSL_GUARDED_BY(join_mu_);  // Owns and joins the reader thread.
};

}  // namespace lawn
