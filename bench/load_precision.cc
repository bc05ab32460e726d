#include "bench/load_precision.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/expiry_probe.h"
#include "bench/load_cpu.h"
#include "bench/load_writer.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

namespace {

using Clock = std::chrono::steady_clock;

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

  auto* probe = new ExpiryProbe(stub, options.ns, options.max_in_flight, options.max_batch);
  std::unique_ptr<ExpiryProbe> owned(probe);  // Deleted only after Stop: OnDone has run by then.
  if (!probe->WaitOpen()) {
    report->Add("error", "Subscribe: " + probe->Stop().error_message());
    return false;
  }
  // lawnd's CPU from the first paced start to the last expiration received: starting, firing and delivering
  // the short timers (the preload is over; the long-TTL timers only sit there).
  const pid_t server = static_cast<pid_t>(options.server_pid);
  const double cpu_start = server != 0 ? ProcessCpuSeconds(server).value_or(-1) : -1;  // -1: not measured.
  PacedStarter starter(stub, options, options.seed);
  starter.Run();
  const absl::Time wait_until = absl::Now() + absl::FromChrono(options.ttl_max + options.grace);
  probe->WaitReceived(starter.ok_, wait_until);
  const double cpu_end = server != 0 ? ProcessCpuSeconds(server).value_or(-1) : -1;
  const grpc::Status stream = probe->Stop();

  const Percentiles lateness = Summarize(probe->lateness_us_);
  const Percentiles fire = Summarize(probe->fire_lateness_us_);
  const Percentiles calls = Summarize(starter.latencies_us_);
  const double span_s = static_cast<double>(probe->last_receive_ns_ - probe->first_receive_ns_) / 1e9;
  report->Add("started", starter.ok_);
  report->Add("start_errors", starter.errors_);
  report->Add("start_timers_per_s",
              starter.elapsed_s_ > 0 ? static_cast<double>(starter.ok_) / starter.elapsed_s_ : 0.0);
  report->Add("max_batch", uint64_t{options.max_batch});
  report->Add("received", probe->received_);
  report->Add("responses", probe->responses_);
  report->Add("expirations_per_response",
              probe->responses_ > 0 ? static_cast<double>(probe->received_ + probe->redeliveries_) /
                                          static_cast<double>(probe->responses_)
                                    : 0.0);
  report->Add("ack_messages", probe->ack_messages_);
  if (cpu_start >= 0 && cpu_end >= 0 && probe->received_ > 0) {
    report->Add("paced_server_cpu_s", cpu_end - cpu_start);
    report->Add("paced_server_cpu_us_per_expiration",
                (cpu_end - cpu_start) * 1e6 / static_cast<double>(probe->received_));
  }
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
