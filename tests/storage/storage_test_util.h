// Helpers for the storage tests: a temporary directory, and a copy of everything a TimerStore recovers (the
// store's views die with the callback, so tests compare owned copies).
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"
#include "storage/timer_store.h"

namespace lawn::storage_test {

// A fresh directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/lawn_storage_test.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Every entry under `dir` (recursively) with its size, a hash of its contents and its modification time:
// equal fingerprints mean nothing in the dir was created, removed, written or touched.
inline std::map<std::string, std::string> DirFingerprint(const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> entries;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = fs::relative(it->path(), dir).string();
    if (!it->is_regular_file()) {
      entries[name] = "dir";
      continue;
    }
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    entries[name] = std::to_string(it->file_size()) + " " +
                    std::to_string(std::hash<std::string>()(bytes.str())) + " " +
                    std::to_string(it->last_write_time().time_since_epoch().count());
  }
  EXPECT_FALSE(ec) << ec.message();
  return entries;
}

struct TimerCopy {
  std::string key;
  int64_t deadline_unix_ns = 0;
  uint64_t ttl_ns = 0;
  uint64_t interval_ns = 0;
  std::string payload;
  bool operator==(const TimerCopy&) const = default;
};

struct ExpirationCopy {
  uint64_t delivery_id = 0;
  TimerCopy timer;
  int64_t fired_at_unix_ns = 0;
  uint32_t attempt = 0;
  bool operator==(const ExpirationCopy&) const = default;
};

struct StoreContents {
  std::vector<TimerCopy> timers;
  std::vector<ExpirationCopy> outbox;
  bool operator==(const StoreContents&) const = default;
};

inline TimerCopy Copy(const StoredTimer& t) {
  return {std::string(t.key), t.deadline_unix_ns, t.ttl_ns, t.interval_ns, std::string(t.payload)};
}

// Everything `store` recovers, in the order it was reported. Fails the test on a non-OK status.
inline StoreContents Contents(TimerStore& store) {
  StoreContents c;
  absl::Status s =
      store.Recover([&](const StoredTimer& t) { c.timers.push_back(Copy(t)); },
                    [&](const StoredExpiration& e) {
                      c.outbox.push_back({e.delivery_id, Copy(e.timer), e.fired_at_unix_ns, e.attempt});
                    });
  EXPECT_TRUE(s.ok()) << s;
  return c;
}

// The staging area as `store` reads it (ForEachIncoming), in its order. Fails the test on a non-OK status.
inline std::vector<ExpirationCopy> Incoming(TimerStore& store) {
  std::vector<ExpirationCopy> out;
  absl::Status s = store.ForEachIncoming([&](const StoredExpiration& e) {
    out.push_back({e.delivery_id, Copy(e.timer), e.fired_at_unix_ns, e.attempt});
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

inline std::vector<std::string> TimerKeys(TimerStore& store) {
  std::vector<std::string> keys;
  for (const TimerCopy& t : Contents(store).timers) keys.push_back(t.key);
  return keys;
}

// "ns" + '\0' + "id": a timer key as the layers above build it.
inline std::string Key(std::string_view ns, std::string_view id) {
  std::string k(ns);
  k.push_back('\0');
  k.append(id);
  return k;
}

inline void PrintTo(const TimerCopy& t, std::ostream* os) {
  std::string printable;
  for (char c : t.key) printable += (c == '\0') ? std::string("\\0") : std::string(1, c);
  *os << "{" << printable << " deadline=" << t.deadline_unix_ns << " ttl=" << t.ttl_ns
      << " interval=" << t.interval_ns << " payload=" << t.payload.size() << "B}";
}

inline void PrintTo(const ExpirationCopy& e, std::ostream* os) {
  *os << "{id=" << e.delivery_id << " ";
  PrintTo(e.timer, os);
  *os << " fired_at=" << e.fired_at_unix_ns << " attempt=" << e.attempt << "}";
}

}  // namespace lawn::storage_test
