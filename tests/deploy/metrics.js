// The Prometheus metrics lawnd exports (server/metrics.h): the contract between lawnd and
// deploy/grafana/lawn.json. A dashboard query may name only these (histograms also as _bucket, _sum, _count).
'use strict';

const METRICS = {
  lawn_pending_timers: {type: 'gauge', labels: ['shard', 'structure']},
  lawn_lawn_buckets: {type: 'gauge', labels: ['shard']},
  lawn_timer_operations_total: {type: 'counter', labels: ['op']},
  lawn_expirations_total: {type: 'counter', labels: []},
  lawn_request_duration_seconds: {type: 'histogram', labels: ['method']},
  lawn_expiry_lateness_seconds: {type: 'histogram', labels: []},
  lawn_fired_lateness_seconds: {type: 'histogram', labels: ['durability']},
  lawn_late_expirations_total: {type: 'counter', labels: []},
  lawn_outbox_expirations: {type: 'gauge', labels: ['namespace']},
  lawn_redeliveries_total: {type: 'counter', labels: []},
  lawn_subscribers: {type: 'gauge', labels: ['namespace']},
  lawn_storage_write_duration_seconds: {type: 'histogram', labels: []},
  lawn_storage_syncs_total: {type: 'counter', labels: []},
  lawn_recovery_duration_seconds: {type: 'gauge', labels: []},
  lawn_data_dir_bytes: {type: 'gauge', labels: []},
  lawn_held_timers: {type: 'gauge', labels: ['shard']},
  lawn_skipped_firings_total: {type: 'counter', labels: []},
  lawn_held_expirations_total: {type: 'counter', labels: []},
  lawn_acks_ignored_total: {type: 'counter', labels: ['reason']},
  lawn_overload_refusals_total: {type: 'counter', labels: []},
  lawn_checkpoints: {type: 'gauge', labels: []},
  lawn_outbox_bytes: {type: 'gauge', labels: []},
  lawn_storage_failed: {type: 'gauge', labels: []},
};

// Families present in /metrics from the start; the per-namespace ones appear with the first namespace.
const ALWAYS_EXPORTED_METRICS = Object.keys(METRICS).filter((m) => !METRICS[m].labels.includes('namespace'));

// The series names a query may use for each metric.
function seriesNames() {
  const names = new Map();
  for (const [name, {type}] of Object.entries(METRICS)) {
    names.set(name, name);
    if (type === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.set(name + suffix, name);
    }
  }
  return names;
}

module.exports = {METRICS, ALWAYS_EXPORTED_METRICS, seriesNames};
