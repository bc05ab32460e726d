#include "client/timer_batcher.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/time/time.h"
#include "client/client_security.h"
#include "client/grpc_status.h"

namespace lawn {

// One StartTimers call's worth of timers, from the first timer queued to the answer; pooled and reused.
struct TimerBatcher::Batch {
  uint64_t id = 0;  // 0 while empty.
  std::chrono::steady_clock::time_point opened;  // When the first timer came (read only with a linger).
  size_t bytes = 0;  // Serialized size of request's timers, framing included.
  bool partial = false;  // Sent from the open batch (not sealed): counted in partial_in_flight_.
  // Cleared, never destroyed, between uses: RepeatedPtrField keeps the cleared timer messages, and add_timers
  // hands them out again.
  v1::StartTimersRequest request;
  v1::StartTimersResponse response;
  std::vector<std::promise<absl::Status>> promises;  // promises[i] belongs to request.timers(i).
  // The call's context, made under mu_ by Dispatch; destroyed by OnDone (outside mu_), or kept until the
  // batcher's destruction once cancelling_ is set.
  std::unique_ptr<grpc::ClientContext> context;
  // Send stores (release) and OnDone loads (acquire): gRPC orders a call's start before its completion, but
  // inside its uninstrumented core; this pair states that order where ThreadSanitizer can see it. One atomic
  // per call.
  std::atomic<uint64_t> sent{0};

  size_t size() const { return promises.size(); }
  bool empty() const { return promises.empty(); }
};

namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
// Framing of one timer inside StartTimersRequest: the field tag (1 byte) and the length varint (<= 5).
constexpr size_t kItemFraming = 6;

std::future<absl::Status> Resolved(absl::Status status) {
  std::promise<absl::Status> promise;
  promise.set_value(std::move(status));
  return promise.get_future();
}

// One StartTimersResult's code and message as a Status; codes outside the canonical range become UNKNOWN
// (as FromGrpcStatus does for a call's status).
absl::Status ItemStatus(const v1::StartTimerResult& result) {
  const int32_t code = result.code();
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError("code " + std::to_string(code) + ": " + result.message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), result.message());
}

std::string Range(const char* name, const std::string& value, const char* allowed) {
  return std::string(name) + ": " + value + "; allowed " + allowed;
}

}  // namespace

absl::Status ValidateBatcherOptions(const BatcherOptions& o) {
  using std::chrono::nanoseconds;
  if (o.max_batch < 1 || o.max_batch > kMaxTimersPerStartTimersCall) {
    return absl::InvalidArgumentError(Range("max_batch", std::to_string(o.max_batch), "1..10000"));
  }
  if (o.max_batch_bytes < 1024 || o.max_batch_bytes > 64 * 1024 * 1024) {
    return absl::InvalidArgumentError(
        Range("max_batch_bytes", std::to_string(o.max_batch_bytes), "1024..67108864 (1KiB..64MiB)"));
  }
  if (o.max_linger < nanoseconds::zero() || o.max_linger > std::chrono::seconds(60)) {
    return absl::InvalidArgumentError(
        Range("max_linger", std::to_string(o.max_linger.count()) + "ns", "0..60s"));
  }
  if (o.max_in_flight < 1 || o.max_in_flight > 1000) {
    return absl::InvalidArgumentError(Range("max_in_flight", std::to_string(o.max_in_flight), "1..1000"));
  }
  if (o.max_pending < 1 || o.max_pending > 10'000'000) {
    return absl::InvalidArgumentError(Range("max_pending", std::to_string(o.max_pending), "1..10000000"));
  }
  if (o.close_timeout < nanoseconds::zero() || o.close_timeout > std::chrono::hours(1)) {
    return absl::InvalidArgumentError(
        Range("close_timeout", std::to_string(o.close_timeout.count()) + "ns", "0..1h"));
  }
  return ValidateToken(o.token);
}

