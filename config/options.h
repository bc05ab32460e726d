// Options: every setting of lawnd, as one plain struct.
//
// The defaults below are the documented defaults (config/lawn.yaml, config/REFERENCE.md). Two fields use 0 as
// "derive it": `shards` and `max_pending_per_namespace`; Validate() (config/config.h) replaces them with the
// derived value, so an Options returned by a loader never holds those zeros. The allowed ranges are checked
// by Validate(), not here: a default-constructed Options is valid but not yet resolved.
//
// Thread-safety: a plain value; copy it freely, share it read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace lawn {

// What a successful write call has promised about the disk.
enum class Durability {
  kSync,      // "sync": the write is fsynced before the call returns.
  kInterval,  // "interval": fsynced in groups every `sync_interval`; a crash loses at most that window.
  kMemory,    // "memory": nothing is written to disk; a restart loses every timer.
};

// One entry of `rate_limits`: starts into a namespace matching one of `namespaces` (exact names, a trailing-*
// prefix, or "*") are limited by a token bucket of that namespace: `starts_per_second` refill, `burst` size.
// The first entry that matches a namespace applies; each namespace has its own bucket.
struct RateLimit {
  std::vector<std::string> namespaces;
  double starts_per_second = 0;
  uint64_t burst = 0;  // Omitted in YAML: max(1, starts_per_second rounded up), resolved by the loader.

  friend bool operator==(const RateLimit&, const RateLimit&) = default;
};

struct Options {
  // gRPC listen address, host:port. Port 0 picks a free port (the server logs the one it got).
  // Default "127.0.0.1:7070".
  std::string listen = "127.0.0.1:7070";

  // Prometheus /metrics HTTP address, host:port; port 0 picks a free port. Empty disables the endpoint.
  // Default "127.0.0.1:9464".
  std::string metrics_listen = "127.0.0.1:9464";

  // Plaintext gRPC listener that serves only grpc.health.v1.Health (the same statuses as the main port), for
  // Kubernetes' native gRPC probes, which speak no TLS. host:port; port 0 picks a free port. "" = none.
  // Default "".
  std::string health_listen;

  // TLS on the gRPC port (config section `tls:`): the server's certificate chain and key (PEM files), both or
  // neither; "" = plaintext. Reloaded when they change on disk (rotation without restart), through the
  // validated copy in <data_dir>/tls-active (server/tls_files.h).
  std::string tls_cert_file;
  std::string tls_key_file;
  // With it, clients must present a certificate signed by this CA (PEM) (mutual TLS). Needs tls_cert_file.
  std::string tls_client_ca_file;

  // Tokens and their grants (config section `auth:`, key tokens_file; format in README, Security). When set,
  // every TimerService and AdminService call needs a token or a client certificate the file names; reloaded
  // when it changes. "" = no authentication (for local use). Default "".
  std::string auth_tokens_file;

  // Directory of the RocksDB store; created if missing. Unused with Durability::kMemory, except for
  // tls-active when TLS is on.
  // Default "./lawn-data".
  std::string data_dir = "./lawn-data";

  // Number of shards (one worker thread each). 0 = one per CPU core (std::thread::hardware_concurrency(), at
  // least 1, at most 256), resolved by Validate(). Allowed 0..256. Default 0.
  uint32_t shards = 0;

  // Granularity of the timing wheel: a timer fires within one tick after its deadline.
  // Allowed 1us..1s. Default 1ms.
  std::chrono::nanoseconds tick = std::chrono::milliseconds(1);

  // Largest payload a timer may carry, in bytes. Allowed 0..4MiB, and below max_message_bytes.
  // Default 65536 (64 KiB).
  uint32_t max_payload_bytes = 64 * 1024;

  // Most timers pending at once over the whole server; new timers beyond it are refused.
  // Allowed >= 1. Default 10'000'000.
  uint64_t max_pending_timers = 10'000'000;

  // Most timers pending at once in one namespace. 0 = same as max_pending_timers, resolved by Validate().
  // Allowed 0..max_pending_timers. Default 0.
  uint64_t max_pending_per_namespace = 0;

  // Most bytes of ids and payloads held by pending timers over the whole server; starts beyond it are refused.
  // Allowed >= 1KiB. Default 2GiB.
  uint64_t max_pending_bytes = uint64_t{2} << 30;

  // Most bytes of ids and payloads held by the pending timers of one namespace. 0 = same as
  // max_pending_bytes, resolved by Validate(). Allowed 0..max_pending_bytes. Default 0.
  uint64_t max_pending_bytes_per_namespace = 0;

