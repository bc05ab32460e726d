// TimerBatcher: a batching publisher for StartTimer (issue 11). Many threads call StartTimer, each for one
// timer; the batcher coalesces the timers queued meanwhile into StartTimers RPCs, as the Kafka and Pub/Sub
// producers do, and resolves each timer's future with that timer's own result.
//
// How a timer travels. StartTimer copies the request into the open batch and returns a future. The open
// batch is sealed when it holds max_batch timers or max_batch_bytes bytes, or by Flush / Close; sealed
// batches are sent in order as soon as fewer than max_in_flight StartTimers calls are in flight. A batch
// that is not full goes once it has lingered max_linger since its first timer (at once with max_linger 0),
// a call slot is free and no other such partial batch is in flight: as in Nagle's algorithm, at most one
// partial batch is on the wire, and the timers arriving meanwhile pile up into the next call. So a lone timer
// leaves at once, callers that each wait for their answer (unary style) get batches about as large as their
// number, and a steady stream fills batches to max_batch, which use every slot. Nothing is retried: a timer
// lawnd refused, or a call that failed, resolves with the error.
//
// Results. Each future resolves exactly once, with lawnd's per-item result for that timer (OK, or its own
// code and message: ALREADY_EXISTS, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...) or, when the whole call
// failed, with the call's status (UNAVAILABLE, DEADLINE_EXCEEDED, UNAUTHENTICATED, ...) for every timer of
// that call. Only code and message are read from a StartTimersResult, never its timer; a caller that needs
// the stored deadline reads it back (LawnClient::GetTimer) or uses LawnClient::StartTimer.
//
// Flow control. At most max_pending timers are held (queued or in flight); StartTimer beyond that fails at
// once with RESOURCE_EXHAUSTED instead of blocking the caller, so a stalled lawnd turns into errors a caller
// can see and back off from rather than into threads stuck inside StartTimer.
//
// Threads and memory. RPCs use gRPC's callback API: no thread blocks per call; results are resolved on
// gRPC's callback threads. With max_linger > 0 one thread of the batcher's own wakes up when the open batch's
// linger ends. Batches are pooled and reused, their vectors keeping their capacity; a batch's request keeps
// its cleared timer messages, whose strings keep theirs, so once the pool is warm copying a timer in
// allocates only its ttl or deadline (and interval) sub-message, and the rvalue StartTimer, which swaps the
// request in, nothing. Add the promise behind each future: that is all a timer costs in allocations.
//
// Thread-safety: every method may be called from any number of threads at once. Destruction is Close() and
// must not race with other calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "lawn/v1/timer.pb.h"

namespace lawn {

// lawnd refuses a StartTimers call of more timers than this (server/timer_service.cc).
inline constexpr size_t kMaxTimersPerStartTimersCall = 10000;

struct BatcherOptions {
  // Most timers per StartTimers call. Allowed 1..10000 (lawnd's per-call limit). Default 100.
  size_t max_batch = 100;
  // Most bytes of timers per call (their serialized size plus framing); a single larger timer still goes,
  // alone. Keep it well below lawnd's and the channel's max_message_bytes (both 4MiB by default). Allowed
  // 1KiB..64MiB. Default 1MiB.
  size_t max_batch_bytes = 1024 * 1024;
  // How long a batch that is not full waits, from its first timer, for more timers before it may go. Zero:
  // as soon as it may (see the top of this file). A linger adds its length to every call of callers that
  // wait for each answer (BENCHMARKS.md section 11); it pays for producers that queue many timers without
  // waiting and want fewer, fuller calls. Allowed 0..60s. Default 0.
  std::chrono::nanoseconds max_linger = std::chrono::nanoseconds::zero();
  // Most StartTimers calls in flight at once. Allowed 1..1000 (lawnd's grpc_max_concurrent_streams default).
  // Default 4.
  int max_in_flight = 4;
  // Most timers held at once, queued or in flight; StartTimer beyond it fails with RESOURCE_EXHAUSTED.
  // Allowed 1..10'000'000. Default 10'000.
  size_t max_pending = 10000;
  // Deadline of each StartTimers call, counted from when it is sent (time queued before is not counted).
  // Zero or negative: no deadline. Default 10s.
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);
  // How long Close (and so the destructor) waits for queued and in-flight timers before it cancels them.
  // Allowed 0..1h. Default 10s.
  std::chrono::nanoseconds close_timeout = std::chrono::seconds(10);
  // Bearer token sent with every call (ClientOptions::token); empty: none. Visible ASCII only. (The `= {}`
  // spares designated initializers that omit it GCC 12's -Wmissing-field-initializers.)
  std::string token = {};
};

// OK, or INVALID_ARGUMENT naming the option that is out of range (and the allowed range), or a bad token.
absl::Status ValidateBatcherOptions(const BatcherOptions& options);

