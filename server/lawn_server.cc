#include "server/lawn_server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cluster/cluster_node.h"
#include "config/config.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/resource_quota.h"
#include "server/admin_service.h"
#include "server/auth.h"
#include "server/cluster_router.h"
#include "server/cluster_service.h"
#include "server/metrics.h"
#include "server/partition_gate.h"
#include "server/partition_mover.h"
#include "server/rate_limiter.h"
#include "server/runtime.h"
#include "server/timer_service.h"
#include "server/tls.h"
#include "spdlog/spdlog.h"
#include "storage/log_timer_store.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_migration.h"

namespace lawn {

namespace {

constexpr char kServiceName[] = "lawn.v1.TimerService";
constexpr char kLivenessService[] = "liveness";

// The host part of "host:port" for the log line ("[::]" style kept as given).
std::string HostOf(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

// The gRPC server limits of Options (config/options.h documents each).
void ApplyServerLimits(const Options& options, grpc::ServerBuilder& builder) {
  auto ms = [](std::chrono::nanoseconds d) {
    return static_cast<int>(std::min<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count(),
                                              INT32_MAX));
  };
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(options.grpc_max_concurrent_streams));
  // Keepalive enforcement: pings closer than this (even without calls) count as abuse; GOAWAY after 2.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             ms(options.grpc_keepalive_min_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  // The server's own keepalive pings find dead peers (and their Subscribe streams) within ~1.5 minutes.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  if (options.grpc_max_connection_idle.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ms(options.grpc_max_connection_idle));
  }
  if (options.grpc_max_connection_age.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, ms(options.grpc_max_connection_age));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30'000);
  }
  grpc::ResourceQuota quota("lawnd");
  quota.Resize(static_cast<size_t>(options.grpc_memory_quota_bytes));
  builder.SetResourceQuota(quota);
}

// Reflection registers itself as a plugin of every ServerBuilder once enabled; the health-only listener
// takes it out again, so the plaintext port serves grpc.health.v1 and nothing else.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const auto& p) {
                                    return dynamic_cast<grpc::reflection::ProtoServerReflectionPlugin*>(p.get()) != nullptr;
                                  }),
                   plugins->end());
  }
};

// The health listener's catch-all: every method but grpc.health.v1's answers UNIMPLEMENTED. (A server with
// no service of its own fails to start in gRPC 1.51: the default health service needs one to be polled.)
class HealthOnly final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refuse final : public grpc::ServerGenericBidiReactor {
     public:
      Refuse() { Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this port serves grpc.health.v1.Health only")); }
      void OnDone() override { delete this; }
    };
    return new Refuse;
  }
};

