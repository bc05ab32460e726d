// ReferenceShard: the plain oracle for Shard's documented semantics (core/shard.h), built on std::map and
// std::set and written for obviousness, not speed.
//
//   due:        floor(now / tick) >= ceil(deadline / tick), i.e. deadline <= floor(now / tick) * tick;
//   order:      (deadline_ns, TimerIdHash(id), id);
//   recurring:  next = deadline + interval; if next <= now, the first deadline + k * interval after now.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/shard.h"
#include "tests/core/shard_test_util.h"

namespace lawn::test {

class ReferenceShard {
 public:
  struct Entry {
    std::string payload;
    uint64_t deadline_ns = 0;
    uint64_t interval_ns = 0;
    // Known only for a TTL start not rescheduled or re-armed since: the contract says nothing about the
    // ttl_ns of other timers.
    std::optional<uint64_t> ttl_ns;
  };

  explicit ReferenceShard(uint64_t tick_ns) : tick_ns_(tick_ns) {}

  absl::StatusCode Start(const std::string& id, const std::string& payload, When when, uint64_t interval_ns,
                         bool replace, uint64_t now_ns) {
    if (id.empty() || (when.kind == When::Kind::kTtl && when.value_ns == 0)) {
      return absl::StatusCode::kInvalidArgument;
    }
    auto it = timers_.find(id);
    if (it != timers_.end()) {
      if (!replace) return absl::StatusCode::kAlreadyExists;
      queue_.erase({it->second.deadline_ns, id});
      timers_.erase(it);
    }
    Entry e;
    e.payload = payload;
    e.deadline_ns = DeadlineOf(when, now_ns);
    e.interval_ns = interval_ns;
    if (when.kind == When::Kind::kTtl) e.ttl_ns = when.value_ns;
    queue_.insert({e.deadline_ns, id});
    timers_.emplace(id, std::move(e));
    return absl::StatusCode::kOk;
  }

  absl::StatusCode Delete(const std::string& id) {
    auto it = timers_.find(id);
    if (it == timers_.end()) return absl::StatusCode::kNotFound;
    queue_.erase({it->second.deadline_ns, id});
    timers_.erase(it);
    return absl::StatusCode::kOk;
  }

  absl::StatusCode Reschedule(const std::string& id, When when, uint64_t now_ns) {
    auto it = timers_.find(id);
    if (it == timers_.end()) return absl::StatusCode::kNotFound;
    if (when.kind == When::Kind::kTtl && when.value_ns == 0) return absl::StatusCode::kInvalidArgument;
    queue_.erase({it->second.deadline_ns, id});
    it->second.deadline_ns = DeadlineOf(when, now_ns);
    it->second.ttl_ns.reset();
    queue_.insert({it->second.deadline_ns, id});
    return absl::StatusCode::kOk;
  }

  std::vector<FiredCopy> Advance(uint64_t now_ns) {
    const uint64_t limit = now_ns / tick_ns_ * tick_ns_;  // deadline <= limit  <=>  due.
    std::vector<std::pair<uint64_t, std::string>> due;
    for (auto it = queue_.begin(); it != queue_.end() && it->first <= limit;) {
      due.push_back(*it);
      it = queue_.erase(it);
    }
    std::vector<FiredCopy> fired;
    fired.reserve(due.size());
    for (const auto& [deadline, id] : due) {
      auto it = timers_.find(id);
      Entry& e = it->second;
      FiredCopy f{id, e.payload, deadline, e.interval_ns, 0};
      if (e.interval_ns == 0) {
        timers_.erase(it);
      } else {
        uint64_t next = deadline + e.interval_ns;
        if (next <= now_ns) next = deadline + ((now_ns - deadline) / e.interval_ns + 1) * e.interval_ns;
        e.deadline_ns = next;
        e.ttl_ns.reset();
        f.next_deadline_ns = next;
        queue_.insert({next, id});
      }
      fired.push_back(std::move(f));
    }
    return fired;
  }

  void SetTick(uint64_t tick_ns) { tick_ns_ = tick_ns; }

  // The first instant at which Advance has work: ceil(earliest deadline / tick) * tick.
  std::optional<uint64_t> EarliestDueNs() const {
    if (queue_.empty()) return std::nullopt;
    const uint64_t d = queue_.begin()->first;
    return (d / tick_ns_ + (d % tick_ns_ != 0)) * tick_ns_;
  }

  const Entry* Get(const std::string& id) const {
    auto it = timers_.find(id);
    return it == timers_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, Entry>& timers() const { return timers_; }
  size_t size() const { return timers_.size(); }
  uint64_t tick_ns() const { return tick_ns_; }

 private:
  static uint64_t DeadlineOf(When when, uint64_t now_ns) {
    return when.kind == When::Kind::kTtl ? now_ns + when.value_ns : when.value_ns;
  }

  uint64_t tick_ns_;
  std::map<std::string, Entry> timers_;
  // Expiry order of core/shard.h.
  struct FireOrder {
    bool operator()(const std::pair<uint64_t, std::string>& a, const std::pair<uint64_t, std::string>& b) const {
      if (a.first != b.first) return a.first < b.first;
      const uint32_t ha = TimerIdHash(a.second), hb = TimerIdHash(b.second);
      if (ha != hb) return ha < hb;
      return a.second < b.second;
    }
  };
  std::set<std::pair<uint64_t, std::string>, FireOrder> queue_;  // (deadline_ns, id)
};

}  // namespace lawn::test
