#include "bench/expiry_probe.h"

#include <time.h>

namespace lawn {

namespace {

int64_t WallNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);  // std::chrono::system_clock, as lawnd reads it, without the wrapping.
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t TimestampNs(const google::protobuf::Timestamp& t) { return t.seconds() * 1'000'000'000 + t.nanos(); }

}  // namespace

ExpiryProbe::ExpiryProbe(v1::TimerService::Stub* stub, const std::string& ns, uint32_t max_in_flight,
                         uint32_t max_batch) {
  request_.mutable_open()->set_namespace_(ns);
  request_.mutable_open()->set_max_in_flight(max_in_flight);
  request_.mutable_open()->set_max_batch(max_batch);
  stub->async()->Subscribe(&context_, this);
  writing_ = true;
  StartWrite(&request_);
  StartRead(&response_);
  StartCall();
}

bool ExpiryProbe::WaitOpen() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](ExpiryProbe* p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->opened_ || p->done_; }, this));
  return opened_ && !done_;
}

uint64_t ExpiryProbe::WaitReceived(uint64_t n, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  target_ = n;
  mu_.AwaitWithDeadline(absl::Condition(
                            +[](ExpiryProbe* p) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                              return p->received_ >= p->target_ || p->done_;
                            },
                            this),
                        deadline);
  return received_;
}

uint64_t ExpiryProbe::WaitAcksWritten(uint64_t n, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  target_ = n;
  mu_.AwaitWithDeadline(absl::Condition(
                            +[](ExpiryProbe* p) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                              return p->acks_written_ >= p->target_ || p->done_;
                            },
                            this),
                        deadline);
  return acks_written_;
}

grpc::Status ExpiryProbe::Stop() {
  bool writes_done = false;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    writes_done = !writing_ && !done_ && !writes_done_;
    if (writes_done) writes_done_ = true;
  }
  if (writes_done) StartWritesDone();
  absl::MutexLock lock(&mu_);
  auto is_done = +[](ExpiryProbe* p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->done_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(is_done, this), absl::Seconds(5))) {
    context_.TryCancel();
    mu_.Await(absl::Condition(is_done, this));
  }
  return status_;
}

void ExpiryProbe::Record(const v1::Expiration& e, int64_t now) {
  const int64_t deadline = TimestampNs(e.timer().deadline());
  const int64_t fired = TimestampNs(e.fired_at());
  if (e.attempt() == 1) {
    ++received_;
    lateness_us_.push_back(static_cast<double>(now - deadline) / 1e3);
    fire_lateness_us_.push_back(static_cast<double>(fired - deadline) / 1e3);
    if (now < deadline) ++early_;
    if (fired < deadline) ++fired_early_;
    if (e.late()) ++late_flagged_;
    if (first_receive_ns_ == 0) first_receive_ns_ = now;
    last_receive_ns_ = now;
  } else {
    ++redeliveries_;
  }
  acks_.push_back(e.delivery_id());
}

void ExpiryProbe::OnReadDone(bool ok) {
  const int64_t now = WallNowNs();
  if (!ok) return;  // lawnd ended the stream; OnDone follows.
  bool write;
  {
    absl::MutexLock lock(&mu_);
    ++responses_;
    if (response_.expirations_size() == 0) {
      Record(response_.expiration(), now);
    } else {
      for (const v1::Expiration& e : response_.expirations()) Record(e, now);
    }
    write = PrepareWriteLocked();
  }
  StartRead(&response_);
  if (write) StartWrite(&request_);
}

void ExpiryProbe::OnWriteDone(bool ok) {
  bool write = false, writes_done = false;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    opened_ = true;
    if (!ok) return;  // The stream broke; OnDone reports it.
    acks_written_ += acks_in_write_;
    acks_in_write_ = 0;
    write = PrepareWriteLocked();
    if (!write && stopping_ && !writes_done_) writes_done = writes_done_ = true;
  }
  if (write) StartWrite(&request_);
  if (writes_done) StartWritesDone();
}

void ExpiryProbe::OnDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  status_ = status;
  done_ = true;
}

bool ExpiryProbe::PrepareWriteLocked() {
  if (writing_ || acks_.empty() || writes_done_ || done_) return false;
  request_.Clear();
  request_.mutable_ack()->mutable_delivery_ids()->Add(acks_.begin(), acks_.end());
  acks_in_write_ = acks_.size();
  acks_.clear();
  writing_ = true;
  ++ack_messages_;
  return true;
}

}  // namespace lawn
