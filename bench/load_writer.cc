#include "bench/load_writer.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "bench/load_report.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

namespace {

using Clock = std::chrono::steady_clock;

class StartLoad {
 public:
  explicit StartLoad(const StartLoadConfig& config)
      : config_(config),
        per_call_(config.unary ? 1 : config.batch),
        total_calls_((config.count + per_call_ - 1) / per_call_) {}

  StartLoadResult Run() {
    const uint32_t cq_count =
        config_.api == ClientApi::kCompletionQueue ? std::max<uint32_t>(1, config_.cq_threads) : 0;
    for (uint32_t i = 0; i < cq_count; ++i) cqs_.push_back(std::make_unique<grpc::CompletionQueue>());
    slots_.resize(config_.concurrency);
    for (uint32_t i = 0; i < config_.concurrency; ++i) {
      slots_[i] = std::make_unique<Slot>(config_.seed * 1'000'003 + i);
      Prepare(*slots_[i], config_.stubs[i % config_.stubs.size()]);
      if (cq_count > 0) slots_[i]->cq = cqs_[i % cq_count].get();
    }
    std::vector<std::thread> pollers;
    for (auto& cq : cqs_) pollers.emplace_back([this, cq = cq.get()] { Poll(cq); });
    start_ = Clock::now();
    stop_at_ = start_ + config_.duration;
    {
      absl::MutexLock lock(&mu_);
      active_ = config_.concurrency;
    }
    std::vector<std::thread> blocking;
    for (auto& slot : slots_) {
      if (config_.api == ClientApi::kBlocking) {
        blocking.emplace_back([this, s = slot.get()] { RunBlocking(*s); });
      } else {
        Next(*slot);
      }
    }
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](uint32_t* active) { return *active == 0; }, &active_));
    }
    // Every slot has retired, so no call is pending on any queue.
    for (auto& cq : cqs_) cq->Shutdown();
    for (auto& poller : pollers) poller.join();
    for (auto& thread : blocking) thread.join();
    return Collect();
  }

 private:
  struct Slot {
    explicit Slot(uint64_t seed) : rng(seed) {}
    Rng rng;
    v1::TimerService::Stub* stub = nullptr;
    grpc::CompletionQueue* cq = nullptr;  // With ClientApi::kCompletionQueue.
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::StartTimerResponse>> unary_reader;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::StartTimersResponse>> batch_reader;
    grpc::Status status;  // Filled by the completion queue.
    v1::StartTimerRequest unary_request;
    v1::StartTimerResponse unary_response;
    v1::StartTimersRequest batch_request;
    v1::StartTimersResponse batch_response;
    uint32_t timers_in_call = 0;
    Clock::time_point sent;
    Clock::time_point last_done;
    std::vector<double> latencies_us;
    uint64_t calls = 0, call_errors = 0, timers_ok = 0, timer_errors = 0;
    std::string first_error;
  };

  // Fills the fields that never change; each call only draws new ids.
  void Prepare(Slot& slot, v1::TimerService::Stub* stub) const {
    slot.stub = stub;
    auto fill = [&](v1::StartTimerRequest* r) {
      r->set_namespace_(config_.ns);
      const int64_t ns = config_.ttl.count();
      r->mutable_ttl()->set_seconds(ns / 1'000'000'000);
      r->mutable_ttl()->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
      if (config_.payload_bytes > 0) r->set_payload(std::string(config_.payload_bytes, 'p'));
    };
    if (config_.unary) {
      fill(&slot.unary_request);
    } else {
      for (uint32_t i = 0; i < config_.batch; ++i) fill(slot.batch_request.add_timers());
      slot.batch_request.set_return_timers(config_.return_timers);
    }
  }

  // Takes the next call from the budget; returns the timers it carries, 0 when the run is over.
  uint32_t Claim() {
    if (Clock::now() >= stop_at_) return 0;
    const uint64_t call = issued_.fetch_add(1, std::memory_order_relaxed);
    if (call >= total_calls_) return 0;
    return static_cast<uint32_t>(std::min<uint64_t>(per_call_, config_.count - call * per_call_));
  }

  // Runs the completions of one queue until it is shut down and drained.
  void Poll(grpc::CompletionQueue* cq) {
    void* tag = nullptr;
    bool ok = false;
    while (cq->Next(&tag, &ok)) {
      Slot* slot = static_cast<Slot*>(tag);
      OnDone(*slot, slot->status);
    }
  }

  void Retire() {
    absl::MutexLock lock(&mu_);
    --active_;
  }

  // Draws new ids into the slot's request (of `timers` items) and a fresh context; stamps the send time.
  void Fill(Slot& slot, uint32_t timers) {
    slot.timers_in_call = timers;
    slot.context = std::make_unique<grpc::ClientContext>();
    if (!config_.token.empty()) slot.context->AddMetadata("authorization", "Bearer " + config_.token);
    if (config_.unary) {
      slot.rng.FillId(slot.unary_request.mutable_id());
      slot.unary_response.Clear();
    } else {
      auto* items = slot.batch_request.mutable_timers();
      while (static_cast<uint32_t>(items->size()) > timers) items->RemoveLast();  // The last, partial call.
      for (auto& item : *items) slot.rng.FillId(item.mutable_id());
      slot.batch_response.Clear();
    }
    slot.sent = Clock::now();
  }

  // ClientApi::kBlocking: this thread makes the slot's calls one after the other.
  void RunBlocking(Slot& slot) {
    while (const uint32_t timers = Claim()) {
      Fill(slot, timers);
      const grpc::Status status =
          config_.unary
              ? slot.stub->StartTimer(slot.context.get(), slot.unary_request, &slot.unary_response)
              : slot.stub->StartTimers(slot.context.get(), slot.batch_request, &slot.batch_response);
      Record(slot, status);
    }
    Retire();
  }

  // Async APIs: issues the slot's next call, or retires the slot.
  void Next(Slot& slot) {
    const uint32_t timers = Claim();
    if (timers == 0) {
      Retire();
      return;
    }
    Fill(slot, timers);
    auto done = [this, &slot](grpc::Status status) { OnDone(slot, status); };
    if (config_.unary) {
      if (slot.cq != nullptr) {
        slot.unary_reader = slot.stub->AsyncStartTimer(slot.context.get(), slot.unary_request, slot.cq);
        slot.unary_reader->Finish(&slot.unary_response, &slot.status, &slot);
      } else {
        slot.stub->async()->StartTimer(slot.context.get(), &slot.unary_request, &slot.unary_response, done);
      }
    } else if (slot.cq != nullptr) {
      slot.batch_reader = slot.stub->AsyncStartTimers(slot.context.get(), slot.batch_request, slot.cq);
      slot.batch_reader->Finish(&slot.batch_response, &slot.status, &slot);
    } else {
      slot.stub->async()->StartTimers(slot.context.get(), &slot.batch_request, &slot.batch_response, done);
    }
  }

  void OnDone(Slot& slot, const grpc::Status& status) {
    Record(slot, status);
    Next(slot);
  }

  // Accounts for the slot's completed call.
  void Record(Slot& slot, const grpc::Status& status) {
    const Clock::time_point now = Clock::now();
    slot.last_done = now;
    slot.latencies_us.push_back(std::chrono::duration<double, std::micro>(now - slot.sent).count());
    ++slot.calls;
    if (!status.ok()) {
      ++slot.call_errors;
      slot.timer_errors += slot.timers_in_call;
      if (slot.first_error.empty()) slot.first_error = "call: " + status.error_message();
    } else if (config_.unary) {
      ++slot.timers_ok;
    } else {
      for (const auto& result : slot.batch_response.results()) {
        if (result.code() == 0) {
          ++slot.timers_ok;
        } else {
          ++slot.timer_errors;
          if (slot.first_error.empty()) slot.first_error = "item: " + result.message();
        }
      }
    }
  }

  StartLoadResult Collect() {
    StartLoadResult r;
    Clock::time_point end = start_;
    for (auto& slot : slots_) {
      r.calls += slot->calls;
      r.call_errors += slot->call_errors;
      r.timers_ok += slot->timers_ok;
      r.timer_errors += slot->timer_errors;
      if (r.first_error.empty()) r.first_error = slot->first_error;
      if (slot->calls > 0) end = std::max(end, slot->last_done);
      r.latencies_us.insert(r.latencies_us.end(), slot->latencies_us.begin(), slot->latencies_us.end());
    }
    r.elapsed_s = std::chrono::duration<double>(end - start_).count();
    return r;
  }

  const StartLoadConfig& config_;
  const uint64_t per_call_;
  const uint64_t total_calls_;
  std::vector<std::unique_ptr<grpc::CompletionQueue>> cqs_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Clock::time_point start_, stop_at_;
  std::atomic<uint64_t> issued_{0};
  absl::Mutex mu_;
  uint32_t active_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

StartLoadResult RunStartLoad(const StartLoadConfig& config) { return StartLoad(config).Run(); }

}  // namespace lawn
