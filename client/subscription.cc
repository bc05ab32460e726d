#include "client/subscription.h"

#include <algorithm>
#include <utility>

#include "absl/time/time.h"
#include "client/client_security.h"
#include "client/grpc_status.h"

namespace lawn {
namespace {

// lawnd's meaning of max_in_flight 0.
constexpr uint32_t kDefaultMaxInFlight = 100;

}  // namespace

Subscription::Subscription(std::shared_ptr<grpc::Channel> channel, std::string ns, SubscribeOptions options,
                           Callback on_expiration, std::string_view token)
    : stub_(v1::TimerService::NewStub(std::move(channel))),
      namespace_(std::move(ns)),
      options_(options),
      buffer_limit_(options.max_in_flight == 0 ? kDefaultMaxInFlight : options.max_in_flight),
      ack_batch_limit_(std::max<size_t>(1, buffer_limit_ / 2)),
      on_expiration_(std::move(on_expiration)) {
  AddBearerToken(token, context_);  // Before the dispatcher starts the call with context_.
  dispatcher_ = std::thread([this] { Dispatch(); });
}

Subscription::~Subscription() { Stop(); }

void Subscription::Ack(uint64_t delivery_id) {
  if (options_.observe) return;
  absl::MutexLock lock(&mu_);
  if (reader_done_) return;  // The stream has ended: nothing can carry the ack.
  pending_acks_.push_back(delivery_id);
}

void Subscription::Stop() {
  bool from_callback;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    from_callback = std::this_thread::get_id() == dispatcher_id_;
    // Before the delivery loop nothing has been received, so nothing is lost by cancelling; and cancelling is
    // the only way to interrupt a connection attempt or a blocked `open` write.
    if (!streaming_) context_.TryCancel();
  }
  if (from_callback) return;  // The dispatcher sees stopping_ when the callback returns.
  absl::MutexLock lock(&join_mu_);
  if (dispatcher_.joinable()) dispatcher_.join();
}

absl::Status Subscription::Wait() {
  absl::MutexLock lock(&mu_, absl::Condition(&done_));
  return status_;
}

std::optional<absl::Status> Subscription::WaitFor(std::chrono::nanoseconds timeout) {
  const bool done = mu_.LockWhenWithTimeout(absl::Condition(&done_), absl::FromChrono(timeout));
  std::optional<absl::Status> status;
  if (done) status = status_;
  mu_.Unlock();
  return status;
}

void Subscription::Dispatch() {
  {
    absl::MutexLock lock(&mu_);
    dispatcher_id_ = std::this_thread::get_id();
  }
  stream_ = stub_->Subscribe(&context_);
  v1::SubscribeRequest open_request;
  v1::SubscribeRequest::Open* open = open_request.mutable_open();
  open->set_namespace_(namespace_);
  open->set_max_in_flight(options_.max_in_flight);
  open->set_observe(options_.observe);
  open->set_max_batch(options_.max_batch);
  // A failed write means the call is over (unreachable, cancelled); Finish below says why.
  if (stream_->Write(open_request)) {
    {
      absl::MutexLock lock(&mu_);
      streaming_ = true;
    }
    std::thread reader([this] { ReadAll(); });
    DeliverUntilDone();

    // Graceful end: write the acks of finished callbacks, half-close, and let lawnd end the stream. Whatever
    // was received and not delivered stays unacked; lawnd requeues it when the stream closes.
    std::vector<uint64_t> acks;
    bool reader_done;
    {
      absl::MutexLock lock(&mu_);
      acks = std::exchange(pending_acks_, {});
      received_.clear();
      reader_done = reader_done_;
    }
    if (!reader_done) {
      if (!acks.empty()) WriteAcks(std::move(acks));
      stream_->WritesDone();
      absl::MutexLock lock(&mu_);
      if (!mu_.AwaitWithTimeout(absl::Condition(&reader_done_), absl::FromChrono(kStopGrace))) {
        context_.TryCancel();
      }
    }
    reader.join();
  }
  const grpc::Status status = stream_->Finish();
  absl::MutexLock lock(&mu_);
  pending_acks_.clear();
  status_ = FromGrpcStatus(status);
  done_ = true;
}

void Subscription::ReadAll() {
  v1::SubscribeResponse response;
  while (stream_->Read(&response)) {
    // A batched response (open.max_batch > 0) carries `expirations`; the original shape one `expiration`.
    const size_t batch = response.expirations_size() > 0 ? static_cast<size_t>(response.expirations_size()) : 1;
    absl::MutexLock lock(&mu_);
    // Room for the whole response, or an empty queue (lawnd's max_in_flight keeps a batch within the window,
    // so the queue stays near buffer_limit_ even then). Stop lifts the limit: from then on everything read is
    // dropped, so the reader keeps draining until lawnd ends the stream.
    const auto has_room = [this, batch] {
      mu_.AssertReaderHeld();
      return stopping_ || received_.empty() || received_.size() + batch <= buffer_limit_;
    };
    mu_.Await(absl::Condition(&has_room));
    if (stopping_) continue;
    if (response.expirations_size() == 0) {
      received_.push_back(std::move(*response.mutable_expiration()));
      continue;
    }
    for (v1::Expiration& e : *response.mutable_expirations()) received_.push_back(std::move(e));
  }
  absl::MutexLock lock(&mu_);
  reader_done_ = true;
}

void Subscription::DeliverUntilDone() {
  bool writable = true;  // False once a write failed: the stream is broken and the reader will see it end.
  for (;;) {
    std::vector<uint64_t> acks;
    v1::Expiration expiration;
    {
      absl::MutexLock lock(&mu_);
      const auto has_work = [this] {
        mu_.AssertReaderHeld();
        return stopping_ || reader_done_ || !received_.empty() || !pending_acks_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) return;
      acks = TakeAcksToWrite();
      if (acks.empty()) {
        // Not writing acks: either an expiration waits, or the stream has ended and all are delivered
        // (expirations received before the end still reach the callback; their acks cannot be sent).
        if (received_.empty()) return;
        expiration = std::move(received_.front());
        received_.pop_front();
      }
    }
    if (!acks.empty()) {
      if (writable) writable = WriteAcks(std::move(acks));
      continue;
    }
    on_expiration_(expiration);
    if (options_.auto_ack && !options_.observe) {
      absl::MutexLock lock(&mu_);
      if (!reader_done_) pending_acks_.push_back(expiration.delivery_id());
    }
  }
}

std::vector<uint64_t> Subscription::TakeAcksToWrite() {
  if (pending_acks_.empty()) return {};
  if (reader_done_) {  // Nothing can carry them any more.
    pending_acks_.clear();
    return {};
  }
  // Keep batching while the callback has more to do, but not past half the window: lawnd sends at most
  // max_in_flight unacked expirations, so acks held back too long would starve the stream. With nothing left
  // for the callback, write now; waiting for the next expiration could wait forever.
  if (!received_.empty() && pending_acks_.size() < ack_batch_limit_) return {};
  return std::exchange(pending_acks_, {});
}

bool Subscription::WriteAcks(std::vector<uint64_t> ids) {
  v1::SubscribeRequest request;
  request.mutable_ack()->mutable_delivery_ids()->Add(ids.begin(), ids.end());
  return stream_->Write(request);
}

}  // namespace lawn
