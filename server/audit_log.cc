#include "server/audit_log.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

struct Budget {
  absl::Mutex mu;
  double tokens ABSL_GUARDED_BY(mu) = AuditLog::kBurst;
  std::chrono::steady_clock::time_point refilled ABSL_GUARDED_BY(mu) = std::chrono::steady_clock::now();
  uint64_t dropped ABSL_GUARDED_BY(mu) = 0;
};

Budget& TheBudget() {
  static Budget* budget = new Budget;  // Never destroyed: gRPC threads may log during exit.
  return *budget;
}

// A client-chosen string as it may appear in a log line: printable ASCII, at most 80 characters.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out.push_back(c >= 0x21 && c <= 0x7e ? c : '?');
  if (text.size() > 80) out += "...";
  return out.empty() ? "-" : out;
}

}  // namespace

void AuditLog::Record(std::string_view identity, std::string_view method, std::string_view ns,
                      std::string_view outcome) {
  Budget& budget = TheBudget();
  uint64_t dropped = 0;
  {
    absl::MutexLock lock(&budget.mu);
    const auto now = std::chrono::steady_clock::now();
    budget.tokens = std::min(kBurst, budget.tokens + kPerSecond * std::chrono::duration<double>(now - budget.refilled).count());
    budget.refilled = now;
    if (budget.tokens < 1) {
      ++budget.dropped;
      return;
    }
    budget.tokens -= 1;
    dropped = budget.dropped;
    budget.dropped = 0;
  }
  if (dropped > 0) spdlog::warn("audit: {} lines dropped (more than {}/s)", dropped, kPerSecond);
  spdlog::info("audit: identity={} method={} namespace={} outcome={}", Printable(identity), method,
               Printable(ns), outcome);
}

}  // namespace lawn