bool IsLoopback(const std::string& listen) {
  const std::string host = HostOf(listen);
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// Sets every health status lawnd reports on `server`'s default health service.
void SetHealth(grpc::Server* server, bool serving, bool alive) {
  if (server == nullptr) return;
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
  // For liveness probes: SERVING while recovering or draining; NOT_SERVING after a storage failure, which
  // only a restart (recovering from disk) clears, so Kubernetes restarts the pod.
  health->SetServingStatus(kLivenessService, alive);
}

// The engine storage.engine names, `auto` resolved: the one the data dir holds, `log` for a new data dir (and
// `rocksdb` with a StoreOpener, which opens RocksDB stores). Says which it took and why in the log.
absl::StatusOr<std::string> ChooseEngine(const Options& options, bool rocksdb_opener) {
  if (options.storage_engine != "auto") return options.storage_engine;
  if (rocksdb_opener) return std::string("rocksdb");
  absl::StatusOr<DataDirStore> holds = InspectDataDir(options.data_dir);
  if (!holds.ok()) return holds.status();
  const bool rocksdb = *holds == DataDirStore::kRocksDb;
  spdlog::info("storage.engine auto: {} ({})", rocksdb ? "rocksdb" : "log",
               *holds == DataDirStore::kNone ? "a new data dir"
                                             : (rocksdb ? "the data dir holds a RocksDB store (format 1 or 2)"
                                                        : "the data dir holds storage format 3"));
  return std::string(rocksdb ? "rocksdb" : "log");
}

// An explicit storage.engine on a data dir that holds the other engine's store converts it in place
// (storage/store_migration.h) and says so: `log` on a RocksDB store (formats 1 and 2) to format 3, `rocksdb`
// on a format 3 store back to format 2. `auto` keeps what the dir holds and never gets here.
absl::Status MigrateIfOtherEngine(const Options& options, const std::string& engine, bool cluster_mode) {
  absl::StatusOr<DataDirStore> holds = InspectDataDir(options.data_dir);
  if (!holds.ok()) return holds.status();
  const bool to_log = engine == "log";
  if (*holds != (to_log ? DataDirStore::kRocksDb : DataDirStore::kLog)) return absl::OkStatus();
  const char* const from_format = to_log ? "storage format 1 or 2, a RocksDB store" : "storage format 3";
  const char* const to_format = to_log ? "storage format 3" : "storage format 2";
  const char* const backup = to_log ? kFormat2BackupDir : kFormat3BackupDir;
  spdlog::info("data dir {}: holds {}; storage.engine: {}: migrating it to {}", options.data_dir, from_format,
               engine, to_format);
  StoreMigrationOptions migration;
  migration.path = options.data_dir;
  migration.staging = cluster_mode;
  migration.min_free_disk_bytes = options.min_free_disk_bytes;
  migration.write_buffer_bytes = options.write_buffer_bytes;
  const auto began = std::chrono::steady_clock::now();
  absl::StatusOr<StoreMigrationResult> migrated =
      to_log ? MigrateToLogStore(migration) : MigrateToRocksDbStore(migration);
  if (!migrated.ok()) {
    return absl::Status(migrated.status().code(),
                        absl::StrCat("migrating data dir ", options.data_dir, " to ", to_format,
                                     " failed (before the switch the old store is left as it was, which "
                                     "storage.engine: auto opens; a switch under way is finished at the next "
                                     "start): ",
                                     migrated.status().message()));
  }
  spdlog::info(
      "data dir {}: migrated to {} in {:.1f} s: {} timers, {} outbox entries, {} staged entries; the old "
      "store is kept in {}/{} ({}): delete it once this store is trusted",
      options.data_dir, to_format,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), migrated->timers,
      migrated->expirations, migrated->staged, options.data_dir, backup, from_format);
  return absl::OkStatus();
}

}  // namespace

LawnServer::LawnServer(const Options& options, StoreOpener open_store)
    : options_(options), open_store_(std::move(open_store)) {}

LawnServer::~LawnServer() {
  if (server_ != nullptr) Drain();
}