// Counters since construction; a snapshot.
struct BatcherStats {
  uint64_t calls = 0;   // StartTimers calls sent.
  uint64_t timers = 0;  // Timers sent in them.
};

class TimerBatcher {
 public:
  // A batcher sending over `channel` (e.g. LawnClient::channel(), whose TLS settings it shares; the token is
  // options.token, not the client's). INVALID_ARGUMENT when ValidateBatcherOptions(options) fails.
  static absl::StatusOr<std::unique_ptr<TimerBatcher>> Create(std::shared_ptr<grpc::Channel> channel,
                                                              const BatcherOptions& options = {});
  // REQUIRES: ValidateBatcherOptions(options).ok(); aborts with the message otherwise (options read from
  // configuration go through Create, which returns the error instead).
  explicit TimerBatcher(std::shared_ptr<grpc::Channel> channel, const BatcherOptions& options = {});
  // Close(), then waits for the linger thread.
  ~TimerBatcher();

  TimerBatcher(const TimerBatcher&) = delete;
  TimerBatcher& operator=(const TimerBatcher&) = delete;

  // Queues the timer `request` describes and returns a future resolved with its own result (see the top of
  // this file): never blocks on the network. A future that is ready at once with RESOURCE_EXHAUSTED when
  // max_pending timers are held, or FAILED_PRECONDITION after Close. The rvalue form swaps the request into
  // the batch instead of copying it (`request` is left empty).
  std::future<absl::Status> StartTimer(const v1::StartTimerRequest& request);
  std::future<absl::Status> StartTimer(v1::StartTimerRequest&& request);

  // Seals the open batch (ignoring the linger) and waits until every timer queued before the call is
  // resolved, or `timeout` passes. OK, or DEADLINE_EXCEEDED when time ran out (those timers stay queued or in
  // flight and resolve later). Timers queued by other threads meanwhile do not extend the wait.
  absl::Status Flush(std::chrono::nanoseconds timeout = std::chrono::seconds(30));

  // Rejects new timers, sends every queued one and waits up to options.close_timeout for all answers. OK
  // when every timer was answered (whatever each answer was). Otherwise DEADLINE_EXCEEDED: the calls in
  // flight are cancelled (their timers resolve CANCELLED; lawnd may have started some of them) and timers
  // never sent resolve DEADLINE_EXCEEDED. Either way every future is resolved when Close returns. Idempotent.
  absl::Status Close();

  BatcherStats stats();

 private:
  struct Batch;
  using Sends = absl::InlinedVector<Batch*, 8>;

  // Queues a copy of `request`, or swaps it out of `*swap_from` (== &request) when not null.
  std::future<absl::Status> Enqueue(const v1::StartTimerRequest& request, v1::StartTimerRequest* swap_from);
  // A fresh (empty) open batch from the pool.
  Batch* NewBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the open batch, if it holds timers, to the sealed queue and opens another.
  void Seal() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the batches that may go now (sealed ones first, then the open one if its linger is over) while a
  // call slot is free, and prepares their contexts; the caller sends them with Send after unlocking.
  void Dispatch(Sends& sends) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the calls. Never under mu_: gRPC may run a completion inline, and OnDone takes mu_.
  void Send(const Sends& sends) ABSL_LOCKS_EXCLUDED(mu_);
  void OnDone(Batch* batch, const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns a batch whose call is over (or that was never sent) to the pool.
  void Recycle(Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Id of the oldest batch not yet answered; UINT64_MAX when there is none.
  uint64_t OldestUnanswered() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool Idle() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The linger thread: seals nothing itself, it marks the open batch due when its linger ends and sends it.
  void LingerLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const BatcherOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::TimerService::Stub> stub_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Batch>> batches_ ABSL_GUARDED_BY(mu_);  // Owns every batch ever made.
  std::vector<Batch*> spare_ ABSL_GUARDED_BY(mu_);                    // Empty batches ready for reuse.
  Batch* open_ ABSL_GUARDED_BY(mu_) = nullptr;                        // Never null.
  bool open_due_ ABSL_GUARDED_BY(mu_) = false;  // The open batch's linger is over.
  int partial_in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // Calls in flight sent from the open batch: 0 or 1.
  std::deque<Batch*> sealed_ ABSL_GUARDED_BY(mu_);                    // In id order.
  std::vector<Batch*> in_flight_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;  // Ids go to batches when they get their first timer.
  size_t pending_ ABSL_GUARDED_BY(mu_) = 0;    // Timers queued or in flight.
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Close timed out: nothing more is sent, and contexts of finished calls are kept (not destroyed) so that
  // Close can cancel the calls it saw in flight without racing OnDone.
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  BatcherStats stats_ ABSL_GUARDED_BY(mu_);

  std::thread linger_thread_;  // Runs while max_linger > 0 and not closed.
};

}  // namespace lawn