absl::StatusOr<std::unique_ptr<TimerBatcher>> TimerBatcher::Create(std::shared_ptr<grpc::Channel> channel,
                                                                   const BatcherOptions& options) {
  if (absl::Status s = ValidateBatcherOptions(options); !s.ok()) return s;
  return std::make_unique<TimerBatcher>(std::move(channel), options);
}

TimerBatcher::TimerBatcher(std::shared_ptr<grpc::Channel> channel, const BatcherOptions& options)
    : options_(options), channel_(std::move(channel)), stub_(v1::TimerService::NewStub(channel_)) {
  if (absl::Status s = ValidateBatcherOptions(options_); !s.ok()) {
    std::fprintf(stderr, "TimerBatcher: %s\n", s.ToString().c_str());
    std::abort();  // A broken REQUIRES: the caller passed options it had not validated.
  }
  {
    absl::MutexLock lock(&mu_);
    in_flight_.reserve(static_cast<size_t>(options_.max_in_flight));
    open_ = NewBatch();
  }
  if (options_.max_linger > std::chrono::nanoseconds::zero()) {
    linger_thread_ = std::thread([this] { LingerLoop(); });
  }
}

TimerBatcher::~TimerBatcher() {
  Close().IgnoreError();  // Every future is resolved either way; the status only says how.
  if (linger_thread_.joinable()) linger_thread_.join();
}

std::future<absl::Status> TimerBatcher::StartTimer(const v1::StartTimerRequest& request) {
  return Enqueue(request, nullptr);
}

std::future<absl::Status> TimerBatcher::StartTimer(v1::StartTimerRequest&& request) {
  return Enqueue(request, &request);
}

std::future<absl::Status> TimerBatcher::Enqueue(const v1::StartTimerRequest& request,
                                                v1::StartTimerRequest* swap_from) {
  const size_t bytes = request.ByteSizeLong() + kItemFraming;  // Outside the lock: it reads only `request`.
  std::future<absl::Status> future;
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return Resolved(absl::FailedPreconditionError("TimerBatcher is closed"));
    if (pending_ >= options_.max_pending) {
      return Resolved(absl::ResourceExhaustedError(
          "TimerBatcher holds max_pending (" + std::to_string(options_.max_pending) +
          ") timers not yet answered; retry later or raise BatcherOptions::max_pending"));
    }
    if (!open_->empty() && open_->bytes + bytes > options_.max_batch_bytes) Seal();
    Batch& batch = *open_;
    if (batch.empty()) {
      batch.id = next_id_++;
      if (options_.max_linger > std::chrono::nanoseconds::zero()) batch.opened = std::chrono::steady_clock::now();
    }
    v1::StartTimerRequest* item = batch.request.add_timers();
    if (swap_from != nullptr) {
      item->Swap(swap_from);
    } else {
      item->CopyFrom(request);
    }
    batch.bytes += bytes;
    future = batch.promises.emplace_back().get_future();
    ++pending_;
    if (batch.size() >= options_.max_batch) Seal();
    Dispatch(sends);
  }
  Send(sends);
  return future;
}

TimerBatcher::Batch* TimerBatcher::NewBatch() {
  if (!spare_.empty()) {
    Batch* batch = spare_.back();
    spare_.pop_back();
    return batch;
  }
  // No reserve: batches sealed by max_batch_bytes may stay small, and reuse keeps what each grew to.
  batches_.push_back(std::make_unique<Batch>());
  return batches_.back().get();
}

void TimerBatcher::Seal() {
  if (open_->empty()) return;
  sealed_.push_back(open_);
  open_ = NewBatch();
  open_due_ = false;
}

