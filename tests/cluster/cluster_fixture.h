// Test helpers for lawnd clusters on a real etcd: a set of members (m0, m1, ...) with their own data dirs and
// config files, and reads of the cluster map and of per-member stats. Shared by lawnd_cluster_test.cc and
// cluster_moves_test.cc.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/partition.h"
#include "gtest/gtest.h"
#include "lawn/v1/cluster.grpc.pb.h"
#include "tests/cluster/etcd_process.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::cluster_testing {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EtcdProcess;
using testing::LawndProcess;
using testing::TempDir;
using testing::WaitFor;

constexpr uint32_t kPartitions = 64;
constexpr char kNs[] = "orders";

// A cluster of `n` lawnd members named m0.. on one etcd, each with its own data dir and config file.
class Cluster {
 public:
  // `extra_yaml` is appended to each member's config (top-level keys); `credentials` are the test's.
  // `expect`: cluster.expect_members (default n; fewer when the test starts the others later).
  Cluster(const EtcdProcess& etcd, int n, uint32_t partitions = kPartitions, const std::string& extra_yaml = "",
          std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr, std::vector<std::string> extra_args = {},
          int expect = 0) {
    for (int i = 0; i < n; ++i) {
      dirs_.push_back(std::make_unique<TempDir>());
      members_.push_back(MakeMember(etcd, i, partitions, expect > 0 ? expect : n, extra_yaml, extra_args));
      if (credentials != nullptr) members_.back()->set_credentials(credentials);
    }
  }

  std::unique_ptr<LawndProcess> MakeMember(const EtcdProcess& etcd, int i, uint32_t partitions, int expect,
                                           const std::string& extra_yaml, const std::vector<std::string>& extra_args) {
    const std::string config = testing::WriteFile(
        dirs_[static_cast<size_t>(i)]->path() + "/lawn.yaml",
        "cluster:\n  name: t\n  partitions: " + std::to_string(partitions) +
            "\n  lease_ttl: 3s\n  expect_members: " + std::to_string(expect) + "\n" + extra_yaml);
    return std::make_unique<LawndProcess>(
        dirs_[static_cast<size_t>(i)]->path() + "/data",
        [&] {
          std::vector<std::string> args{"--config", config, "--cluster-etcd-endpoints", etcd.endpoint(),
                                        "--cluster-member", "m" + std::to_string(i), "--cluster-advertise",
                                        "127.0.0.1:0"};
          args.insert(args.end(), extra_args.begin(), extra_args.end());
          return args;
        }());
  }

  void StartAll() {
    for (auto& m : members_) m->StartNoWait();
    for (auto& m : members_) ASSERT_TRUE(m->WaitServing(testing::kStartTimeout)) << m->Log();
  }

  LawndProcess& operator[](size_t i) { return *members_[i]; }
  size_t size() const { return members_.size(); }

 private:
  std::vector<std::unique_ptr<TempDir>> dirs_;
  std::vector<std::unique_ptr<LawndProcess>> members_;
};

inline grpc::Status ClusterMap(LawndProcess& member, v1::GetClusterMapResponse* out) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + seconds(5));
  return v1::ClusterService::NewStub(member.channel())->GetClusterMap(&context, v1::GetClusterMapRequest(), out);
}

// Waits until `member` sees every partition owned and `live` members live; returns its map.
inline v1::GetClusterMapResponse WaitFormed(LawndProcess& member, size_t live) {
  v1::GetClusterMapResponse map;
  const bool formed = WaitFor(
      [&] {
        map.Clear();
        if (!ClusterMap(member, &map).ok() || !map.serving()) return false;
        size_t live_members = 0;
        for (const auto& m : map.members()) live_members += m.live() ? 1 : 0;
        if (live_members != live) return false;
        for (const auto& owner : map.owners()) {
          if (owner.member().empty()) return false;
        }
        return true;
      },
      seconds(30));
  EXPECT_TRUE(formed) << map.DebugString();
  return map;
}

inline std::string OwnerOf(const v1::GetClusterMapResponse& map, const std::string& id) {
  return map.owners(static_cast<int>(PartitionOf(kNs, id, map.partitions()))).member();
}

// Waits until every member of `cluster` sees the cluster formed with all its members live; returns m0's map.
inline v1::GetClusterMapResponse WaitAllFormed(Cluster& cluster) {
  for (size_t i = 1; i < cluster.size(); ++i) WaitFormed(cluster[i], cluster.size());
  return WaitFormed(cluster[0], cluster.size());
}

// The namespace's pending timers by GetStats through `member` (the whole cluster, merged).
inline uint64_t PendingOn(LawndProcess& member) { return testing::NamespaceStatsOf(*member.stub(), kNs).pending_timers(); }

// The namespace's pending timers held by `member` itself: GetStats with the header of a member's fan-out,
// which a member answers from its own shards.
inline uint64_t LocalPendingOn(LawndProcess& member) {
  grpc::ClientContext context;
  context.AddMetadata("lawn-forwarded-by", "test");
  v1::GetStatsResponse stats;
  EXPECT_TRUE(member.stub()->GetStats(&context, v1::GetStatsRequest(), &stats).ok());
  for (const v1::NamespaceStats& ns : stats.namespaces()) {
    if (ns.namespace_() == kNs) return ns.pending_timers();
  }
  return 0;
}

#ifdef LAWNCTL_PATH
// Runs lawnctl with `args`; returns its exit status and fills `out` with what it printed on stdout.
inline int Lawnctl(const std::string& args, std::string* out) {
  const std::string command = std::string(LAWNCTL_PATH) + " " + args + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#endif

}  // namespace lawn::cluster_testing
