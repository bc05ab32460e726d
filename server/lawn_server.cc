#include "server/lawn_server.h"

#include <chrono>
#include <filesystem>

#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/runtime.h"
#include "server/timer_service.h"
#include "spdlog/spdlog.h"
#include "storage/rocksdb_timer_store.h"

namespace lawn {

namespace {

constexpr char kServiceName[] = "lawn.v1.TimerService";

// The host part of "host:port" for the log line ("[::]" style kept as given).
std::string HostOf(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

}  // namespace

LawnServer::LawnServer(const Options& options) : options_(options) {}

LawnServer::~LawnServer() {
  if (server_ != nullptr) Drain();
}

absl::Status LawnServer::Start() {
  std::unique_ptr<TimerStore> store;
  if (options_.durability != Durability::kMemory) {
    RocksDbStoreOptions store_options;
    store_options.path = options_.data_dir;
    store_options.min_free_disk_bytes = options_.min_free_disk_bytes;
    absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> opened = RocksDbTimerStore::Open(store_options);
    if (!opened.ok()) return opened.status();
    store = std::move(*opened);
  }
  runtime_ = std::make_unique<Runtime>(options_, std::move(store));
  if (absl::Status s = runtime_->Start(); !s.ok()) return s;

  service_ = std::make_unique<TimerServiceImpl>(*runtime_);
  grpc::EnableDefaultHealthCheckService(true);
  // Linking alone can be dropped by --as-needed; the explicit call keeps reflection registered.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  // A request larger than this is refused by gRPC with RESOURCE_EXHAUSTED before it is buffered whole.
  builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    runtime_->Stop();
    return absl::UnavailableError("cannot listen on " + options_.listen + " (config key listen, flag --listen)");
  }
  UpdateHealth();
  runtime_->SetHealthListener([this] { UpdateHealth(); });
  spdlog::info("lawnd listening on {}:{} (health NOT_SERVING until recovery is done)", HostOf(options_.listen),
               port_);
  return absl::OkStatus();
}

void LawnServer::UpdateHealth() {
  if (server_ == nullptr) return;
  const bool serving = runtime_->ready() && !runtime_->write_failed() && !draining_.load();
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
}

void LawnServer::Drain() {
  if (server_ == nullptr) return;
  draining_.store(true);
  UpdateHealth();
  const auto deadline = std::chrono::system_clock::now() + options_.shutdown_timeout;
  // Streams never end on their own: end them first, so Shutdown only waits for unary calls.
  service_->CloseStreams(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is shutting down; reconnect"));
  server_->Shutdown(deadline);
  runtime_->Stop();
  server_.reset();
}

}  // namespace lawn
