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

// Refuses what is not a stopped data dir: a missing dir, one without a store, one mid-migration.
absl::StatusOr<DataDirStore> CheckDumpable(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return absl::NotFoundError(absl::StrCat(dir, " is not a directory"));
  if (const char* building = MigrationUnderWay(dir)) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " holds a storage migration that has not finished (", building,
        "/): start lawnd on it once (a durable start finishes a switch under way or removes a half-built "
        "store), then dump"));
  }
  LAWN_ASSIGN_OR_RETURN(DataDirStore holds, InspectDataDir(dir));
  if (holds == DataDirStore::kNone) {
    return absl::NotFoundError(absl::StrCat(dir, " holds no lawn store (no CURRENT): not a data dir"));
  }
  return holds;
}

}  // namespace

absl::StatusOr<DumpCounts> DumpDataDir(const std::string& dir, std::ostream& out) {
  LAWN_ASSIGN_OR_RETURN(const DataDirStore holds, CheckDumpable(dir));
  DumpCounts counts;
  absl::Status written;
  v1::Timer timer;
  v1::Expiration expiration;
  auto on_timer = [&](const StoredTimer& t) {
    FillTimer(t.key, t.payload, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, &timer);
    WriteLine("pending", timer, out, &written);
    ++counts.pending;
  };
  auto on_expiration = [&](const char* kind, uint64_t* count) {
    return [&out, &written, &expiration, kind, count](const StoredExpiration& e) {
      expiration.Clear();
      ToExpiration(e, &expiration);
      WriteLine(kind, expiration, out, &written);
      ++*count;
    };
  };
  if (holds == DataDirStore::kLog) {
    LAWN_RETURN_IF_ERROR(LogTimerStore::ReadWithoutOpening(
        dir, on_timer, on_expiration("outbox", &counts.outbox), on_expiration("staged", &counts.staged)));
  } else {
    RocksDbStoreOptions options;
    options.path = dir;
    options.read_only = true;
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbTimerStore> store, RocksDbTimerStore::Open(options));
    LAWN_RETURN_IF_ERROR(store->Recover(on_timer, on_expiration("outbox", &counts.outbox)));
    LAWN_RETURN_IF_ERROR(store->ForEachIncoming(on_expiration("staged", &counts.staged)));
  }
  LAWN_RETURN_IF_ERROR(written);
  out.flush();
  if (!out) return absl::UnavailableError("cannot write the dump (output closed or full)");
  return counts;
}

}  // namespace lawn
