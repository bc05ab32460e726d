#include "bench/load_precision.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/load_writer.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

namespace {

using Clock = std::chrono::steady_clock;

int64_t WallNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);  // std::chrono::system_clock, as lawnd reads it, without the wrapping.
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t TimestampNs(const google::protobuf::Timestamp& t) { return t.seconds() * 1'000'000'000 + t.nanos(); }

// One Subscribe stream that measures every delivery the moment it is read and acks it at once: pending acks
// go out together in the next `ack` message, written as soon as the previous write completed.
class ExpiryProbe final : public grpc::ClientBidiReactor<v1::SubscribeRequest, v1::SubscribeResponse> {
 public:
  ExpiryProbe(v1::TimerService::Stub* stub, const std::string& ns, uint32_t max_in_flight) {
    request_.mutable_open()->set_namespace_(ns);
    request_.mutable_open()->set_max_in_flight(max_in_flight);
    stub->async()->Subscribe(&context_, this);
    writing_ = true;
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }

  // Blocks until `open` is written or the stream ended; true if it was written.
  bool WaitOpen() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](ExpiryProbe* p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->opened_ || p->done_; }, this));
    return opened_ && !done_;
  }

  // Blocks until `n` first deliveries arrived, the stream ended, or `deadline`; returns the count so far.
  uint64_t WaitReceived(uint64_t n, absl::Time deadline) {
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

  // Half-closes (after the pending acks) and waits for lawnd to end the stream; cancels it after 5 s.
  grpc::Status Stop() {
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

  void OnReadDone(bool ok) override {
    const int64_t now = WallNowNs();
    if (!ok) return;  // lawnd ended the stream; OnDone follows.
    const v1::Expiration& e = response_.expiration();
    const int64_t deadline = TimestampNs(e.timer().deadline());
    const int64_t fired = TimestampNs(e.fired_at());
    bool write;
    {
      absl::MutexLock lock(&mu_);
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
      write = PrepareWriteLocked();
    }
    StartRead(&response_);
    if (write) StartWrite(&request_);
  }

  void OnWriteDone(bool ok) override {
    bool write = false, writes_done = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      opened_ = true;
      if (!ok) return;  // The stream broke; OnDone reports it.
      write = PrepareWriteLocked();
      if (!write && stopping_ && !writes_done_) writes_done = writes_done_ = true;
    }
    if (write) StartWrite(&request_);
    if (writes_done) StartWritesDone();
  }

  void OnDone(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    status_ = status;
    done_ = true;
  }

  // Results; read after Stop.
  std::vector<double> lateness_us_, fire_lateness_us_;
  uint64_t received_ = 0, early_ = 0, fired_early_ = 0, late_flagged_ = 0, redeliveries_ = 0;
  int64_t first_receive_ns_ = 0, last_receive_ns_ = 0;

 private:
  // Moves the pending acks into request_ if no write is under way; true if the caller must StartWrite.
  bool PrepareWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || acks_.empty() || writes_done_ || done_) return false;
    request_.Clear();
    request_.mutable_ack()->mutable_delivery_ids()->Add(acks_.begin(), acks_.end());
    acks_.clear();
    writing_ = true;
    return true;
  }

  grpc::ClientContext context_;
  v1::SubscribeRequest request_;    // Owned by the write under way while writing_.
  v1::SubscribeResponse response_;  // Owned by the read under way.
  absl::Mutex mu_;
  std::vector<uint64_t> acks_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool opened_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t target_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

// Starts `rate` short timers per second in StartTimers calls of `batch`, on absolute send times; at most
// kMaxCalls calls in flight (the pacing waits for a free one).
class PacedStarter {
 public:
  PacedStarter(v1::TimerService::Stub* stub, const LoadOptions& options, uint64_t seed)
      : stub_(stub), options_(options), rng_(seed) {
    for (auto& call : slots_) free_.push_back(&call);
  }

