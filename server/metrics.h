// Metrics: lawnd's Prometheus metrics and the /metrics HTTP endpoint (prometheus-cpp, on its own port).
//
// Hot paths do not touch these per operation: shard workers count locally and publish once per round, the
// outbox and namespace gauges are refreshed by the runtime's background thread. Names are the contract of
// deploy/grafana/lawn.json and the README's metrics reference.
//
// Thread-safety: prometheus-cpp metrics are thread-safe; the families are created once, at construction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace prometheus {
class Exposer;
}

namespace lawn {

// The RPCs timed by lawn_request_duration_seconds.
enum class Rpc { kStartTimer, kStartTimers, kDeleteTimer, kRescheduleTimer, kGetTimer, kListTimers, kGetStats };

class Metrics {
 public:
  // `durability` labels the firing-lateness histogram, so dashboards over several lawnds compare modes.
  explicit Metrics(uint32_t shards, std::string_view durability = "memory");
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Serves /metrics on `listen` (host:port; port 0 picks one). UNAVAILABLE if it cannot bind.
  absl::Status Serve(const std::string& listen);
  // The port /metrics is served on (0 if not serving).
  int port() const { return port_; }

  // Per shard, set once per worker round.
  prometheus::Gauge& pending_lawn(uint32_t shard) { return *shards_[shard].pending_lawn; }
  prometheus::Gauge& pending_wheel(uint32_t shard) { return *shards_[shard].pending_wheel; }
  prometheus::Gauge& lawn_buckets(uint32_t shard) { return *shards_[shard].buckets; }
  prometheus::Gauge& held_timers(uint32_t shard) { return *shards_[shard].held; }

  prometheus::Counter& starts() { return *starts_; }
  prometheus::Counter& deletes() { return *deletes_; }
  prometheus::Counter& reschedules() { return *reschedules_; }
  prometheus::Counter& expirations() { return *expirations_; }
  prometheus::Counter& redeliveries() { return *redeliveries_; }
  prometheus::Counter& storage_syncs() { return *syncs_; }
  prometheus::Counter& skipped_firings() { return *skipped_; }
  prometheus::Counter& held_expirations() { return *held_; }
  // Acks that changed nothing: `unknown` (already acked, never sent, earlier process) or `foreign` (held by
  // another stream, or sent by an observer).
  prometheus::Counter& acks_ignored_unknown() { return *acks_unknown_; }
  prometheus::Counter& acks_ignored_foreign() { return *acks_foreign_; }
  // Calls refused for a full shard command queue (max_queued_commands).
  prometheus::Counter& overload_refusals() { return *overload_; }
  // Cluster mode: unary calls (and StartTimers parts) this member forwarded to another member.
  prometheus::Counter& forwarded_calls() { return *forwarded_; }
  prometheus::Gauge& checkpoints() { return *checkpoints_; }
  prometheus::Gauge& outbox_bytes() { return *outbox_bytes_; }
  prometheus::Gauge& storage_failed() { return *storage_failed_; }
  prometheus::Gauge& corrupt_records_skipped() { return *corrupt_skipped_; }
  // 1 while the TLS files on disk are broken and the previous certificate keeps serving (server/tls_files.h).
  prometheus::Gauge& tls_reload_failed() { return *tls_reload_failed_; }
  prometheus::Histogram& request_duration(Rpc rpc) { return *request_duration_[static_cast<size_t>(rpc)]; }
  // Both lateness histograms have the buckets LatenessBuckets() and are fed a round or a response at a time
  // (server/histogram_batch.h), so the hot path takes no lock per expiration.
  prometheus::Histogram& expiry_lateness() { return *lateness_; }
  // fired_at - deadline of each firing, observed once its round is written.
  prometheus::Histogram& fired_lateness() { return *fired_lateness_; }
  static const std::vector<double>& LatenessBuckets();
  prometheus::Counter& late_expirations() { return *late_; }
  prometheus::Histogram& storage_write_duration() { return *storage_write_; }
  prometheus::Gauge& recovery_duration() { return *recovery_; }
  prometheus::Gauge& data_dir_bytes() { return *data_dir_bytes_; }
  prometheus::Counter& store_snapshots() { return *store_snapshots_; }
  prometheus::Counter& store_snapshot_failures() { return *store_snapshot_failures_; }
  prometheus::Gauge& store_log_bytes() { return *store_log_bytes_; }
  prometheus::Gauge& store_snapshot_bytes() { return *store_snapshot_bytes_; }
  // lawn_storage_info{engine, format} 1: the store lawnd opened ("memory" and "none" without one), so that a
  // fleet's migrations (storage/store_migration.h) can be followed in Prometheus. Call once, after the open.
  void SetStorage(std::string_view engine, std::string_view format);
  prometheus::Gauge& outbox(const std::string& ns);
  prometheus::Gauge& subscribers(const std::string& ns);
  // Removes a forgotten namespace's series.
  void RemoveNamespace(const std::string& ns);
  // Calls refused by authentication or authorization, by reason: "unauthenticated", "permission_denied".
  prometheus::Counter& auth_denials(const std::string& reason) { return auth_denials_family_->Add({{"reason", reason}}); }
  // Starts refused by a rate_limits entry, by namespace (series removed with the namespace's bucket).
  prometheus::Counter& rate_limited(const std::string& ns) { return rate_limited_family_->Add({{"namespace", ns}}); }
  void RemoveRateLimited(const std::string& ns) { rate_limited_family_->Remove(&rate_limited(ns)); }

 private:
  struct ShardGauges {
    prometheus::Gauge* pending_lawn;
    prometheus::Gauge* pending_wheel;
    prometheus::Gauge* buckets;
    prometheus::Gauge* held;
  };

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  std::vector<ShardGauges> shards_;
  prometheus::Counter* starts_;
  prometheus::Counter* deletes_;
  prometheus::Counter* reschedules_;
  prometheus::Counter* expirations_;
  prometheus::Counter* redeliveries_;
  prometheus::Counter* syncs_;
  prometheus::Counter* skipped_;
  prometheus::Counter* held_;
  prometheus::Counter* acks_unknown_;
  prometheus::Counter* acks_foreign_;
  prometheus::Counter* overload_;
  prometheus::Counter* forwarded_;
  prometheus::Gauge* checkpoints_;
  prometheus::Gauge* outbox_bytes_;
  prometheus::Gauge* storage_failed_;
  prometheus::Gauge* corrupt_skipped_;
  prometheus::Gauge* tls_reload_failed_;
  std::vector<prometheus::Histogram*> request_duration_;
  prometheus::Histogram* lateness_;
  prometheus::Histogram* fired_lateness_;
  prometheus::Counter* late_;
  prometheus::Histogram* storage_write_;
  prometheus::Gauge* recovery_;
  prometheus::Gauge* data_dir_bytes_;
  prometheus::Counter* store_snapshots_;
  prometheus::Counter* store_snapshot_failures_;
  prometheus::Gauge* store_log_bytes_;
  prometheus::Gauge* store_snapshot_bytes_;
  prometheus::Family<prometheus::Gauge>* outbox_family_;
  prometheus::Family<prometheus::Gauge>* subscribers_family_;
  prometheus::Family<prometheus::Counter>* auth_denials_family_;
  prometheus::Family<prometheus::Counter>* rate_limited_family_;
};

}  // namespace lawn
