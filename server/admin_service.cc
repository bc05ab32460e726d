#include "server/admin_service.h"

#include <chrono>
#include <filesystem>

#include "server/proto_convert.h"
#include "server/validation.h"
#include "spdlog/spdlog.h"
#include "storage/rocksdb_timer_store.h"

namespace lawn {

grpc::ServerUnaryReactor* AdminServiceImpl::CreateCheckpoint(grpc::CallbackServerContext* context,
                                                             const v1::CreateCheckpointRequest* request,
                                                             v1::CreateCheckpointResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (store_ == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 "no store to checkpoint: lawnd runs with durability memory"));
    return reactor;
  }
  std::string name = request->name();
  if (name.empty()) {
    name = "checkpoint-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
  }
  // Same rule as namespaces: a plain file name, no path tricks.
  absl::StatusOr<std::string_view> valid = ValidateNamespace(name);
  if (!valid.ok() || name == "." || name == "..") {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "name: use 1..64 of [a-z0-9._-] (not . or ..), or empty for a timestamped name"));
    return reactor;
  }
  std::error_code ec;
  const std::filesystem::path parent =
      std::filesystem::absolute(data_dir_, ec) / RocksDbTimerStore::kCheckpointsDir;
  const std::string path = (parent / name).string();
  absl::MutexLock lock(&mu_);
  workers_.emplace_back([this, reactor, response, parent, path] {
    std::error_code mkdir_ec;
    std::filesystem::create_directories(parent, mkdir_ec);
    absl::Status s = mkdir_ec ? absl::UnavailableError("create " + parent.string() + ": " + mkdir_ec.message())
                              : store_->Checkpoint(path);
    if (s.ok()) {
      response->set_path(path);
      spdlog::info("checkpoint written to {}", path);
    } else {
      spdlog::warn("checkpoint to {} failed: {}", path, s.ToString());
    }
    reactor->Finish(ToGrpcStatus(s));
  });
  return reactor;
}

void AdminServiceImpl::Drain() {
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

}  // namespace lawn
