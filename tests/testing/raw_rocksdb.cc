#include "tests/testing/raw_rocksdb.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rocksdb/db.h"
#include "storage/record_coding.h"
#include "storage/rocksdb_timer_store.h"

namespace lawn {

absl::Status PutRawForTest(const std::string& path, const std::string& column_family, std::string_view key,
                           std::string_view value) {
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(options, path, &names);
  if (!s.ok()) names = {rocksdb::kDefaultColumnFamilyName};  // No database there yet: a new one.
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::Open(options, path, descriptors, &handles, &raw);
  if (!s.ok()) return absl::InternalError("open: " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  if (std::find(names.begin(), names.end(), column_family) == names.end()) {
    rocksdb::ColumnFamilyHandle* created = nullptr;
    s = db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), column_family, &created);
    if (!s.ok()) return absl::InternalError("create column family: " + s.ToString());
    handles.push_back(created);
  }
  absl::Status result = absl::InternalError("no column family " + column_family);
  for (rocksdb::ColumnFamilyHandle* handle : handles) {
    if (handle->GetName() != column_family) continue;
    rocksdb::WriteOptions write_options;
    write_options.sync = true;
    s = db->Put(write_options, handle, rocksdb::Slice(key.data(), key.size()),
                rocksdb::Slice(value.data(), value.size()));
    result = s.ok() ? absl::OkStatus() : absl::InternalError("put: " + s.ToString());
  }
  for (rocksdb::ColumnFamilyHandle* handle : handles) db->DestroyColumnFamilyHandle(handle);
  s = db->Close();
  if (result.ok() && !s.ok()) result = absl::InternalError("close: " + s.ToString());
  return result;
}

std::string StoredTimerKeyForTest(int64_t deadline_unix_ns, std::string_view key) {
  std::string stored;
  internal::AppendTimerKey(&stored, deadline_unix_ns, key);
  return stored;
}

std::vector<std::string> ColumnFamiliesForTest(const std::string& path) {
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names);
  if (!s.ok()) names.clear();
  return names;
}

absl::StatusOr<std::map<std::string, std::vector<int64_t>>> StoredDeadlinesForTest(const std::string& path) {
  RocksDbStoreOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> store = RocksDbTimerStore::Open(options);
  if (!store.ok()) return store.status();
  std::map<std::string, std::vector<int64_t>> stored;
  absl::Status s = (*store)->Recover(
      [&](const StoredTimer& t) { stored[std::string(t.key)].push_back(t.deadline_unix_ns); },
      [](const StoredExpiration&) {});
  if (!s.ok()) return s;
  return stored;
}

}  // namespace lawn
