#include "server/data_dir_dump.h"

#include <filesystem>
#include <memory>
#include <string_view>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "lawn/v1/timer.pb.h"
#include "server/proto_convert.h"
#include "storage/log_timer_store.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_migration.h"
#include "storage/timer_store.h"

namespace lawn {
namespace {

void ToExpiration(const StoredExpiration& stored, v1::Expiration* e) {
  const StoredTimer& t = stored.timer;
  FillTimer(t.key, t.payload, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, e->mutable_timer());
  SetTimestamp(stored.fired_at_unix_ns, e->mutable_fired_at());
  e->set_delivery_id(stored.delivery_id);
  e->set_attempt(stored.attempt);
}

// Writes {"<kind>": <message as JSON>} and a newline; the first error is kept in *status.
void WriteLine(const char* kind, const google::protobuf::Message& message, std::ostream& out,
               absl::Status* status) {
  if (!status->ok()) return;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  if (const auto s = google::protobuf::util::MessageToJsonString(message, &json, options); !s.ok()) {
    *status = absl::InternalError(
        absl::StrCat("cannot print a ", kind, " record as JSON: ", s.message().ToString()));
    return;
  }
  out << "{\"" << kind << "\":" << json << "}\n";
  if (!out) *status = absl::UnavailableError("cannot write the dump (output closed or full)");
}

absl::StatusOr<std::unique_ptr<TimerStore>> OpenExisting(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  for (const char* building : {kMigratingDir, kMigratingBackDir}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / building, ec)) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, " holds a storage migration that has not finished (", building,
          "/): start lawnd on it once (a durable start finishes a switch under way or removes a half-built "
          "store), then dump"));
    }
  }
  LAWN_ASSIGN_OR_RETURN(DataDirStore holds, InspectDataDir(dir));
  switch (holds) {
    case DataDirStore::kNone:
      return absl::NotFoundError(absl::StrCat(dir, " holds no lawn store (no CURRENT): not a data dir"));
    case DataDirStore::kLog: {
      LogStoreOptions options;
      options.path = dir;
      options.min_free_disk_bytes = 0;  // Nothing is written but a segment's start.
      LAWN_ASSIGN_OR_RETURN(std::unique_ptr<LogTimerStore> store, LogTimerStore::Open(options));
      return std::unique_ptr<TimerStore>(std::move(store));
    }
    case DataDirStore::kRocksDb: {
      RocksDbStoreOptions options;
      options.path = dir;
      options.min_free_disk_bytes = 0;
      LAWN_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbTimerStore> store, RocksDbTimerStore::Open(options));
      return std::unique_ptr<TimerStore>(std::move(store));
    }
  }
  return absl::InternalError("unknown data dir kind");
}

}  // namespace

absl::StatusOr<DumpCounts> DumpDataDir(const std::string& dir, std::ostream& out) {
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<TimerStore> store, OpenExisting(dir));
  DumpCounts counts;
  absl::Status written;
  v1::Timer timer;
  v1::Expiration expiration;
  LAWN_RETURN_IF_ERROR(store->Recover(
      [&](const StoredTimer& t) {
        FillTimer(t.key, t.payload, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, &timer);
        WriteLine("pending", timer, out, &written);
        ++counts.pending;
      },
      [&](const StoredExpiration& e) {
        expiration.Clear();
        ToExpiration(e, &expiration);
        WriteLine("outbox", expiration, out, &written);
        ++counts.outbox;
      }));
  LAWN_RETURN_IF_ERROR(store->ForEachIncoming([&](const StoredExpiration& e) {
    expiration.Clear();
    ToExpiration(e, &expiration);
    WriteLine("staged", expiration, out, &written);
    ++counts.staged;
  }));
  LAWN_RETURN_IF_ERROR(written);
  out.flush();
  if (!out) return absl::UnavailableError("cannot write the dump (output closed or full)");
  return counts;
}

}  // namespace lawn