  // Most fired, unacknowledged expirations one namespace's outbox holds. When it is full, the namespace's
  // due one-shot timers wait in the engine, its recurring timers skip firings, and its new timers are
  // refused. Allowed 1..1e9. Default 1'000'000.
  uint64_t max_outbox_per_namespace = 1'000'000;

  // Most bytes (key + payload + 192 bytes of bookkeeping per expiration) one namespace's outbox holds; same
  // effects as max_outbox_per_namespace. Allowed 1MiB.., and above max_payload_bytes. Default 256MiB.
  uint64_t max_outbox_bytes_per_namespace = uint64_t{256} << 20;

  // Most bytes all outboxes together hold (same accounting and effects). Allowed 1MiB.., at least
  // max_outbox_bytes_per_namespace. Default 512MiB.
  uint64_t max_outbox_bytes = uint64_t{512} << 20;

  // Most namespaces lawnd tracks at once (a namespace costs an outbox and metric series). A namespace is
  // created by its first start or subscription and forgotten, with its series, once it holds no pending timer,
  // no outbox entry and no subscriber. Allowed 1..65536. Default 65536.
  uint32_t max_namespaces = 65534;

  // Most Subscribe streams (work-sharing and observers) attached to one namespace. Allowed 1..100000.
  // Default 1000.
  uint32_t max_subscribers_per_namespace = 1000;

  // Most commands queued for one shard worker; beyond it calls are refused with UNAVAILABLE (retry with
  // backoff). Allowed 1000..10'000'000. Default 100'000.
  uint64_t max_queued_commands = 100'000;

  // gRPC: most concurrent calls (streams) on one client connection. Allowed 1..1'000'000. Default 1000.
  uint32_t grpc_max_concurrent_streams = 1000;

  // gRPC keepalive enforcement: clients that ping more often than this are disconnected (GOAWAY
  // too_many_pings). Allowed 1s..1h. Default 10s.
  std::chrono::nanoseconds grpc_keepalive_min_time = std::chrono::seconds(10);

  // gRPC: a connection with no call in flight for this long is closed. 0 = never. Allowed 0..24h.
  // Default 30m.
  std::chrono::nanoseconds grpc_max_connection_idle = std::chrono::minutes(30);

  // gRPC: a connection older than this is asked to reconnect (its calls get 30 s to finish; Subscribe
  // streams then end UNAVAILABLE and clients reconnect). 0 = never. Allowed 0..7d. Default 0.
  std::chrono::nanoseconds grpc_max_connection_age = std::chrono::nanoseconds(0);

  // gRPC: memory the gRPC library may use for buffers of all connections (its resource quota).
  // Allowed 16MiB..64GiB. Default 1GiB.
  uint64_t grpc_memory_quota_bytes = uint64_t{1} << 30;

  // Checkpoints kept in <data_dir>/checkpoints: after a new one is written, the oldest beyond this many are
  // deleted. 0 = keep all. Allowed 0..1000. Default 5.
  uint32_t checkpoint_retention = 5;

  // How long a delivered expiration waits for its ack before it is delivered again.
  // Allowed 100ms..1h. Default 30s.
  std::chrono::nanoseconds ack_timeout = std::chrono::seconds(30);

  // Most unacknowledged expirations one subscriber may hold: the upper limit on what a subscriber asks for.
  // Allowed 1..100000. Default 1000.
  uint32_t max_in_flight = 1000;

  // When a write reaches the disk. Default Durability::kSync ("sync").
  Durability durability = Durability::kSync;

  // Group-commit period with Durability::kInterval (ignored otherwise, but still range-checked).
  // Allowed 1ms..10s. Default 50ms.
  std::chrono::nanoseconds sync_interval = std::chrono::milliseconds(50);

  // Free-space guard: writes (start, delete, reschedule, expiry) are refused while the disk holding data_dir
  // has less free space than this (plus one round's headroom), in bytes.
  // 0 disables the check. Default 268435456 (256 MiB).
  uint64_t min_free_disk_bytes = uint64_t{256} * 1024 * 1024;

  // Where durable modes keep timers: "rocksdb" (storage format 2, one RocksDB record per timer), "log"
  // (storage format 3: a round log of lawnd's own, folded into snapshots; docs/durable-log.md), or "auto":
  // the engine of the store the data dir holds, "log" for a new data dir (so a data dir written before "auto"
  // was the default keeps its RocksDB store). A data dir holds one or the other; "rocksdb" or "log" set on a
  // data dir holding the other's store converts it at start (storage/store_migration.h), "auto" never does.
  // Flag --storage-engine. Default "auto".
  std::string storage_engine = "auto";

