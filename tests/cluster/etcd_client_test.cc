// EtcdClient against a real etcd: KV, the mod-revision transaction that ownership epochs rest on, leases.
#include "cluster/etcd_client.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cluster/etcd_process.h"

namespace lawn {
namespace {

using testing::EtcdProcess;

TEST(EtcdClientTest, PutGetPrefixAndDelete) {
  EtcdProcess etcd;
  auto client = etcd.Client(EtcdClientOptions{}.call_timeout);
  ASSERT_TRUE(client->Put("/t/members/b", "127.0.0.1:2").ok());
  absl::StatusOr<int64_t> rev = client->Put("/t/members/a", "127.0.0.1:1");
  ASSERT_TRUE(rev.ok()) << rev.status();
  ASSERT_TRUE(client->Put("/t/other", "x").ok());

  absl::StatusOr<std::optional<EtcdKeyValue>> a = client->Get("/t/members/a");
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status();
  EXPECT_EQ((*a)->value, "127.0.0.1:1");
  EXPECT_EQ((*a)->mod_revision, *rev);
  EXPECT_EQ((*a)->lease, 0);

  absl::StatusOr<EtcdClient::Range> members = client->GetPrefix("/t/members/");
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->kvs.size(), 2u);
  EXPECT_EQ(members->kvs[0].key, "/t/members/a");  // Key order.
  EXPECT_EQ(members->kvs[1].key, "/t/members/b");
  EXPECT_GE(members->revision, *rev);

  EXPECT_EQ(*client->Delete("/t/members/a"), 1);
  EXPECT_EQ(*client->Delete("/t/members/a"), 0);
  absl::StatusOr<std::optional<EtcdKeyValue>> gone = client->Get("/t/members/a");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

TEST(EtcdClientTest, GetPrefixesReadsSeveralFamiliesAtOneRevision) {
  EtcdProcess etcd;
  auto client = etcd.Client(EtcdClientOptions{}.call_timeout);
  ASSERT_TRUE(client->Put("/t/members/a", "1").ok());
  ASSERT_TRUE(client->Put("/t/owners/0", "a").ok());
  ASSERT_TRUE(client->Put("/t/owners/1", "a").ok());
  absl::StatusOr<int64_t> last = client->Put("/t/leader", "a");
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_TRUE(client->Put("/u/owners/0", "x").ok());  // Another cluster's key: in no range below.

  absl::StatusOr<std::vector<EtcdClient::Range>> read =
      client->GetPrefixes({"/t/members/", "/t/owners/", "/t/draining/", "/t/leader"});
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 4u);
  ASSERT_EQ((*read)[0].kvs.size(), 1u);
  EXPECT_EQ((*read)[0].kvs[0].key, "/t/members/a");
  ASSERT_EQ((*read)[1].kvs.size(), 2u);
  EXPECT_EQ((*read)[1].kvs[1].key, "/t/owners/1");
  EXPECT_TRUE((*read)[2].kvs.empty());
  ASSERT_EQ((*read)[3].kvs.size(), 1u);
  EXPECT_EQ((*read)[3].kvs[0].value, "a");
  // One revision for all, after every write above, and no key in any range written after it.
  EXPECT_GT((*read)[0].revision, *last);
  for (const EtcdClient::Range& r : *read) {
    EXPECT_EQ(r.revision, (*read)[0].revision);
    for (const EtcdKeyValue& kv : r.kvs) EXPECT_LE(kv.mod_revision, r.revision);
  }
}

TEST(EtcdClientTest, PutIfModRevisionWritesOnlyOnTheExpectedEpoch) {
  EtcdProcess etcd;
  auto client = etcd.Client(EtcdClientOptions{}.call_timeout);
  // Revision 0: create only if absent.
  absl::StatusOr<std::optional<int64_t>> first = client->PutIfModRevision("/t/owners/7", "m1", 0);
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  absl::StatusOr<std::optional<int64_t>> again = client->PutIfModRevision("/t/owners/7", "m2", 0);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value()) << "created twice";
  // The returned epoch is the key's mod_revision, and the next write must name it.
  EXPECT_EQ((*client->Get("/t/owners/7"))->mod_revision, **first);
  absl::StatusOr<std::optional<int64_t>> stale = client->PutIfModRevision("/t/owners/7", "m3", **first - 1);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->has_value());
  absl::StatusOr<std::optional<int64_t>> moved = client->PutIfModRevision("/t/owners/7", "m2", **first);
  ASSERT_TRUE(moved.ok() && moved->has_value());
  EXPECT_GT(**moved, **first);
  EXPECT_EQ((*client->Get("/t/owners/7"))->value, "m2");
}

TEST(EtcdClientTest, OfConcurrentClaimsOnOneEpochExactlyOneWins) {
  EtcdProcess etcd;
  auto client = etcd.Client(EtcdClientOptions{}.call_timeout);
  const int64_t epoch = **client->PutIfModRevision("/t/owners/1", "old", 0);
  constexpr int kClaimers = 8;
  std::atomic<int> wins{0}, losses{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClaimers; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::optional<int64_t>> r = client->PutIfModRevision("/t/owners/1", "m" + std::to_string(i), epoch);
      if (r.ok() && r->has_value()) ++wins;
      if (r.ok() && !r->has_value()) ++losses;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(losses.load(), kClaimers - 1);
}

TEST(EtcdClientTest, KeysUnderARevokedLeaseGoAndItCannotBeRenewed) {
  EtcdProcess etcd;
  auto client = etcd.Client(EtcdClientOptions{}.call_timeout);
  absl::StatusOr<int64_t> lease = client->GrantLease(std::chrono::seconds(30));
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client->Put("/t/members/m", "addr", *lease).ok());
  EXPECT_EQ((*client->Get("/t/members/m"))->lease, *lease);
  absl::StatusOr<std::chrono::seconds> renewed = client->KeepAliveOnce(*lease);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_GE(renewed->count(), 29);
  ASSERT_TRUE(client->RevokeLease(*lease).ok());
  EXPECT_FALSE(client->Get("/t/members/m")->has_value());
  EXPECT_TRUE(absl::IsNotFound(client->KeepAliveOnce(*lease).status()));
}

TEST(EtcdClientTest, BadEndpointsAreRefusedAndAnAbsentEtcdIsUnavailable) {
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::Connect({}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::Connect({.endpoints = {"no-port"}}).status()));
  // A list must be IPv4 (gRPC's ipv4: target); one name is fine.
  EXPECT_TRUE(absl::IsInvalidArgument(
      EtcdClient::Connect({.endpoints = {"etcd-0.etcd:2379", "etcd-1.etcd:2379"}}).status()));
  EXPECT_TRUE(EtcdClient::Connect({.endpoints = {"etcd.lawn.svc:2379"}}).ok());
  EXPECT_TRUE(EtcdClient::Connect({.endpoints = {"127.0.0.1:2379", "127.0.0.2:2379"}}).ok());
  testing::RefusingPort refusing;
  auto client = EtcdClient::Connect(
      {.endpoints = {refusing.address()}, .call_timeout = std::chrono::milliseconds(500)});
  ASSERT_TRUE(client.ok());
  absl::Status s = (*client)->Put("/t/k", "v").status();
  EXPECT_TRUE(absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) << s;
}

}  // namespace
}  // namespace lawn