  void Run() {
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(options_.batch) / options_.rate));
    const int64_t lo_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.ttl_min).count();
    const int64_t hi_ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.ttl_max).count();
    const Clock::time_point start = Clock::now(), end = start + options_.duration;
    for (Clock::time_point next = start; next < end; next += period) {
      std::this_thread::sleep_until(next);
      Call* call;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::vector<Call*>* f) { return !f->empty(); }, &free_));
        call = free_.back();
        free_.pop_back();
      }
      call->request.Clear();
      for (uint32_t i = 0; i < options_.batch; ++i) {
        v1::StartTimerRequest* r = call->request.add_timers();
        r->set_namespace_(options_.ns);
        rng_.FillId(r->mutable_id());
        const int64_t ms =
            static_cast<int64_t>(rng_.Uniform(static_cast<uint64_t>(lo_ms), static_cast<uint64_t>(hi_ms)));
        r->mutable_ttl()->set_seconds(ms / 1000);
        r->mutable_ttl()->set_nanos(static_cast<int32_t>(ms % 1000) * 1'000'000);
      }
      call->response.Clear();
      call->context = std::make_unique<grpc::ClientContext>();
      call->sent = Clock::now();
      stub_->async()->StartTimers(call->context.get(), &call->request, &call->response,
                                  [this, call](grpc::Status status) { OnDone(call, status); });
    }
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](std::vector<Call*>* f) { return f->size() == kMaxCalls; }, &free_));
    elapsed_s_ = std::chrono::duration<double>(Clock::now() - start).count();
  }

  // Results; read after Run.
  uint64_t ok_ = 0, errors_ = 0, calls_ = 0;
  double elapsed_s_ = 0;
  std::vector<double> latencies_us_;
  std::string first_error_;

 private:
  static constexpr size_t kMaxCalls = 64;
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    v1::StartTimersRequest request;
    v1::StartTimersResponse response;
    Clock::time_point sent;
  };

  void OnDone(Call* call, const grpc::Status& status) {
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - call->sent).count();
    absl::MutexLock lock(&mu_);
    ++calls_;
    latencies_us_.push_back(us);
    if (!status.ok()) {
      errors_ += static_cast<uint64_t>(call->request.timers_size());
      if (first_error_.empty()) first_error_ = "call: " + status.error_message();
    } else {
      for (const auto& result : call->response.results()) {
        if (result.code() == 0) {
          ++ok_;
        } else {
          ++errors_;
          if (first_error_.empty()) first_error_ = "item: " + result.message();
        }
      }
    }
    free_.push_back(call);
  }

  v1::TimerService::Stub* stub_;
  const LoadOptions& options_;
  Rng rng_;
  Call slots_[kMaxCalls];
  absl::Mutex mu_;
  std::vector<Call*> free_;
};

}  // namespace

bool RunPrecision(const LoadOptions& options, v1::TimerService::Stub* stub,
                  const std::vector<v1::TimerService::Stub*>& preload_stubs, Report* report) {
  report->Add("mode", "precision");
  report->Add("namespace", options.ns);
  if (options.pending > 0) {
    StartLoadConfig preload;
    preload.stubs = preload_stubs;
    preload.concurrency = std::max<uint32_t>(4, options.concurrency);
    preload.batch = options.preload_batch;
    preload.count = options.pending;
    preload.duration = std::chrono::minutes(30);
    preload.ttl = options.ttl;
    preload.ns = options.ns;
    preload.payload_bytes = options.payload_bytes;
    preload.seed = options.seed ^ 0x5EED;
    const StartLoadResult r = RunStartLoad(preload);
    report->Add("preloaded", r.timers_ok);
    report->Add("preload_errors", r.timer_errors);
    report->Add("preload_s", r.elapsed_s);
    report->Add("preload_timers_per_s",
                r.elapsed_s > 0 ? static_cast<double>(r.timers_ok) / r.elapsed_s : 0.0);
    if (r.timers_ok != options.pending) {
      report->Add("error", "preload incomplete: " + r.first_error);
      return false;
    }
  }

  auto* probe = new ExpiryProbe(stub, options.ns, options.max_in_flight);
  std::unique_ptr<ExpiryProbe> owned(probe);  // Deleted only after Stop: OnDone has run by then.
  if (!probe->WaitOpen()) {
    report->Add("error", "Subscribe: " + probe->Stop().error_message());
    return false;
  }
  PacedStarter starter(stub, options, options.seed);
  starter.Run();
  const absl::Time wait_until = absl::Now() + absl::FromChrono(options.ttl_max + options.grace);
  probe->WaitReceived(starter.ok_, wait_until);
  const grpc::Status stream = probe->Stop();

  const Percentiles lateness = Summarize(probe->lateness_us_);
  const Percentiles fire = Summarize(probe->fire_lateness_us_);
  const Percentiles calls = Summarize(starter.latencies_us_);
  const double span_s = static_cast<double>(probe->last_receive_ns_ - probe->first_receive_ns_) / 1e9;
  report->Add("started", starter.ok_);
  report->Add("start_errors", starter.errors_);
  report->Add("start_timers_per_s",
              starter.elapsed_s_ > 0 ? static_cast<double>(starter.ok_) / starter.elapsed_s_ : 0.0);
  report->Add("received", probe->received_);
  report->Add("missing", starter.ok_ > probe->received_ ? starter.ok_ - probe->received_ : uint64_t{0});
  report->Add("early", probe->early_);
  report->Add("fired_early", probe->fired_early_);
  report->Add("late_flagged", probe->late_flagged_);
  report->Add("redeliveries", probe->redeliveries_);
  report->Add("receive_span_s", span_s);
  report->AddPercentiles("lateness_us", lateness, true);
  report->Add("lateness_us_mean", lateness.mean);
  report->Add("lateness_us_min", lateness.min);
  report->AddPercentiles("fire_lateness_us", fire, true);
  report->AddPercentiles("start_call_us", calls, false);
  if (!starter.first_error_.empty()) report->Add("first_error", starter.first_error_);
  if (!stream.ok()) report->Add("stream_status", stream.error_message());
  return starter.errors_ == 0 && probe->received_ >= starter.ok_ && probe->early_ == 0 &&
         probe->fired_early_ == 0;
}

}  // namespace lawn
