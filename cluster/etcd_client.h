// EtcdClient: the few etcd v3 calls lawn's cluster mode needs (KV get / put / delete, a compare-and-swap
// transaction on a key's mod revision, leases, and watches of a prefix), over gRPC with etcd's own API
// (cluster/CMakeLists.txt generates it from Debian's etcd sources). Consensus is etcd's; lawn only reads and
// writes keys.
//
// Every call is synchronous and bounded by the client's call timeout; a call that etcd did not answer
// (unreachable, timed out) is UNAVAILABLE or DEADLINE_EXCEEDED, so callers may retry. Revisions are etcd's
// cluster-wide revisions: a key's mod_revision changes on every write of it, which is what makes it an epoch.
//
// Thread-safety: all methods may be called from any thread at once (gRPC stubs are thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/etcd_watch.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace lawn {

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;  // The epoch of the value: etcd's revision of the write that set it.
  int64_t lease = 0;         // 0: not attached to a lease.
};

struct EtcdClientOptions {
  // host:port of etcd: one (a name may resolve to several members), or several IPv4 ip:port, of which
  // the client uses the first that answers and fails over to the others.
  std::vector<std::string> endpoints;
  std::chrono::milliseconds call_timeout{2000};
};

class EtcdClient {
 public:
  // INVALID_ARGUMENT for no endpoints, one that is not host:port, or several that are not all IPv4.
  // Does not wait for etcd.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(const EtcdClientOptions& options);

  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The value of `key`, or nullopt if there is none.
  absl::StatusOr<std::optional<EtcdKeyValue>> Get(const std::string& key);
  // Every key that starts with `prefix`, in key order, and the store's revision at the read.
  struct Range {
    std::vector<EtcdKeyValue> kvs;
    int64_t revision = 0;
  };
  absl::StatusOr<Range> GetPrefix(const std::string& prefix);
  // GetPrefix of each of `prefixes` in one etcd transaction, so that all are read at one revision (each
  // Range's revision): a consistent snapshot of several key families. etcd bounds a transaction's
  // operations (--max-txn-ops, 128 by default).
  absl::StatusOr<std::vector<Range>> GetPrefixes(const std::vector<std::string>& prefixes);
  // Writes key = value (attached to `lease` unless 0); returns the revision of the write.
  absl::StatusOr<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // Deletes key; returns how many keys went (0 or 1).
  absl::StatusOr<int64_t> Delete(const std::string& key);

  // Writes key = value only if the key's mod_revision is `expected_mod_revision` (0: the key must not
  // exist), in one etcd transaction. Returns the new mod_revision (the new epoch) if it wrote, nullopt if
  // the comparison failed (someone else wrote the key since it was read).
  absl::StatusOr<std::optional<int64_t>> PutIfModRevision(const std::string& key, const std::string& value,
                                                          int64_t expected_mod_revision, int64_t lease = 0);

  // Several PutIfModRevision as one transaction: every key is written if every key's mod_revision is as
  // expected, none otherwise. Returns the transaction's revision (each written key's new epoch) if it wrote,
  // nullopt if a comparison failed. etcd bounds a transaction's operations (--max-txn-ops, 128 by default).
  struct ConditionalPut {
    std::string key;
    std::string value;
    int64_t expected_mod_revision = 0;
    int64_t lease = 0;  // 0: not attached to a lease.
  };
  // `guards`: keys whose create_revision must also be as given (0: the key must not exist), e.g. the member
  // key of the process that must still be alive when the puts apply.
  struct CreateGuard {
    std::string key;
    int64_t create_revision = 0;
  };
  absl::StatusOr<std::optional<int64_t>> PutAllIfModRevisions(const std::vector<ConditionalPut>& puts,
                                                              const std::vector<CreateGuard>& guards = {});

  // A new lease of `ttl` (whole seconds, at least 1; etcd may grant more); returns its id.
  absl::StatusOr<int64_t> GrantLease(std::chrono::seconds ttl);
  // Renews `lease` once; returns the TTL etcd granted, or NOT_FOUND if the lease has expired or was revoked.
  absl::StatusOr<std::chrono::seconds> KeepAliveOnce(int64_t lease);
  // Revokes `lease`: the keys attached to it are deleted at once.
  absl::Status RevokeLease(int64_t lease);

  // Calls `changed` whenever a key that starts with `prefix` changes, until the returned watch is destroyed
  // (cluster/etcd_watch.h: when it is called, and how a lost stream is made good). The watch shares this
  // client's channel and may outlive the client.
  std::unique_ptr<EtcdWatch> Watch(std::string prefix, std::function<void()> changed);

 private:
  explicit EtcdClient(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds call_timeout);
  void Prepare(grpc::ClientContext& context) const;

  std::shared_ptr<grpc::Channel> channel_;
  std::chrono::milliseconds call_timeout_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
};

// The key right after every key that starts with `prefix`: etcd's range_end for a prefix.
std::string EtcdPrefixEnd(std::string prefix);

}  // namespace lawn