void TimerBatcher::Dispatch(Sends& sends) {
  while (!cancelling_ && in_flight_.size() < static_cast<size_t>(options_.max_in_flight)) {
    Batch* batch;
    if (!sealed_.empty()) {
      batch = sealed_.front();
      sealed_.pop_front();
    } else if (!open_->empty() && partial_in_flight_ == 0 &&
               (open_due_ || options_.max_linger <= std::chrono::nanoseconds::zero())) {
      batch = open_;
      batch->partial = true;
      ++partial_in_flight_;
      open_ = NewBatch();
      open_due_ = false;
    } else {
      break;
    }
    batch->context = std::make_unique<grpc::ClientContext>();
    if (options_.timeout > std::chrono::nanoseconds::zero()) {
      batch->context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
    }
    AddBearerToken(options_.token, *batch->context);
    in_flight_.push_back(batch);
    ++stats_.calls;
    stats_.timers += batch->size();
    sends.push_back(batch);
  }
}

void TimerBatcher::Send(const Sends& sends) {
  // A batch in `sends` is in in_flight_, so no other thread touches its request, response or context until
  // OnDone; Close may call context->TryCancel, which gRPC synchronizes with the call's start.
  for (Batch* batch : sends) {
    batch->sent.store(batch->id, std::memory_order_release);
    stub_->async()->StartTimers(batch->context.get(), &batch->request, &batch->response,
                                [this, batch](grpc::Status status) { OnDone(batch, status); });
  }
}

void TimerBatcher::OnDone(Batch* batch, const grpc::Status& status) {
  // The batch is ours until it leaves in_flight_ below: resolve its futures without holding mu_.
  batch->sent.load(std::memory_order_acquire);
  const size_t n = batch->size();
  if (!status.ok()) {
    const absl::Status error = FromGrpcStatus(status);
    for (std::promise<absl::Status>& p : batch->promises) p.set_value(error);
  } else if (static_cast<size_t>(batch->response.results_size()) != n) {
    const absl::Status error = absl::InternalError(
        "StartTimers: lawnd answered " + std::to_string(batch->response.results_size()) + " results for " +
        std::to_string(n) + " timers");
    for (std::promise<absl::Status>& p : batch->promises) p.set_value(error);
  } else {
    for (size_t i = 0; i < n; ++i) {
      batch->promises[i].set_value(ItemStatus(batch->response.results(static_cast<int>(i))));
    }
  }
  // The context goes while the batch still counts as in flight, so the batcher (and its channel) outlive it.
  // Destroyed after the batch left in_flight_, it could hold the channel's last reference once Close returned
  // and the owner dropped the batcher and its channel: ~Channel on this, gRPC's own callback thread, shuts
  // down the completion queue that thread polls (gRPC 1.51: SIGSEGV in grpc_completion_queue_next, about 1
  // run in 130 of BatcherIntegrationTest). Once cancelling_ is set, Close holds the contexts instead.
  std::unique_ptr<grpc::ClientContext> context;
  {
    absl::MutexLock lock(&mu_);
    if (!cancelling_) context = std::move(batch->context);
  }
  context.reset();  // Inside its own completion: gRPC holds its own reference to the call until we return.
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), batch));
    if (batch->partial) --partial_in_flight_;
    pending_ -= n;
    Recycle(batch);
    Dispatch(sends);
  }
  // After the unlock `this` may be gone (Close saw the batcher idle), unless `sends` holds a call in flight.
  Send(sends);
}

void TimerBatcher::Recycle(Batch* batch) {
  batch->id = 0;
  batch->bytes = 0;
  batch->partial = false;
  batch->request.mutable_timers()->Clear();
  batch->response.Clear();
  batch->promises.clear();
  spare_.push_back(batch);
}

uint64_t TimerBatcher::OldestUnanswered() const {
  uint64_t oldest = kNone;
  for (const Batch* batch : in_flight_) oldest = std::min(oldest, batch->id);
  if (!sealed_.empty()) oldest = std::min(oldest, sealed_.front()->id);
  if (!open_->empty()) oldest = std::min(oldest, open_->id);
  return oldest;
}

bool TimerBatcher::Idle() const { return in_flight_.empty() && sealed_.empty() && open_->empty(); }

