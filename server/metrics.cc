#include "server/metrics.h"

#include <exception>

#include "prometheus/exposer.h"

namespace lawn {

namespace {

// Seconds; from sub-millisecond (the expiry goal is p99 < 2 ms) to minutes (fires after downtime).
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

constexpr const char* kRpcNames[] = {"StartTimer", "StartTimers",    "DeleteTimer", "RescheduleTimer",
                                     "GetTimer",   "ListTimers",     "GetStats"};

}  // namespace

const std::vector<double>& Metrics::LatenessBuckets() {
  static const std::vector<double> buckets(kLatencyBuckets.begin(), kLatencyBuckets.end());
  return buckets;
}

Metrics::Metrics(uint32_t shards, std::string_view durability) : registry_(std::make_shared<prometheus::Registry>()) {
  auto& pending = prometheus::BuildGauge()
                      .Name("lawn_pending_timers")
                      .Help("Pending timers by shard and structure (lawn: TTL buckets, wheel: timing wheel)")
                      .Register(*registry_);
  auto& buckets = prometheus::BuildGauge()
                      .Name("lawn_lawn_buckets")
                      .Help("Lawn TTL buckets in use, by shard")
                      .Register(*registry_);
  auto& held = prometheus::BuildGauge()
                   .Name("lawn_held_timers")
                   .Help("Due one-shot timers held in the engine because their namespace's outbox is full, by shard")
                   .Register(*registry_);
  for (uint32_t s = 0; s < shards; ++s) {
    const std::string shard = std::to_string(s);
    shards_.push_back({&pending.Add({{"shard", shard}, {"structure", "lawn"}}),
                       &pending.Add({{"shard", shard}, {"structure", "wheel"}}), &buckets.Add({{"shard", shard}}),
                       &held.Add({{"shard", shard}})});
  }
  auto& ops = prometheus::BuildCounter()
                  .Name("lawn_timer_operations_total")
                  .Help("Timers started, deleted and rescheduled")
                  .Register(*registry_);
  starts_ = &ops.Add({{"op", "start"}});
  deletes_ = &ops.Add({{"op", "delete"}});
  reschedules_ = &ops.Add({{"op", "reschedule"}});
  expirations_ = &prometheus::BuildCounter()
                      .Name("lawn_expirations_total")
                      .Help("Expirations fired (each firing of a recurring timer counts)")
                      .Register(*registry_)
                      .Add({});
  redeliveries_ = &prometheus::BuildCounter()
                       .Name("lawn_redeliveries_total")
                       .Help("Expirations delivered again after their ack timeout or their subscriber left")
                       .Register(*registry_)
                       .Add({});
  syncs_ = &prometheus::BuildCounter()
                .Name("lawn_storage_syncs_total")
                .Help("Synced storage writes and explicit WAL syncs")
                .Register(*registry_)
                .Add({});
  skipped_ = &prometheus::BuildCounter()
                  .Name("lawn_skipped_firings_total")
                  .Help("Firings of recurring timers skipped because their namespace's outbox was full")
                  .Register(*registry_)
                  .Add({});
  held_ = &prometheus::BuildCounter()
               .Name("lawn_held_expirations_total")
               .Help("Times a due one-shot timer was held back because its namespace's outbox was full")
               .Register(*registry_)
               .Add({});
  auto& ignored = prometheus::BuildCounter()
                      .Name("lawn_acks_ignored_total")
                      .Help("Acked delivery ids that changed nothing, by reason (unknown: already acked, never "
                            "sent or from an earlier process; foreign: held by another stream, or an observer)")
                      .Register(*registry_);
  acks_unknown_ = &ignored.Add({{"reason", "unknown"}});
  acks_foreign_ = &ignored.Add({{"reason", "foreign"}});
  overload_ = &prometheus::BuildCounter()
                   .Name("lawn_overload_refusals_total")
                   .Help("Calls refused with UNAVAILABLE because a shard's command queue was full")
                   .Register(*registry_)
                   .Add({});
  forwarded_ = &prometheus::BuildCounter()
                    .Name("lawn_forwarded_calls_total")
                    .Help("Cluster mode: calls (and StartTimers parts) forwarded to the member owning their partition")
                    .Register(*registry_)
                    .Add({});
  checkpoints_ = &prometheus::BuildGauge()
                      .Name("lawn_checkpoints")
                      .Help("Checkpoints kept in <data_dir>/checkpoints")
                      .Register(*registry_)
                      .Add({});
  outbox_bytes_ = &prometheus::BuildGauge()
                       .Name("lawn_outbox_bytes")
                       .Help("Bytes held by all outboxes, as counted against max_outbox_bytes")
                       .Register(*registry_)
                       .Add({});
  storage_failed_ = &prometheus::BuildGauge()
                         .Name("lawn_storage_failed")
                         .Help("1 after a storage write failed for good (lawnd refuses writes until restarted)")
                         .Register(*registry_)
                         .Add({});
  corrupt_skipped_ = &prometheus::BuildGauge()
                          .Name("lawn_corrupt_records_skipped")
                          .Help("Stored records the last recovery skipped because they could not be decoded "
                                "(skip_corrupt_records)")
                          .Register(*registry_)
                          .Add({});
  tls_reload_failed_ = &prometheus::BuildGauge()
                            .Name("lawn_tls_reload_failed")
                            .Help("1 while the TLS files on disk cannot be used (a key that does not match the "
                                  "certificate, no certificate, a missing file): new connections keep the previous "
                                  "certificate; 0 once valid files are in use")
                            .Register(*registry_)
                            .Add({});
  auto& requests = prometheus::BuildHistogram()
                       .Name("lawn_request_duration_seconds")
                       .Help("Time from receiving an RPC to answering it, by method")
                       .Register(*registry_);
  for (const char* name : kRpcNames) request_duration_.push_back(&requests.Add({{"method", name}}, kLatencyBuckets));
  lateness_ =
      &prometheus::BuildHistogram()
           .Name("lawn_expiry_lateness_seconds")
           .Help("Time from a timer's deadline to handing its expiration to a subscriber (first attempt)")
           .Register(*registry_)
           .Add({}, LatenessBuckets());
  fired_lateness_ = &prometheus::BuildHistogram()
                         .Name("lawn_fired_lateness_seconds")
                         .Help("fired_at - deadline of each firing (first firing of each deadline), recorded once "
                               "the firing is written; by durability mode")
                         .Register(*registry_)
                         .Add({{"durability", std::string(durability)}}, LatenessBuckets());
  late_ = &prometheus::BuildCounter()
               .Name("lawn_late_expirations_total")
               .Help("Firings more than 1 s (or one tick, if longer) after their deadline: the `late` flag")
               .Register(*registry_)
               .Add({});
  storage_write_ = &prometheus::BuildHistogram()
                        .Name("lawn_storage_write_duration_seconds")
                        .Help("Duration of one group-committed storage write (including fsync in sync mode)")
                        .Register(*registry_)
                        .Add({}, kLatencyBuckets);
  recovery_ = &prometheus::BuildGauge()
                   .Name("lawn_recovery_duration_seconds")
                   .Help("How long the last start-up recovery took")
                   .Register(*registry_)
                   .Add({});
  store_snapshots_ = &prometheus::BuildCounter()
                          .Name("lawn_store_snapshots_total")
                          .Help("Snapshots storage.engine log wrote (folds of its log)")
                          .Register(*registry_)
                          .Add({});
  store_snapshot_failures_ =
      &prometheus::BuildCounter()
           .Name("lawn_store_snapshot_failures_total")
           .Help("Snapshots storage.engine log failed to write (retried; its log grows meanwhile)")
           .Register(*registry_)
           .Add({});
  store_log_bytes_ = &prometheus::BuildGauge()
                          .Name("lawn_store_log_bytes")
                          .Help(
                              "storage.engine log: bytes of log since the last snapshot, what a restart "
                              "replays (0 with rocksdb)")
                          .Register(*registry_)
                          .Add({});
  store_snapshot_bytes_ = &prometheus::BuildGauge()
                               .Name("lawn_store_snapshot_bytes")
                               .Help("storage.engine log: size of the last snapshot (0 with rocksdb)")
                               .Register(*registry_)
                               .Add({});
  data_dir_bytes_ = &prometheus::BuildGauge()
                         .Name("lawn_data_dir_bytes")
                         .Help("Bytes of the files in the data directory")
                         .Register(*registry_)
                         .Add({});
  outbox_family_ = &prometheus::BuildGauge()
                        .Name("lawn_outbox_expirations")
                        .Help("Fired expirations not yet acked (ready or in flight), by namespace")
                        .Register(*registry_);
  subscribers_family_ = &prometheus::BuildGauge()
                             .Name("lawn_subscribers")
                             .Help("Connected Subscribe streams (work-sharing and observers), by namespace")
                             .Register(*registry_);
  auth_denials_family_ = &prometheus::BuildCounter()
                              .Name("lawn_auth_denials_total")
                              .Help("Calls refused: reason=unauthenticated (no or unknown credentials) or "
                                    "permission_denied (no grant for that namespace)")
                              .Register(*registry_);
  rate_limited_family_ = &prometheus::BuildCounter()
                              .Name("lawn_rate_limited_total")
                              .Help("Starts refused by a rate_limits entry, by namespace")
                              .Register(*registry_);
}

void Metrics::SetStorage(std::string_view engine, std::string_view format) {
  prometheus::BuildGauge()
      .Name("lawn_storage_info")
      .Help("The store lawnd opened: storage.engine (log, rocksdb; memory: none) and its storage format")
      .Register(*registry_)
      .Add({{"engine", std::string(engine)}, {"format", std::string(format)}})
      .Set(1);
}

Metrics::~Metrics() = default;

absl::Status Metrics::Serve(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError("cannot serve metrics on " + listen +
                                  " (config key metrics_listen, flag --metrics-listen): " + e.what());
  }
  exposer_->RegisterCollectable(registry_);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  return absl::OkStatus();
}

prometheus::Gauge& Metrics::outbox(const std::string& ns) { return outbox_family_->Add({{"namespace", ns}}); }

void Metrics::RemoveNamespace(const std::string& ns) {
  // Add returns the existing series for these labels; Remove takes it out of the family.
  outbox_family_->Remove(&outbox_family_->Add({{"namespace", ns}}));
  subscribers_family_->Remove(&subscribers_family_->Add({{"namespace", ns}}));
}

prometheus::Gauge& Metrics::subscribers(const std::string& ns) {
  return subscribers_family_->Add({{"namespace", ns}});
}

}  // namespace lawn
