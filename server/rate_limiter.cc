#include "server/rate_limiter.h"

#include <algorithm>
#include <functional>

#include "base/namespace_pattern.h"
#include "server/metrics.h"

namespace lawn {

namespace {

double Refill(double tokens, const RateLimit& rule, std::chrono::steady_clock::duration elapsed) {
  return std::min(static_cast<double>(rule.burst),
                  tokens + rule.starts_per_second * std::chrono::duration<double>(elapsed).count());
}

std::string FormatRate(double rate) {
  std::string text = std::to_string(rate);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

RateLimiter::RateLimiter(std::vector<RateLimit> rules, Metrics* metrics)
    : rules_(std::move(rules)), metrics_(metrics) {}

const RateLimit* RateLimiter::RuleFor(std::string_view ns) const {
  for (const RateLimit& rule : rules_) {
    for (const std::string& pattern : rule.namespaces) {
      if (NamespaceMatches(pattern, ns)) return &rule;
    }
  }
  return nullptr;
}

void RateLimiter::Sweep(Stripe& stripe, std::chrono::steady_clock::time_point now) {
  absl::erase_if(stripe.buckets, [&](const auto& entry) {
    const Bucket& b = entry.second;
    const bool full = now > b.refilled &&
                      Refill(b.tokens, *b.rule, now - b.refilled) >= static_cast<double>(b.rule->burst);
    if (full && metrics_ != nullptr) metrics_->RemoveRateLimited(entry.first);
    return full;
  });
}

absl::Status RateLimiter::TryTake(std::string_view ns, std::chrono::steady_clock::time_point now) {
  if (rules_.empty()) return absl::OkStatus();
  if (ns.empty()) ns = "default";
  Stripe& stripe = stripes_[std::hash<std::string_view>()(ns) % kStripes];
  const RateLimit* rule = nullptr;
  {
    absl::MutexLock lock(&stripe.mu);
    auto it = stripe.buckets.find(absl::string_view(ns.data(), ns.size()));
    if (it == stripe.buckets.end()) {
      rule = RuleFor(ns);
      if (rule == nullptr) return absl::OkStatus();
      if (stripe.buckets.size() >= stripe.sweep_at) {
        Sweep(stripe, now);
        stripe.sweep_at = std::max(kSweepAbove, 2 * stripe.buckets.size());
      }
      while (stripe.buckets.size() >= kMaxPerStripe) {
        if (metrics_ != nullptr) metrics_->RemoveRateLimited(stripe.buckets.begin()->first);
        stripe.buckets.erase(stripe.buckets.begin());
      }
      it = stripe.buckets.emplace(std::string(ns), Bucket{static_cast<double>(rule->burst), now, rule}).first;
    }
    Bucket& b = it->second;
    rule = b.rule;
    if (now > b.refilled) {  // A thread may come with a `now` older than the last refill: nothing to add.
      b.tokens = Refill(b.tokens, *b.rule, now - b.refilled);
      b.refilled = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return absl::OkStatus();
    }
    // Under the stripe's lock: a sweep (same stripe) cannot remove the series meanwhile.
    if (metrics_ != nullptr) metrics_->rate_limited(std::string(ns)).Increment();
  }
  return absl::ResourceExhaustedError("namespace '" + std::string(ns) + "' is over its start rate limit (" +
                                      FormatRate(rule->starts_per_second) + " starts/s, burst " +
                                      std::to_string(rule->burst) + ", config rate_limits); retry later");
}

size_t RateLimiter::buckets_for_testing() {
  size_t n = 0;
  for (Stripe& stripe : stripes_) {
    absl::MutexLock lock(&stripe.mu);
    n += stripe.buckets.size();
  }
  return n;
}

}  // namespace lawn