absl::Status LawnServer::Start() {
  std::unique_ptr<TimerStore> store;
  RocksDbTimerStore* rocksdb = nullptr;
  const bool cluster_mode = !options_.cluster_etcd_endpoints.empty();
  std::string engine = "memory";
  if (options_.durability != Durability::kMemory) {
    // A storage migration that a crash interrupted is finished (or its half-built store removed) before
    // anything looks at the data dir.
    absl::StatusOr<bool> resumed = ResumeStoreMigration(options_.data_dir);
    if (!resumed.ok()) return resumed.status();
    if (*resumed)
      spdlog::info("data dir {}: finished the storage migration that a restart interrupted",
                   options_.data_dir);
    absl::StatusOr<std::string> chosen = ChooseEngine(options_, open_store_ != nullptr);
    if (!chosen.ok()) return chosen.status();
    engine = *chosen;
    if (options_.storage_engine == engine) {
      if (absl::Status s = MigrateIfOtherEngine(options_, engine, cluster_mode); !s.ok()) return s;
    }
  }
  if (engine == "log") {
    LogStoreOptions log_options;
    log_options.path = options_.data_dir;
    log_options.min_free_disk_bytes = options_.min_free_disk_bytes;
    absl::StatusOr<std::unique_ptr<LogTimerStore>> opened = LogTimerStore::Open(log_options);
    if (!opened.ok()) return opened.status();
    spdlog::info("data dir {}: storage format {} (storage.engine: log)", log_options.path,
                 LogTimerStore::kFormatVersion);
    store = std::move(*opened);
  } else if (engine == "rocksdb") {
    RocksDbStoreOptions store_options;
    store_options.path = options_.data_dir;
    store_options.staging = cluster_mode;  // Partition hand-overs stage expirations there.
    store_options.min_free_disk_bytes = options_.min_free_disk_bytes;
    store_options.write_buffer_bytes = options_.write_buffer_bytes;
    absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> opened =
        open_store_ ? open_store_(store_options) : RocksDbTimerStore::Open(store_options);
    if (!opened.ok()) return opened.status();
    rocksdb = opened->get();
    if (std::optional<uint64_t> migrated = rocksdb->migrated_from_v1()) {
      spdlog::info("data dir {}: storage format version 1 migrated to {}: {} timers re-keyed by deadline",
                   store_options.path, RocksDbTimerStore::kFormatVersion, *migrated);
    }
    spdlog::info("data dir {}: storage format {} (storage.engine: rocksdb)", store_options.path,
                 RocksDbTimerStore::kFormatVersion);
    store = std::move(*opened);
  }
  metrics_ = std::make_unique<Metrics>(options_.shards, DurabilityName(options_.durability));
  metrics_->SetStorage(engine, engine == "log"       ? std::to_string(LogTimerStore::kFormatVersion)
                               : engine == "rocksdb" ? std::to_string(RocksDbTimerStore::kFormatVersion)
                                                     : "none");
  if (!options_.metrics_listen.empty()) {
    if (absl::Status s = metrics_->Serve(options_.metrics_listen); !s.ok()) return s;
    spdlog::info("metrics on http://{}:{}/metrics", HostOf(options_.metrics_listen), metrics_->port());
  }
  // Credentials and tokens are checked before anything starts: a bad file stops lawnd with its name.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options_, *metrics_, &tls_files_);
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::unique_ptr<Authenticator>> auth = Authenticator::Create(options_.auth_tokens_file, metrics_.get());
  if (!auth.ok()) return auth.status();
  auth_ = std::move(*auth);
  if (auth_->has_subjects() && options_.tls_client_ca_file.empty()) {
    spdlog::warn("auth: the tokens file names certificate subjects, but tls.client_ca_file is not set: no client "
                 "certificate is asked for, so those entries never match");
  }
  limiter_ = std::make_unique<RateLimiter>(options_.rate_limits, metrics_.get());
  if (!IsLoopback(options_.listen)) {
    if (!auth_->enabled()) {
      spdlog::warn("listening on {} (not loopback) without authentication: any client that reaches it may "
                   "read, change and delete every timer; set auth.tokens_file", options_.listen);
    }
    if (options_.tls_cert_file.empty()) {
      spdlog::warn("listening on {} (not loopback) without TLS: tokens and payloads cross the network in "
                   "clear text; set tls.cert_file and tls.key_file", options_.listen);
    }
  }

  runtime_ = std::make_unique<Runtime>(options_, std::move(store), metrics_.get());
  if (cluster_mode) {
    // Every write and firing checks its partition on the shard worker (server/partition_gate.h).
    gate_ = std::make_unique<PartitionGate>(options_.cluster_member, options_.cluster_partitions);
    runtime_->SetPartitionGate(gate_.get());
    // Nothing fires until this member has joined and while it cannot prove its lease (docs/cluster.md).
    runtime_->SetFiringFence([this] {
      const ClusterNode* node = cluster_view_.load(std::memory_order_acquire);
      return node != nullptr && node->Fresh();
    });
  }
  if (absl::Status s = runtime_->Start(); !s.ok()) return s;

  service_ = std::make_unique<TimerServiceImpl>(*runtime_, *auth_, *limiter_);
  if (cluster_mode) service_->EnableClusterMode();
  cluster_service_ = std::make_unique<ClusterServiceImpl>(*auth_, cluster_mode);
  // A revoked token or grant also ends the Subscribe streams it opened.
  auth_->SetReloadListener([service = service_.get()] { service->RecheckStreams(); });
  admin_ = std::make_unique<AdminServiceImpl>(
      runtime_->store(), options_.data_dir, options_.checkpoint_retention, metrics_.get(), *auth_, *runtime_);
  grpc::EnableDefaultHealthCheckService(true);
  // Linking alone can be dropped by --as-needed; the explicit call keeps reflection registered.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, *credentials, &port_);
  // gRPC sets SO_REUSEPORT by default: a second lawnd on a port in use would start and the kernel would split
  // clients between two processes with different data. Without it, binding a used port fails.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  ApplyServerLimits(options_, builder);
  builder.RegisterService(service_.get());
  builder.RegisterService(admin_.get());
  builder.RegisterService(cluster_service_.get());
  // A request larger than this is refused by gRPC with RESOURCE_EXHAUSTED before it is buffered whole.
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    runtime_->Stop();
    return absl::UnavailableError("cannot listen on " + options_.listen + " (config key listen, flag --listen)");
  }
  if (!options_.health_listen.empty()) {
    // A server of its own with no service registered: gRPC adds only the default health service, so the
    // plaintext port answers health checks and nothing else.
    grpc::ServerBuilder health_builder;
    health_builder.SetOption(std::make_unique<WithoutReflection>());
    health_only_ = std::make_unique<HealthOnly>();
    health_builder.RegisterCallbackGenericService(health_only_.get());
    health_builder.AddListeningPort(options_.health_listen, grpc::InsecureServerCredentials(), &health_port_);
    health_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    health_builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 100);
    health_server_ = health_builder.BuildAndStart();
    if (health_server_ == nullptr || health_port_ == 0) {
      // Undone like a failed main port: no server left for the destructor's drain.
      server_->Shutdown();
      server_.reset();
      health_server_.reset();
      runtime_->Stop();
      return absl::UnavailableError("cannot listen on " + options_.health_listen +
                                    " (config key health_listen, flag --health-listen)");
    }
    spdlog::info("health (plaintext, grpc.health.v1 only) on {}:{}", HostOf(options_.health_listen), health_port_);
  }
  if (cluster_mode) {
    if (absl::Status s = JoinCluster(); !s.ok()) {
      server_->Shutdown(std::chrono::system_clock::now());
      server_.reset();
      if (health_server_ != nullptr) health_server_->Shutdown(std::chrono::system_clock::now());
      health_server_.reset();
      runtime_->Stop();
      return s;
    }
  }
  UpdateHealth();
  runtime_->SetHealthListener([this] { UpdateHealth(); });
  spdlog::info("lawnd listening on {}:{} ({}{}; health NOT_SERVING until recovery is done)", HostOf(options_.listen),
               port_, options_.tls_cert_file.empty() ? "plaintext" : options_.tls_client_ca_file.empty() ? "TLS" : "mutual TLS",
               auth_->enabled() ? ", tokens required" : "");
  return absl::OkStatus();
}

