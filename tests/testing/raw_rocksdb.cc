#include "tests/testing/raw_rocksdb.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rocksdb/db.h"

namespace lawn {

absl::Status PutRawForTest(const std::string& path, const std::string& column_family, std::string_view key,
                           std::string_view value) {
  rocksdb::DBOptions options;
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(options, path, &names);
  if (!s.ok()) return absl::InternalError("ListColumnFamilies: " + s.ToString());
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::Open(options, path, descriptors, &handles, &raw);
  if (!s.ok()) return absl::InternalError("open: " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  absl::Status result = absl::NotFoundError("no column family " + column_family);
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

}  // namespace lawn
