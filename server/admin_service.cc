#include "server/admin_service.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "server/metrics.h"
#include "server/proto_convert.h"
#include "server/runtime.h"
#include "server/validation.h"
#include "spdlog/spdlog.h"
#include "storage/timer_store.h"

namespace lawn {

namespace {

// Free space a checkpoint needs beyond the guard, checked before one starts: with storage.engine rocksdb, SST
// files are hard links, but the WAL, MANIFEST and OPTIONS files are copied (the flush of the memtables a
// checkpoint begins with is within the guard's own reserve of write_buffer_bytes). The log engine checks the
// exact size of the log it copies itself.
constexpr uint64_t kCheckpointHeadroomBytes = uint64_t{64} << 20;

std::filesystem::path CheckpointsDir(const std::string& data_dir) {
  std::error_code ec;
  return std::filesystem::absolute(data_dir, ec) / TimerStore::kCheckpointsDir;
}

}  // namespace

AdminServiceImpl::AdminServiceImpl(TimerStore* store, std::string data_dir, uint32_t retention,
                                   Metrics* metrics, const Authenticator& auth, Runtime& runtime)
    : store_(store),
      data_dir_(std::move(data_dir)),
      retention_(retention),
      metrics_(metrics),
      auth_(auth),
      runtime_(runtime) {
  if (store_ != nullptr && metrics_ != nullptr) {
    std::error_code ec;
    size_t count = 0;
    for (auto it = std::filesystem::directory_iterator(CheckpointsDir(data_dir_), ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++count;
    }
    metrics_->checkpoints().Set(static_cast<double>(count));
  }
}

template <typename Call>
bool AdminServiceImpl::Admit(grpc::CallbackServerContext& context, const grpc::ByteBuffer* raw_request,
                             const char* method, Call& call) {
  absl::StatusOr<Caller> caller = auth_.Authenticate(context, method);
  if (!caller.ok()) {
    call.Reply(ToGrpcStatus(caller.status()));
    return false;
  }
  if (grpc::Status s = ParseRequest(raw_request, method, &call.request); !s.ok()) {
    call.Reply(s);
    return false;
  }
  if (absl::Status s = auth_.Authorize(*caller, kPermAdmin, "", method); !s.ok()) {
    call.Reply(ToGrpcStatus(s));
    return false;
  }
  return true;
}

grpc::ServerUnaryReactor* AdminServiceImpl::SetTick(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* raw_request,
                                                    grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::SetTickRequest, v1::SetTickResponse>(raw_response, nullptr);
  if (!Admit(*context, raw_request, "SetTick", *call)) return call;
  // The bounds of the config key `tick`.
  const absl::StatusOr<uint64_t> tick = ValidateDuration("tick", call->request.tick(), /*min_ns=*/1'000);
  if (!tick.ok() || *tick > 1'000'000'000) {
    call->Reply(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "tick: must be a normalized Duration from 1us to 1s, e.g. 1ms (the config key `tick`)"));
    return call;
  }
  const uint64_t tick_ns = *tick;
  runtime_.SetTick(tick_ns, [call, tick_ns](uint64_t previous) {
    SetDuration(previous, call->response.mutable_previous());
    spdlog::info("tick changed from {} ns to {} ns by SetTick", previous, tick_ns);
    call->Reply(grpc::Status::OK);
  });
  return call;
}

grpc::ServerUnaryReactor* AdminServiceImpl::CreateCheckpoint(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* raw_request,
                                                             grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::CreateCheckpointRequest, v1::CreateCheckpointResponse>(raw_response, nullptr);
  auto refuse = [call](grpc::StatusCode code, const std::string& message) {
    call->Reply(grpc::Status(code, message));
    return call;
  };
  if (!Admit(*context, raw_request, "CreateCheckpoint", *call)) return call;
  if (store_ == nullptr) {
    return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                  "no store to checkpoint: checkpoints need durability sync or interval (durability memory "
                  "has no store)");
  }
  std::string name = call->request.name();
  if (name.empty()) {
    name = "checkpoint-" + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
  }
  // Same rule as namespaces: a plain file name, no path tricks.
  absl::StatusOr<std::string_view> valid = ValidateNamespace(name);
  if (!valid.ok() || name == "." || name == "..") {
    return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  "name: use 1..64 of [a-z0-9._-] (not . or ..), or empty for a timestamped name");
  }
  const std::filesystem::path parent = CheckpointsDir(data_dir_);
  const std::string path = (parent / name).string();
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    return refuse(grpc::StatusCode::ALREADY_EXISTS, "checkpoint '" + name + "' exists at " + path +
                                                        "; choose another name or leave it empty");
  }
  if (absl::Status space = store_->CheckSpace(kCheckpointHeadroomBytes); !space.ok()) {
    call->Reply(ToGrpcStatus(space));
    return call;
  }
  absl::MutexLock lock(&mu_);
  if (running_) {
    return refuse(grpc::StatusCode::ABORTED, "a checkpoint is being written; retry when it is done");
  }
  running_ = true;
  if (worker_.joinable()) worker_.join();  // The previous one has finished: running_ was false.
  worker_ = std::thread([this, call, parent, path] {
    std::error_code mkdir_ec;
    std::filesystem::create_directories(parent, mkdir_ec);
    absl::Status s = mkdir_ec ? absl::UnavailableError("create " + parent.string() + ": " + mkdir_ec.message())
                              : store_->Checkpoint(path);
    if (s.ok()) {
      call->response.set_path(path);
      const size_t kept = ApplyRetention();
      if (metrics_ != nullptr) metrics_->checkpoints().Set(static_cast<double>(kept));
      spdlog::info("checkpoint written to {} ({} kept)", path, kept);
    } else {
      spdlog::warn("checkpoint to {} failed: {}", path, s.ToString());
    }
    {
      absl::MutexLock done(&mu_);
      running_ = false;
    }
    call->Reply(ToGrpcStatus(s));
  });
  return call;
}

size_t AdminServiceImpl::ApplyRetention() {
  std::error_code ec;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> all;
  for (auto it = std::filesystem::directory_iterator(CheckpointsDir(data_dir_), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code time_ec;
    all.emplace_back(it->last_write_time(time_ec), it->path());
  }
  if (retention_ == 0 || all.size() <= retention_) return all.size();
  std::sort(all.begin(), all.end());  // Oldest first.
  const size_t drop = all.size() - retention_;
  for (size_t i = 0; i < drop; ++i) {
    std::error_code rm_ec;
    std::filesystem::remove_all(all[i].second, rm_ec);
    if (rm_ec) {
      spdlog::warn("checkpoint retention: cannot delete {}: {}", all[i].second.string(), rm_ec.message());
    } else {
      spdlog::info("checkpoint retention: deleted {}", all[i].second.string());
    }
  }
  return retention_;
}

void AdminServiceImpl::Drain() {
  std::thread worker;
  {
    absl::MutexLock lock(&mu_);
    worker.swap(worker_);
  }
  if (worker.joinable()) worker.join();
}

}  // namespace lawn