namespace {

// The contents of `path` (a PEM file named by config key), or NOT_FOUND naming it.
absl::Status ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path + " (cluster mode with tls)");
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return absl::OkStatus();
}

}  // namespace

absl::Status LawnServer::JoinCluster() {
  ClusterNodeOptions cluster;
  for (absl::string_view endpoint : absl::StrSplit(options_.cluster_etcd_endpoints, ',')) {
    cluster.etcd_endpoints.emplace_back(endpoint.data(), endpoint.size());
  }
  cluster.cluster = options_.cluster_name;
  cluster.member = options_.cluster_member;
  cluster.advertise = options_.cluster_advertise;
  if (cluster.advertise.size() >= 2 && cluster.advertise.compare(cluster.advertise.size() - 2, 2, ":0") == 0) {
    cluster.advertise = cluster.advertise.substr(0, cluster.advertise.size() - 1) + std::to_string(port_);
  }
  cluster.partitions = options_.cluster_partitions;
  cluster.lease_ttl = std::chrono::duration_cast<std::chrono::seconds>(options_.cluster_lease_ttl);
  cluster.expect_members = options_.cluster_expect_members;
  absl::StatusOr<std::unique_ptr<ClusterNode>> node = ClusterNode::Join(cluster);
  if (!node.ok()) {
    return absl::Status(node.status().code(), "cannot join cluster '" + options_.cluster_name + "' through etcd " +
                                                  options_.cluster_etcd_endpoints + ": " +
                                                  std::string(node.status().message()));
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options_.tls_cert_file.empty()) {
    // Members speak TLS to each other: the cluster CA checks the other member, and this member's own
    // certificate answers a member that asks for one (mutual TLS).
    grpc::SslCredentialsOptions ssl;
    absl::Status read = ReadWholeFile(options_.cluster_tls_ca_file, &ssl.pem_root_certs);
    if (read.ok()) read = ReadWholeFile(options_.tls_cert_file, &ssl.pem_cert_chain);
    if (read.ok()) read = ReadWholeFile(options_.tls_key_file, &ssl.pem_private_key);
    if (!read.ok()) return read;
    credentials = grpc::SslCredentials(ssl);
  }
  if (auth_->enabled() && options_.cluster_token_file.empty()) {
    spdlog::warn("cluster: auth is on and cluster.token_file is not set: members cannot authenticate their "
                 "partition hand-overs to each other, so members that join or are drained get UNAUTHENTICATED");
  }
  cluster_ = std::move(*node);
  router_ = std::make_unique<ClusterRouter>(*cluster_, std::move(credentials), options_.cluster_tls_server_name);
  cluster_view_.store(cluster_.get(), std::memory_order_release);
  service_->SetRouter(router_.get());
  mover_ = std::make_unique<PartitionMover>(*runtime_, *gate_, *cluster_, *router_);
  cluster_->SetMapListener([mover = mover_.get()](const ClusterMap& map) { mover->OnMap(map); });
  cluster_->SetMoveDriver([mover = mover_.get()](const Assignment& target, std::shared_ptr<const ClusterMap> map) {
    mover->Drive(target, std::move(map));
  });
  cluster_service_->SetMover(mover_.get());
  cluster_service_->SetNode(cluster_.get());
  spdlog::info("cluster mode: member {} of cluster '{}' ({} partitions), advertising {}", cluster.member,
               cluster.cluster, cluster.partitions, cluster.advertise);
  return absl::OkStatus();
}