  // Memory RocksDB keeps recent writes in before flushing them to files (all column families together; a
  // restart replays at most about this much WAL). Large enough by default that a burst of a million
  // short-lived timers is started, fired and acked without a flush. Allowed 16MiB..64GiB. Default 256 MiB.
  uint64_t write_buffer_bytes = uint64_t{256} * 1024 * 1024;

  // gRPC maximum receive message size, in bytes. Allowed 64KiB..64MiB. Default 4194304 (4 MiB).
  uint32_t max_message_bytes = 4 * 1024 * 1024;

  // Bound on the drain at SIGTERM (finish in-flight calls, flush the store) before the process exits anyway.
  // Allowed 0..10m. Default 10s.
  std::chrono::nanoseconds shutdown_timeout = std::chrono::seconds(10);

  // Recovery: a record that cannot be decoded is logged (key and reason), counted and skipped instead of
  // stopping lawnd (exit code 3). For getting a damaged store running again; its timers are lost.
  // Flag --skip-corrupt-records. Default false.
  bool skip_corrupt_records = false;

  // Lowest log level printed: trace, debug, info, warn, error, critical or off. Default "info".
  std::string log_level = "info";

  // Log line format: "text" (human-readable) or "json" (one object per line). Default "text".
  std::string log_format = "text";

  // Most Lawn buckets (one per regular TTL) per shard (ShardOptions::max_lawn_buckets); timers of further
  // TTLs go to the timing wheel. Allowed 1..65535. Default 1024.
  uint32_t lawn_max_buckets = 1024;

  // Sightings after which a TTL counts as regular and gets a Lawn bucket (see core/ttl_router.h).
  // Allowed 1..1000. Default 2.
  uint32_t lawn_promote_after = 2;

  // Cluster mode (section `cluster:`, docs/cluster.md). etcd's client endpoints, comma-separated host:port (the
  // YAML may give a list); "" = no cluster: lawnd runs alone, exactly as without the section. Default "".
  std::string cluster_etcd_endpoints;

  // Key prefix of the cluster in etcd (/<name>/...): [a-z0-9._-], 1..63 characters. Default "lawn".
  std::string cluster_name = "lawn";

  // This member's stable name (the pod name in a StatefulSet): [a-z0-9._-], 1..63 characters. Required in
  // cluster mode. Default "".
  std::string cluster_member;

  // host:port at which the other members (and routing clients) reach this one; port 0 = the port lawnd got
  // for `listen`. Required in cluster mode. Default "".
  std::string cluster_advertise;

  // Partitions of the cluster, fixed when it first forms (stored in etcd; a member configured otherwise
  // refuses to start). Allowed 1..65536. Default 1024.
  uint32_t cluster_partitions = 1024;

  // TTL of the member's etcd lease (whole seconds): a member that stops renewing it stops serving before
  // it can expire. Allowed 2s..10m. Default 10s.
  std::chrono::nanoseconds cluster_lease_ttl = std::chrono::seconds(10);

  // A new cluster's partitions are handed out once this many members are live (as Consul's
  // bootstrap_expect), so the first member to start does not take them all. Allowed 1..1000. Default 1.
  uint32_t cluster_expect_members = 1;

  // With TLS on (tls.cert_file): PEM CA certificate(s) that the other members' server certificates chain to;
  // members forward calls to each other over TLS and present their own certificate (for mutual TLS).
  // Required in cluster mode with TLS. Default "".
  std::string cluster_tls_ca_file;

  // The name checked against the other members' certificates; "" = the host of their advertise address.
  // Default "".
  std::string cluster_tls_server_name;

  // With authentication on (auth.tokens_file): a file holding the bearer token members present to each other
  // for partition hand-overs (it needs the admin permission in the tokens file). Read at each hand-over, so
  // it can be rotated. "" = members call each other without a token (hand-overs are refused when auth is on).
  // Default "".
  std::string cluster_token_file;

  // Start rate limits per namespace (config section `rate_limits:`, a list). Empty = no limit. Not a field
  // of the key table (a list): the YAML loader parses it on its own.
  std::vector<RateLimit> rate_limits;

  friend bool operator==(const Options&, const Options&) = default;
};

}  // namespace lawn