absl::Status TimerBatcher::Flush(std::chrono::nanoseconds timeout) {
  Sends sends;
  uint64_t last;
  {
    absl::MutexLock lock(&mu_);
    Seal();
    last = next_id_ - 1;  // Every timer queued so far is in a batch with an id <= last.
    Dispatch(sends);
  }
  Send(sends);
  const auto answered = [this, last] {
    mu_.AssertReaderHeld();
    return OldestUnanswered() > last;
  };
  absl::MutexLock lock(&mu_);
  if (mu_.AwaitWithTimeout(absl::Condition(&answered), absl::FromChrono(timeout))) return absl::OkStatus();
  return absl::DeadlineExceededError("TimerBatcher::Flush: timers still unanswered after " +
                                     absl::FormatDuration(absl::FromChrono(timeout)));
}

absl::Status TimerBatcher::Close() {
  Sends sends;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    Seal();
    Dispatch(sends);
  }
  Send(sends);
  const auto idle = [this] {
    mu_.AssertReaderHeld();
    return Idle();
  };
  std::vector<Batch*> unsent;
  std::vector<grpc::ClientContext*> to_cancel;
  {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&idle), absl::FromChrono(options_.close_timeout))) {
      return absl::OkStatus();
    }
    // Time is up. From here on nothing is sent and no context is destroyed before the destructor, so the
    // contexts collected below stay valid while they are cancelled outside mu_.
    cancelling_ = true;
    unsent.assign(sealed_.begin(), sealed_.end());
    sealed_.clear();
    for (Batch* batch : in_flight_) {
      if (batch->context != nullptr) to_cancel.push_back(batch->context.get());  // Not yet taken by OnDone.
    }
  }
  for (Batch* batch : unsent) {
    for (std::promise<absl::Status>& p : batch->promises) {
      p.set_value(absl::DeadlineExceededError("TimerBatcher closed before the timer was sent (close_timeout)"));
    }
  }
  for (grpc::ClientContext* context : to_cancel) context->TryCancel();
  absl::MutexLock lock(&mu_);
  for (Batch* batch : unsent) {
    pending_ -= batch->size();
    Recycle(batch);
  }
  // Cancelled calls complete promptly (CANCELLED), each through OnDone.
  mu_.Await(absl::Condition(&idle));
  return absl::DeadlineExceededError("TimerBatcher::Close: timers still unanswered after close_timeout (" +
                                     absl::FormatDuration(absl::FromChrono(options_.close_timeout)) +
                                     "); calls in flight cancelled");
}

BatcherStats TimerBatcher::stats() {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void TimerBatcher::LingerLoop() {
  absl::MutexLock lock(&mu_);
  while (!closed_) {
    if (open_->empty() || open_due_) {
      // Nothing to time: wait for a first timer in a (new) open batch, or for close.
      const Batch* watched = open_;
      const auto changed = [this, watched] {
        mu_.AssertReaderHeld();
        return closed_ || open_ != watched || (!open_->empty() && !open_due_);
      };
      mu_.Await(absl::Condition(&changed));
      continue;
    }
    const uint64_t id = open_->id;
    const auto due = open_->opened + options_.max_linger;
    const auto now = std::chrono::steady_clock::now();
    if (now < due) {
      const auto sealed = [this, id] {
        mu_.AssertReaderHeld();
        return closed_ || open_->id != id;
      };
      mu_.AwaitWithTimeout(absl::Condition(&sealed), absl::FromChrono(due - now));
      continue;
    }
    // The linger is over: the open batch goes now if it may (a slot is free and no other partial batch is in
    // flight), else when the call in its way finishes (OnDone dispatches it), taking in more timers meanwhile
    // up to max_batch.
    open_due_ = true;
    Sends sends;
    Dispatch(sends);
    if (!sends.empty()) {
      mu_.Unlock();
      Send(sends);
      mu_.Lock();
    }
  }
}

}  // namespace lawn
