// ShardRound: what a shard worker has applied to memory and must still write, answer and publish.
//
// A round passes from the worker thread (which fills it while applying commands and firing timers) to the
// shard's commit thread (which writes its batch, calls Done on its commands and publishes its expirations),
// unless the worker commits it itself (memory durability, or a small round that needs no fsync).
// Each worker owns two rounds and swaps them, so filling one never allocates once both have grown.
//
// Thread-safety: none; a round belongs to one thread at a time, handed over under the worker's mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "server/delivery.h"
#include "server/shard_command.h"
#include "storage/store_batch.h"

namespace lawn {

class NamespaceState;

struct ShardRound {
  std::vector<std::unique_ptr<ShardCommand>> commands;  // Applied; answered after the write.
  StoreBatch batch;
  std::vector<Delivery> deliveries;  // Fired; published after the write.
  // Each run of `deliveries` in one namespace: its namespace and where it ends. Kept apart from the
  // deliveries so that a run is published as it lies (no copy into a list per namespace).
  std::vector<std::pair<NamespaceState*, size_t>> delivery_runs;
  RoundCounters counters;

  bool empty() const { return commands.empty() && batch.empty() && deliveries.empty(); }
  // Adds a firing of `ns`'s, to fill in place.
  Delivery& AddDelivery(NamespaceState* ns) {
    if (delivery_runs.empty() || delivery_runs.back().first != ns) delivery_runs.emplace_back(ns, 0);
    delivery_runs.back().second = deliveries.size() + 1;
    return deliveries.emplace_back();
  }
  void Clear() {
    commands.clear();
    batch.Clear();
    deliveries.clear();
    delivery_runs.clear();
    counters = RoundCounters{};
  }
};

}  // namespace lawn