void LawnServer::UpdateHealth() {
  if (server_ == nullptr) return;
  const bool serving = runtime_->ready() && !runtime_->write_failed() && !draining_.load();
  SetHealth(server_.get(), serving, !runtime_->write_failed());
  SetHealth(health_server_.get(), serving, !runtime_->write_failed());
}

absl::Status LawnServer::WaitUntilRecovered() { return runtime_->WaitUntilReady(); }

TimerStore* LawnServer::store() { return runtime_ != nullptr ? runtime_->store() : nullptr; }

void LawnServer::Drain() {
  if (server_ == nullptr) return;
  draining_.store(true);
  auth_->SetReloadListener(nullptr);  // The streams are ended below; the service goes with the server.
  UpdateHealth();
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdown_timeout;
  // New calls are answered UNAVAILABLE; streams never end on their own, so end them; then wait for the unary
  // calls in flight (their storage writes) to be answered.
  service_->BeginDrain();
  service_->CloseStreams(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is shutting down; reconnect"));
  if (!service_->WaitIdle(deadline)) spdlog::warn("drain: calls still in flight at shutdown_timeout; cancelling");
  admin_->Drain();
  if (mover_ != nullptr) mover_->Stop();  // No new hand-over; one under way finishes below.
  if (cluster_ != nullptr) {
    // The member key goes at once, so the others stop forwarding here; the fence closes, so nothing fires
    // between here and the end. The partitions stay this member's until it comes back.
    cluster_->Leave();
  }
  // Every admitted call is done (OnDone), but "done" means its answer reached the kernel's send buffer, not
  // the client: a forced close at once (Shutdown with a past deadline) resets a connection whose client has
  // not read a large answer yet (CI saw a 60 MB ListTimers page cut by ECONNRESET). A graceful Shutdown sends
  // GOAWAY and closes each connection once its client acknowledges it (a PING behind the data, so the client
  // has read everything first). A client that is reading answers within a round trip; an idle C++ or Python
  // channel polls its socket only every few seconds, and waiting for it would protect nothing, so the grace
  // is kCloseGrace (within the drain's deadline), after which what is still open is cut.
  constexpr auto kCloseGrace = std::chrono::seconds(1);
  const auto grace = std::chrono::system_clock::now() +
                     std::clamp<std::chrono::steady_clock::duration>(deadline - std::chrono::steady_clock::now(),
                                                                     std::chrono::steady_clock::duration::zero(),
                                                                     kCloseGrace);
  server_->Shutdown(grace);
  if (health_server_ != nullptr) health_server_->Shutdown(grace);
  mover_.reset();  // Waits for a hand-over under way: it needs the runtime, which stops next.
  runtime_->Stop();
  server_.reset();
  health_server_.reset();
}

}  // namespace lawn
