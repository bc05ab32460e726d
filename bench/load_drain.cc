#include "bench/load_drain.h"

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/expiry_probe.h"
#include "bench/load_cpu.h"
#include "bench/load_writer.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

namespace {

using Clock = std::chrono::steady_clock;

// The namespace's pending timers and outbox entries, or nullopt if GetStats failed.
std::optional<std::pair<uint64_t, uint64_t>> PendingAndOutbox(v1::TimerService::Stub* stub,
                                                              const LoadOptions& options) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!options.token.empty()) context.AddMetadata("authorization", "Bearer " + options.token);
  v1::GetStatsResponse stats;
  if (!stub->GetStats(&context, v1::GetStatsRequest(), &stats).ok()) return std::nullopt;
  for (const v1::NamespaceStats& ns : stats.namespaces()) {
    if (ns.namespace_() == options.ns) return std::make_pair(ns.pending_timers(), ns.outbox());
  }
  return std::make_pair(uint64_t{0}, uint64_t{0});
}

// Polls PendingAndOutbox every 20 ms until `done` holds for it, or `limit` passes; true if it held.
template <typename Done>
bool PollStats(v1::TimerService::Stub* stub, const LoadOptions& options, std::chrono::seconds limit, Done done) {
  const Clock::time_point until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (std::optional<std::pair<uint64_t, uint64_t>> s = PendingAndOutbox(stub, options); s && done(*s)) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

bool RunDrain(const LoadOptions& options, v1::TimerService::Stub* stub,
              const std::vector<v1::TimerService::Stub*>& start_stubs, Report* report) {
  report->Add("mode", "drain");
  report->Add("namespace", options.ns);
  report->Add("max_in_flight", uint64_t{options.max_in_flight});
  report->Add("max_batch", uint64_t{options.max_batch});
  StartLoadConfig fill;
  fill.stubs = start_stubs;
  fill.concurrency = options.concurrency;
  fill.batch = options.batch;
  fill.count = options.count;
  fill.duration = std::chrono::minutes(30);
  fill.ttl = options.ttl;
  fill.ns = options.ns;
  fill.payload_bytes = options.payload_bytes;
  fill.token = options.token;
  fill.seed = options.seed;
  const StartLoadResult started = RunStartLoad(fill);
  report->Add("started", started.timers_ok);
  report->Add("start_errors", started.timer_errors);
  if (started.timers_ok != options.count) {
    report->Add("error", "fill incomplete: " + started.first_error);
    return false;
  }
  const uint64_t n = started.timers_ok;
  if (!PollStats(stub, options, std::chrono::seconds(600),
                 [n](std::pair<uint64_t, uint64_t> s) { return s.first == 0 && s.second == n; })) {
    report->Add("error", "the outbox did not fill with the fired timers within 600 s");
    return false;
  }

  const pid_t server = static_cast<pid_t>(options.server_pid);
  const double client_cpu_start = SelfCpuSeconds();
  // -1: not measured (no --server-pid, or /proc unreadable).
  const double server_cpu_start = server != 0 ? ProcessCpuSeconds(server).value_or(-1) : -1;
  const Clock::time_point open = Clock::now();
  auto probe = std::make_unique<ExpiryProbe>(stub, options.ns, options.max_in_flight, options.max_batch);
  const absl::Time give_up = absl::Now() + absl::Minutes(10);
  const bool opened = probe->WaitOpen();
  const uint64_t received = opened ? probe->WaitReceived(n, give_up) : 0;
  const uint64_t acked = opened ? probe->WaitAcksWritten(n, give_up) : 0;
  const Clock::time_point acks_written = Clock::now();
  const bool emptied = opened && PollStats(stub, options, std::chrono::seconds(600), [](std::pair<uint64_t, uint64_t> s) {
                         return s.second == 0;
                       });
  const Clock::time_point empty = Clock::now();
  const double server_cpu_end = server != 0 ? ProcessCpuSeconds(server).value_or(-1) : -1;
  const double client_cpu = SelfCpuSeconds() - client_cpu_start;
  const grpc::Status stream = probe->Stop();

  const double drain_s = std::chrono::duration<double>(acks_written - open).count();
  const double empty_s = std::chrono::duration<double>(empty - open).count();
  report->Add("received", received);
  report->Add("acks_written", acked);
  report->Add("redeliveries", probe->redeliveries_);
  report->Add("responses", probe->responses_);
  report->Add("expirations_per_response",
              probe->responses_ > 0 ? static_cast<double>(received + probe->redeliveries_) /
                                          static_cast<double>(probe->responses_)
                                    : 0.0);
  report->Add("ack_messages", probe->ack_messages_);
  report->Add("drain_s", drain_s);
  report->Add("outbox_empty_s", empty_s);
  report->Add("expirations_per_s", drain_s > 0 ? static_cast<double>(received) / drain_s : 0.0);
  if (received > 0) report->Add("drain_client_cpu_us_per_expiration", client_cpu * 1e6 / static_cast<double>(received));
  if (server_cpu_start >= 0 && server_cpu_end >= 0 && received > 0) {
    report->Add("drain_server_cpu_s", server_cpu_end - server_cpu_start);
    report->Add("drain_server_cpu_us_per_expiration",
                (server_cpu_end - server_cpu_start) * 1e6 / static_cast<double>(received));
  }
  if (!stream.ok()) report->Add("stream_status", stream.error_message());
  if (!opened) report->Add("error", "Subscribe did not open: " + stream.error_message());
  return opened && emptied && received == n && acked == n && probe->redeliveries_ == 0;
}

}  // namespace lawn
