// Real lawnd members in cluster mode against a real etcd, all on loopback: the partitions of a new cluster
// are handed out once the expected members are live; calls through any member reach the timer's owner (one
// hop, never two); lists and stats cover every member; a subscriber of one member receives every member's
// expirations and its acks reach them; a killed member leaves its partitions UNAVAILABLE until it restarts
// with its data; a member paused past its lease; etcd paused for less and for more than the lease; TLS
// between members; a client that routes directly; lawnctl cluster; a member configured for another partition
// count refuses to start.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/lawn_client.h"
#include "cluster/partition.h"
#include "gtest/gtest.h"
#include "lawn/v1/cluster.grpc.pb.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/cluster/etcd_process.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"
#include "tests/security/security_fixture.h"
#include "tests/testing/sanitized.h"

namespace lawn {
namespace {

using namespace cluster_testing;  // NOLINT: the fixture's helpers read as the test's own.

TEST(LawndClusterTest, TimersStartedThroughOneMemberLandOnTheirOwnersAndReachASubscriberOfAnotherOnce) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 3);
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  ASSERT_EQ(map.owners_size(), static_cast<int>(kPartitions));
  std::map<std::string, uint32_t> owned;
  for (const auto& owner : map.owners()) ++owned[owner.member()];
  ASSERT_EQ(owned.size(), 3u);
  for (const auto& [name, count] : owned) {
    EXPECT_GE(count, kPartitions / 3) << name;  // Balanced: floor or ceil of 64 / 3.
    EXPECT_LE(count, kPartitions / 3 + 1) << name;
  }
  // Every member reads the same map.
  for (size_t i = 1; i < cluster.size(); ++i) {
    const v1::GetClusterMapResponse other = WaitFormed(cluster[i], 3);
    for (uint32_t p = 0; p < kPartitions; ++p) EXPECT_EQ(other.owners(p).member(), map.owners(p).member());
  }

  // 600 unary starts and 99,400 in batches, all through m0; TTLs of kTtlMs plus up to 1 s, so that they fire
  // after the checks: 15 s, and 45 s under a sanitizer (an ASan build on a slow machine took more than 5 s to
  // start 30,000, a TSan build in CI more than 15: its first timers fired before they were counted).
  // 30,000 in all under a sanitizer.
  constexpr int kUnary = 600;
  constexpr int kTotal = testing::kSanitized ? 30000 : 100000;
  constexpr int kTtlMs = testing::kSanitized ? 45000 : 15000;
  std::map<std::string, uint64_t> expected;  // Owner -> timers.
  std::vector<v1::StartTimerRequest> batch;
  auto stub0 = cluster[0].stub();
  const int64_t started_ns = testing::WallNowNs();
  for (int i = 0; i < kTotal; ++i) {
    const std::string id = "t" + std::to_string(i);
    ++expected[OwnerOf(map, id)];
    v1::StartTimerRequest request = testing::TtlRequest(kNs, id, milliseconds(kTtlMs + i % 1000), "p" + id);
    if (i < kUnary) {
      ASSERT_TRUE(testing::Call(*stub0, request).ok()) << id;
    } else {
      batch.push_back(std::move(request));
    }
  }
  ASSERT_TRUE(testing::StartAll(*stub0, batch));
  for (size_t i = 0; i < cluster.size(); ++i) {
    EXPECT_EQ(LocalPendingOn(cluster[i]), expected["m" + std::to_string(i)]) << "m" << i;
  }
  // A second start of the same id, through another member, reaches the same owner.
  EXPECT_EQ(testing::StartTtl(*cluster[1].stub(), kNs, "t7", seconds(60)).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  // Reads through m1 and m2 are forwarded too.
  for (int i = 0; i < 30; ++i) {
    grpc::ClientContext context;
    v1::GetTimerRequest request;
    request.set_namespace_(kNs);
    request.set_id("t" + std::to_string(i * 97));
    v1::GetTimerResponse response;
    ASSERT_TRUE(cluster[1 + i % 2].stub()->GetTimer(&context, request, &response).ok()) << request.id();
    EXPECT_EQ(response.timer().payload(), "p" + request.id());
  }

  // One subscriber, on m1, receives every expiration: m1's own from its outbox, m0's and m2's relayed. Acked
  // as they come (the stream holds at most max_in_flight unacked per member); none early, none twice.
  auto stub1 = cluster[1].stub();
  testing::TestSubscriber subscriber(*stub1, kNs, 1000, false, 100);
  std::set<std::string> seen;
  std::map<std::string, uint64_t> fired_by;  // Owner -> expirations received.
  const auto until = std::chrono::steady_clock::now() + seconds(60);
  while (seen.size() < static_cast<size_t>(kTotal) && std::chrono::steady_clock::now() < until) {
    std::vector<uint64_t> acks;
    for (const v1::Expiration& e : subscriber.Drain(milliseconds(50))) {
      EXPECT_GE(testing::ToNs(e.fired_at()), testing::ToNs(e.timer().deadline())) << e.timer().id();
      EXPECT_GE(testing::ToNs(e.timer().deadline()), started_ns);
      EXPECT_EQ(e.timer().payload(), "p" + e.timer().id());
      EXPECT_TRUE(seen.insert(e.timer().id()).second) << "twice: " << e.timer().id() << " attempt " << e.attempt();
      ++fired_by[OwnerOf(map, e.timer().id())];
      acks.push_back(e.delivery_id());
    }
    if (!acks.empty()) {
      ASSERT_TRUE(subscriber.Ack(acks));
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kTotal));
  EXPECT_EQ(fired_by, expected);
  EXPECT_TRUE(subscriber.Drain(milliseconds(300)).empty());
  // The acks reached the members that delivered: every outbox empties, nothing is redelivered.
  EXPECT_TRUE(WaitFor(
      [&] { return testing::NamespaceStatsOf(*stub1, kNs).outbox() == 0; }, seconds(10)));
  grpc::ClientContext context;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub1->GetStats(&context, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.redeliveries(), 0u);
}

TEST(LawndClusterTest, AForwardedCallThatReachesAMemberNotOwningItsPartitionIsRefusedNotForwardedAgain) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 2);
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  std::string id;
  for (int i = 0; id.empty(); ++i) {
    if (OwnerOf(map, "w" + std::to_string(i)) == "m0") id = "w" + std::to_string(i);
  }
  grpc::ClientContext context;
  context.AddMetadata("lawn-forwarded-by", "m0");
  v1::StartTimerResponse response;
  const grpc::Status status =
      cluster[1].stub()->StartTimer(&context, testing::TtlRequest(kNs, id, seconds(60)), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("wrong owner"), std::string::npos) << status.error_message();
  EXPECT_EQ(LocalPendingOn(cluster[0]), 0u);
  EXPECT_EQ(LocalPendingOn(cluster[1]), 0u);
  // Without the header the same call is forwarded and lands on m0.
  EXPECT_TRUE(testing::StartTtl(*cluster[1].stub(), kNs, id, seconds(60)).ok());
  EXPECT_EQ(LocalPendingOn(cluster[0]), 1u);
}

// Every id of `ns` that ListTimers returns through `member`, page by page (`page_size` each).
std::vector<std::string> ListAll(LawndProcess& member, const std::string& ns, int page_size, grpc::Status* status) {
  std::vector<std::string> ids;
  auto stub = member.stub();
  v1::ListTimersRequest request;
  request.set_namespace_(ns);
  request.set_page_size(page_size);
  for (int pages = 0; pages < 1000; ++pages) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + seconds(10));
    v1::ListTimersResponse response;
    *status = stub->ListTimers(&context, request, &response);
    if (!status->ok()) return ids;
    EXPECT_LE(response.timers_size(), page_size);
    for (const v1::Timer& t : response.timers()) ids.push_back(t.id());
    if (response.next_page_token().empty()) break;
    request.set_page_token(response.next_page_token());
  }
  return ids;
}

TEST(LawndClusterTest, ListTimersAndGetStatsThroughAnyMemberCoverTheWholeCluster) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 3);
  cluster.StartAll();
  WaitAllFormed(cluster);
  std::vector<v1::StartTimerRequest> requests;
  std::vector<std::string> ids;
  for (int i = 0; i < 700; ++i) {
    ids.push_back("l" + std::to_string(i));
    requests.push_back(testing::TtlRequest(kNs, ids.back(), seconds(3600)));
  }
  ASSERT_TRUE(testing::StartAll(*cluster[2].stub(), requests));
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < cluster.size(); ++i) {
    grpc::Status status;
    EXPECT_EQ(ListAll(cluster[i], kNs, 64, &status), ids) << "through m" << i;
    EXPECT_TRUE(status.ok()) << status.error_message();
    // GetStats sums the members: the namespace's 700 timers, whichever member answers.
    EXPECT_EQ(PendingOn(cluster[i]), 700u) << "through m" << i;
  }
  // Each member alone holds a share (asked directly with the header a member's fan-out sends).
  uint64_t sum = 0;
  for (size_t i = 0; i < cluster.size(); ++i) {
    grpc::ClientContext context;
    context.AddMetadata("lawn-forwarded-by", "test");
    v1::GetStatsResponse stats;
    ASSERT_TRUE(cluster[i].stub()->GetStats(&context, v1::GetStatsRequest(), &stats).ok());
    EXPECT_GT(stats.pending_timers(), 0u);
    EXPECT_LT(stats.pending_timers(), 700u);
    sum += stats.pending_timers();
  }
  EXPECT_EQ(sum, 700u);

  // One subscriber, on m1, with its relays from m0 and m2 connected (it receives a timer of each member):
  // the stats summed over the members count it once, not once per member it relays from.
  const v1::GetClusterMapResponse map = WaitFormed(cluster[0], 3);
  std::set<std::string> owners_left = {"m0", "m1", "m2"};
  std::vector<v1::StartTimerRequest> one_each;
  for (int i = 0; !owners_left.empty() && i < 1000; ++i) {
    const std::string id = "s" + std::to_string(i);
    if (owners_left.erase(OwnerOf(map, id)) > 0) one_each.push_back(testing::TtlRequest("subs", id, milliseconds(100)));
  }
  ASSERT_TRUE(testing::StartAll(*cluster[0].stub(), one_each));
  auto stub1 = cluster[1].stub();
  testing::TestSubscriber subscriber(*stub1, "subs");
  ASSERT_EQ(subscriber.Take(3, seconds(20)).size(), 3u);
  EXPECT_EQ(testing::NamespaceStatsOf(*cluster[0].stub(), "subs").subscribers(), 1u);
}

// Ids of `n` timers that `owner` owns in `map`, named prefix0, prefix1, ...
std::vector<std::string> IdsOwnedBy(const v1::GetClusterMapResponse& map, const std::string& owner,
                                    const std::string& prefix, size_t n) {
  std::vector<std::string> ids;
  for (int i = 0; ids.size() < n; ++i) {
    if (OwnerOf(map, prefix + std::to_string(i)) == owner) ids.push_back(prefix + std::to_string(i));
  }
  return ids;
}

// GetTimer of `id` in kNs through `stub`: its status.
grpc::Status GetThrough(v1::TimerService::Stub& stub, const std::string& id) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + seconds(5));
  v1::GetTimerRequest request;
  request.set_namespace_(kNs);
  request.set_id(id);
  v1::GetTimerResponse response;
  return stub.GetTimer(&context, request, &response);
}

TEST(LawndClusterTest, AKilledMembersPartitionsAnswerUnavailableUntilItRestartsWithItsTimers) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 3);
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  std::vector<v1::StartTimerRequest> requests;
  std::vector<std::string> on_m2, elsewhere;
  for (int i = 0; i < 300; ++i) {
    const std::string id = "k" + std::to_string(i);
    requests.push_back(testing::TtlRequest(kNs, id, seconds(3600)));
    (OwnerOf(map, id) == "m2" ? on_m2 : elsewhere).push_back(id);
  }
  ASSERT_FALSE(on_m2.empty());
  // And 20 of m2's that come due while it is down (10 s: the starts, the count and the kill all happen
  // before, even on a slow machine); a subscriber on m0 must get them once m2 is back.
  const std::vector<std::string> soon = IdsOwnedBy(map, "m2", "s", 20);
  for (const std::string& id : soon) requests.push_back(testing::TtlRequest(kNs, id, seconds(10)));
  auto stub0 = cluster[0].stub();
  testing::TestSubscriber subscriber(*stub0, kNs, 1000, false, 100);
  const int64_t started_ns = testing::WallNowNs();
  ASSERT_TRUE(testing::StartAll(*stub0, requests));
  const uint64_t m2_pending = LocalPendingOn(cluster[2]);
  EXPECT_EQ(m2_pending, on_m2.size() + soon.size());

  cluster[2].Kill();
  auto get = [&](const std::string& id) { return GetThrough(*stub0, id); };
  // Within the lease TTL m0 sees m2 gone; until then the forward itself fails. Either way: UNAVAILABLE.
  grpc::Status refused = get(on_m2[0]);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_TRUE(WaitFor([&] { return get(on_m2[0]).error_message().find("not live") != std::string::npos; },
                      seconds(15)))
      << get(on_m2[0]).error_message();
  // A list of the namespace would miss m2's timers: refused, not answered incomplete.
  grpc::Status list_status;
  ListAll(cluster[0], kNs, 100, &list_status);
  EXPECT_EQ(list_status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(list_status.error_message().find("m2"), std::string::npos) << list_status.error_message();
  // The other members keep serving their partitions.
  for (const std::string& id : elsewhere) ASSERT_TRUE(get(id).ok()) << id;
  // Starts into m2's partitions are refused too, and nothing of them is kept elsewhere.
  std::string new_id;
  for (int i = 0; new_id.empty(); ++i) {
    if (OwnerOf(map, "n" + std::to_string(i)) == "m2") new_id = "n" + std::to_string(i);
  }
  EXPECT_EQ(testing::StartTtl(*stub0, kNs, new_id, seconds(60)).error_code(), grpc::StatusCode::UNAVAILABLE);

  // Restarted with its name and volume once the 20 are due, m2 takes its partitions back with every timer.
  while (testing::WallNowNs() < started_ns + 11'000'000'000) std::this_thread::sleep_for(milliseconds(100));
  cluster[2].StartNoWait();
  ASSERT_TRUE(cluster[2].WaitServing(testing::kStartTimeout)) << cluster[2].Log();
  EXPECT_TRUE(WaitFor([&] { return get(on_m2[0]).ok(); }, seconds(20))) << get(on_m2[0]).error_message();
  for (const std::string& id : on_m2) EXPECT_TRUE(get(id).ok()) << id;
  // Those due during the downtime fire after the restart and reach m0's subscriber through its relay,
  // which reconnected to m2 by itself.
  const std::vector<v1::Expiration> fired = subscriber.Take(soon.size(), seconds(30));
  std::set<std::string> got;
  for (const v1::Expiration& e : fired) {
    got.insert(e.timer().id());
    EXPECT_GE(testing::ToNs(e.fired_at()), started_ns + 10'000'000'000) << e.timer().id();
  }
  EXPECT_EQ(got, std::set<std::string>(soon.begin(), soon.end()));
  std::vector<uint64_t> acks;
  for (const v1::Expiration& e : fired) acks.push_back(e.delivery_id());
  EXPECT_TRUE(subscriber.Ack(acks));
  EXPECT_TRUE(WaitFor([&] { return LocalPendingOn(cluster[2]) == on_m2.size(); }, seconds(10)));
}

bool Serving(LawndProcess& member) {
  v1::GetClusterMapResponse map;
  return ClusterMap(member, &map).ok() && map.serving();
}

// A member paused (SIGSTOP, a long GC) past its lease: its partitions answer UNAVAILABLE through the others
// meanwhile and are not moved; once it resumes it fires nothing until etcd has answered it again (here etcd
// is paused too when it resumes, so its fence stays closed though its timers are overdue), then delivers each
// of them once, late and never early.
TEST(LawndClusterTest, AMemberPausedPastItsLeaseFiresNothingAfterItResumesUntilEtcdAnswersIt) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 3);  // lease_ttl 3s.
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  std::vector<v1::StartTimerRequest> requests;
  const std::vector<std::string> on_m2 = IdsOwnedBy(map, "m2", "k", 20);
  for (const std::string& id : on_m2) requests.push_back(testing::TtlRequest(kNs, id, seconds(3600)));
  // Due 7 s after their start: while m2 is paused (from about 0.1 s to past 7 s).
  const std::vector<std::string> soon = IdsOwnedBy(map, "m2", "s", 20);
  for (const std::string& id : soon) requests.push_back(testing::TtlRequest(kNs, id, seconds(7)));
  auto stub0 = cluster[0].stub();
  testing::TestSubscriber subscriber(*stub0, kNs, 1000, false, 100);
  const int64_t started_ns = testing::WallNowNs();
  ASSERT_TRUE(testing::StartAll(*stub0, requests));
  ASSERT_EQ(LocalPendingOn(cluster[2]), on_m2.size() + soon.size());

  cluster[2].Signal(SIGSTOP);
  auto get = [&](const std::string& id) { return GetThrough(*stub0, id); };
  // Past its lease etcd drops m2's member key: its partitions are "not live", still m2's.
  EXPECT_TRUE(WaitFor([&] { return get(on_m2[0]).error_message().find("not live") != std::string::npos; },
                      seconds(15)))
      << get(on_m2[0]).error_message();
  EXPECT_EQ(testing::StartTtl(*stub0, kNs, on_m2[0] + "-new", seconds(60)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  v1::GetClusterMapResponse during;
  ASSERT_TRUE(ClusterMap(cluster[0], &during).ok());
  for (int p = 0; p < during.owners_size(); ++p) {
    ASSERT_EQ(during.owners(p).member(), map.owners(p).member()) << "partition " << p << " moved";
  }

  // etcd stops answering, then m2 resumes with its timers overdue: it must not fire them.
  etcd.Pause();
  while (testing::WallNowNs() < started_ns + 8'000'000'000) std::this_thread::sleep_for(milliseconds(100));
  cluster[2].Signal(SIGCONT);
  const auto resumed = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < resumed + seconds(3)) {
    EXPECT_EQ(LocalPendingOn(cluster[2]), on_m2.size() + soon.size()) << "m2 fired without a live lease";
    std::this_thread::sleep_for(milliseconds(200));
  }
  const int64_t etcd_back_ns = testing::WallNowNs();
  etcd.Resume();

  // Registered again under a new lease, m2 fires them: each reaches m0's subscriber once, after etcd is back.
  EXPECT_TRUE(WaitFor([&] { return get(on_m2[0]).ok(); }, seconds(30))) << get(on_m2[0]).error_message();
  const std::vector<v1::Expiration> fired = subscriber.Take(soon.size(), seconds(30));
  std::multiset<std::string> got;
  std::vector<uint64_t> acks;
  for (const v1::Expiration& e : fired) {
    got.insert(e.timer().id());
    EXPECT_GE(testing::ToNs(e.fired_at()), etcd_back_ns) << e.timer().id() << " fired before m2's lease";
    acks.push_back(e.delivery_id());
  }
  EXPECT_EQ(got, std::multiset<std::string>(soon.begin(), soon.end()));
  EXPECT_TRUE(subscriber.Ack(acks));
  EXPECT_TRUE(subscriber.Drain(milliseconds(500)).empty());
  EXPECT_NE(cluster[2].Log().find("lost its lease"), std::string::npos) << cluster[2].Log();
  for (const std::string& id : on_m2) EXPECT_TRUE(get(id).ok()) << id;
  EXPECT_TRUE(testing::StartTtl(*stub0, kNs, on_m2[0] + "-after", seconds(60)).ok());
}

TEST(LawndClusterTest, WhileEtcdIsUnreachablePastTheLeaseAMemberNeitherFiresNorAcceptsWritesThenCatchesUp) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 1);  // lease_ttl 3s: the fence closes within 3 s of the last renewal.
  cluster.StartAll();
  WaitAllFormed(cluster);
  auto stub = cluster[0].stub();
  testing::TestSubscriber subscriber(*stub, kNs, 1000, false, 100);
  std::vector<v1::StartTimerRequest> requests;
  // Due 8 s after their start: the fence (closed at most 3 s after the pause) is closed by then.
  for (int i = 0; i < 100; ++i)
    requests.push_back(testing::TtlRequest(kNs, "f" + std::to_string(i), seconds(8)));
  const int64_t started_ns = testing::WallNowNs();
  ASSERT_TRUE(testing::StartAll(*stub, requests));
  etcd.Pause();
  ASSERT_TRUE(WaitFor([&] { return !Serving(cluster[0]); }, seconds(10)));
  const grpc::Status refused = testing::StartTtl(*stub, kNs, "during", seconds(1));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.error_message().find("lease"), std::string::npos) << refused.error_message();
  // The timers come due 8 s after their start, while the fence is closed: none may fire.
  while (testing::WallNowNs() < started_ns + 9'500'000'000) {
    EXPECT_TRUE(subscriber.Drain(milliseconds(100)).empty());
  }
  etcd.Resume();
  // Back (under its old lease, or a new one if etcd expired the old): every timer fires, late, none early.
  ASSERT_TRUE(WaitFor([&] { return Serving(cluster[0]); }, seconds(20))) << cluster[0].Log();
  const std::vector<v1::Expiration> fired = subscriber.Take(100, seconds(20));
  EXPECT_EQ(fired.size(), 100u);
  std::vector<uint64_t> acks;
  for (const v1::Expiration& e : fired) {
    EXPECT_GE(testing::ToNs(e.fired_at()), started_ns + 9'500'000'000) << e.timer().id();
    acks.push_back(e.delivery_id());
  }
  EXPECT_TRUE(subscriber.Ack(acks));
  EXPECT_TRUE(testing::StartTtl(*stub, kNs, "after", seconds(60)).ok());
}

TEST(LawndClusterTest, EtcdUnreachableForLessThanTheLeaseMarginInterruptsNothing) {
  EtcdProcess etcd;
  TempDir dir;
  LawndProcess member(dir.path() + "/data",
                      {"--cluster-etcd-endpoints", etcd.endpoint(), "--cluster-member", "solo", "--cluster-advertise",
                       "127.0.0.1:0", "--config",
                       testing::WriteFile(dir.path() + "/lawn.yaml", "cluster:\n  name: t\n  lease_ttl: 10s\n")});
  member.Start();
  WaitFormed(member, 1);
  auto stub = member.stub();
  testing::TestSubscriber subscriber(*stub, kNs, 1000, false, 100);
  etcd.Pause();
  // 4 s without etcd (longer than the 3.3 s between renewals; the fence closes 9 s after the last renewal
  // that was answered, at the earliest 5.7 s after the pause): writes are accepted and timers fire.
  const auto until = std::chrono::steady_clock::now() + seconds(4);
  int started = 0;
  while (std::chrono::steady_clock::now() < until) {
    const grpc::Status status = testing::StartTtl(*stub, kNs, "p" + std::to_string(started), milliseconds(200));
    ASSERT_TRUE(status.ok()) << started << ": " << status.error_message();
    ++started;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(Serving(member));
  etcd.Resume();
  const std::vector<v1::Expiration> fired = subscriber.Take(static_cast<size_t>(started), seconds(10));
  EXPECT_EQ(fired.size(), static_cast<size_t>(started));
}

TEST(LawndClusterTest, ARelayedExpirationKeepsItsIdWhenRedeliveredAndAcksSentBeforeAHalfCloseArrive) {
  EtcdProcess etcd;
  // 3 s: the first deliveries of the 20 (two shards' rounds, then the relay) must all arrive before any is
  // due again, even under TSan beside other tests.
  Cluster cluster(etcd, 2, kPartitions, "ack_timeout: 3s\n");
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  auto stub1 = cluster[1].stub();
  std::vector<v1::StartTimerRequest> requests;
  for (const std::string& id : IdsOwnedBy(map, "m0", "r", 20)) {
    requests.push_back(testing::TtlRequest(kNs, id, milliseconds(100)));
  }
  {
    testing::TestSubscriber subscriber(*stub1, kNs, 1000, false, 100);
    ASSERT_TRUE(testing::StartAll(*stub1, requests));
    const std::vector<v1::Expiration> first = subscriber.Take(20, seconds(20));
    ASSERT_EQ(first.size(), 20u);
    for (const v1::Expiration& e : first) EXPECT_EQ(e.attempt(), 1u) << e.timer().id();
    // Not acked within ack_timeout: m0 redelivers through the relay, each with the id it had.
    const std::vector<v1::Expiration> again = subscriber.Take(20, seconds(20));
    ASSERT_EQ(again.size(), 20u);
    std::map<std::string, uint64_t> ids;
    for (const v1::Expiration& e : first) ids[e.timer().id()] = e.delivery_id();
    std::vector<uint64_t> acks;
    for (const v1::Expiration& e : again) {
      EXPECT_EQ(e.attempt(), 2u) << e.timer().id();
      EXPECT_EQ(e.delivery_id(), ids[e.timer().id()]) << e.timer().id();
      acks.push_back(e.delivery_id());
    }
    // Acked and closed at once: the acks still reach m0 before the relayed stream ends.
    ASSERT_TRUE(subscriber.Ack(acks));
    EXPECT_TRUE(subscriber.Close().ok());
  }
  EXPECT_TRUE(WaitFor([&] { return testing::NamespaceStatsOf(*stub1, kNs).outbox() == 0; }, seconds(10)))
      << testing::NamespaceStatsOf(*stub1, kNs).DebugString();
}

TEST(LawndClusterTest, RelayedExpirationsKeepResponsesWithinTheBatchByteBound) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 2);
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  // 100 x 60 KiB owned by m0 and 100 x 60 KiB by m1: one unbounded response would be ~12 MiB, past the
  // subscriber's 4 MiB receive limit.
  std::vector<v1::StartTimerRequest> requests;
  const std::string payload(60 * 1024, 'x');
  for (const std::string owner : {"m0", "m1"}) {
    for (const std::string& id : IdsOwnedBy(map, owner, "big-" + owner + "-", 100)) {
      requests.push_back(testing::TtlRequest(kNs, id, milliseconds(300), payload));
    }
  }
  auto stub1 = cluster[1].stub();
  for (size_t i = 0; i < requests.size(); i += 50) {
    ASSERT_TRUE(testing::StartAll(*stub1, std::vector<v1::StartTimerRequest>(requests.begin() + i,
                                                                              requests.begin() + i + 50)));
  }
  std::this_thread::sleep_for(seconds(1));  // All fired into the outboxes before anyone subscribes.
  testing::TestSubscriber subscriber(*stub1, kNs, 1000, false, 1000);
  const std::vector<v1::Expiration> got = subscriber.Take(200, seconds(20));
  EXPECT_EQ(got.size(), 200u);
  EXPECT_FALSE(subscriber.WaitEnd(milliseconds(100)).has_value());  // The stream is still open.
}

// lawn_forwarded_calls_total summed over the members (their metrics ports, from their logs).
double ForwardedCalls(Cluster& cluster) {
  double sum = 0;
  for (size_t i = 0; i < cluster.size(); ++i) {
    const std::string text = testing::HttpGet(testing::MetricsPortFromLog(cluster[i].Log()), "/metrics");
    sum += std::max(0.0, testing::MetricSample(text, "lawn_forwarded_calls_total"));
  }
  return sum;
}

TEST(LawndClusterTest, AClientThatRoutesDirectlySendsEachCallToItsOwnerSoNoMemberForwards) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 3, kPartitions, "", nullptr, {"--metrics-listen", "127.0.0.1:0"});
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  ClientOptions direct_options;
  direct_options.route_directly = true;
  absl::StatusOr<std::unique_ptr<LawnClient>> direct = LawnClient::Create(cluster[0].address(), direct_options);
  ASSERT_TRUE(direct.ok()) << direct.status();
  std::vector<v1::StartTimerRequest> batch;
  for (int i = 0; i < 150; ++i) {
    ASSERT_TRUE((*direct)->StartTimer(kNs, "u" + std::to_string(i), seconds(3600)).ok()) << i;
    batch.push_back(testing::TtlRequest(kNs, "b" + std::to_string(i), seconds(3600)));
  }
  absl::StatusOr<std::vector<absl::Status>> started = (*direct)->StartTimers(batch);
  ASSERT_TRUE(started.ok()) << started.status();
  for (const absl::Status& s : *started) EXPECT_TRUE(s.ok()) << s;
  for (int i = 0; i < 150; ++i) {
    EXPECT_TRUE((*direct)->GetTimer(kNs, "b" + std::to_string(i)).ok()) << i;
    EXPECT_TRUE((*direct)->RescheduleTimer(kNs, "u" + std::to_string(i), seconds(7200)).ok()) << i;
  }
  EXPECT_TRUE((*direct)->DeleteTimer(kNs, "u0").ok());
  EXPECT_TRUE(absl::IsNotFound((*direct)->GetTimer(kNs, "u0").status()));
  EXPECT_EQ(ForwardedCalls(cluster), 0);
  EXPECT_EQ(PendingOn(cluster[1]), 299u);

  // The same calls through a client that does not route directly take the hop for 2/3 of the timers.
  absl::StatusOr<std::unique_ptr<LawnClient>> plain = LawnClient::Create(cluster[0].address(), ClientOptions());
  ASSERT_TRUE(plain.ok());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE((*plain)->GetTimer(kNs, "b" + std::to_string(i)).ok());
  EXPECT_GT(ForwardedCalls(cluster), 0);

  // An owner that is down: the direct call fails over to the target, which says the partition is unavailable.
  cluster[2].Kill();
  const std::string on_m2 = IdsOwnedBy(map, "m2", "b", 1)[0];
  absl::StatusOr<v1::Timer> down = (*direct)->GetTimer(kNs, on_m2);
  EXPECT_TRUE(absl::IsUnavailable(down.status())) << down.status();
}

TEST(LawndClusterTest, WithMutualTlsMembersForwardAndRelayOverTls) {
  EtcdProcess etcd;
  TempDir certs_dir;
  const std::string certs = testing::MakeCerts(certs_dir.path() + "/certs");
  // Clients and members alike need a certificate the CA signed; a member presents its server certificate
  // (for 127.0.0.1, as every member's advertise address here) when it forwards or relays.
  const std::string extra = "  tls_ca_file: " + certs + "/ca.crt\n" + "tls:\n  cert_file: " + certs +
                            "/server.crt\n  key_file: " + certs + "/server.key\n  client_ca_file: " + certs +
                            "/ca.crt\n";
  Cluster cluster(etcd, 2, kPartitions, extra,
                  testing::TlsCredentials(certs + "/ca.crt", certs + "/client.crt", certs + "/client.key"));
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  auto stub0 = cluster[0].stub();
  testing::TestSubscriber subscriber(*stub0, kNs, 1000, false, 100);
  std::vector<v1::StartTimerRequest> requests;
  size_t on_m0 = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string id = "tls" + std::to_string(i);
    on_m0 += OwnerOf(map, id) == "m0" ? 1 : 0;
    // 10 s: all still pending when counted below, after the first TLS handshakes (slow under sanitizers).
    requests.push_back(testing::TtlRequest(kNs, id, seconds(10)));
  }
  ASSERT_GT(on_m0, 0u);
  ASSERT_LT(on_m0, 200u);
  // Through m1: m0's share is forwarded to m0 over TLS.
  ASSERT_TRUE(testing::StartAll(*cluster[1].stub(), requests));
  EXPECT_EQ(LocalPendingOn(cluster[0]), on_m0);
  // The subscriber on m0 gets m1's share relayed over TLS, and m0's own.
  const std::vector<v1::Expiration> fired = subscriber.Take(200, seconds(40));
  EXPECT_EQ(fired.size(), 200u);
  std::vector<uint64_t> acks;
  for (const v1::Expiration& e : fired) acks.push_back(e.delivery_id());
  EXPECT_TRUE(subscriber.Ack(acks));
  EXPECT_TRUE(WaitFor([&] { return testing::NamespaceStatsOf(*stub0, kNs).outbox() == 0; }, seconds(10)));
}

TEST(LawndClusterTest, TlsWithoutTheClusterCaIsRefusedAtStart) {
  TempDir dir;
  const std::string certs = testing::MakeCerts(dir.path() + "/certs");
  LawndProcess member(dir.path() + "/data",
                      {"--cluster-etcd-endpoints", "127.0.0.1:1", "--cluster-member", "x", "--cluster-advertise",
                       "127.0.0.1:0", "--tls-cert-file", certs + "/server.crt", "--tls-key-file",
                       certs + "/server.key"});
  EXPECT_EQ(member.RunToExit(seconds(30)), 2);
  EXPECT_NE(member.Log().find("cluster.tls_ca_file"), std::string::npos) << member.Log();
}

TEST(LawndClusterTest, LawnctlClusterStatusAndMapShowTheMembersAndTheOwnerOfEveryPartition) {
  EtcdProcess etcd;
  Cluster cluster(etcd, 2);
  cluster.StartAll();
  const v1::GetClusterMapResponse map = WaitAllFormed(cluster);
  std::string out;
  ASSERT_EQ(Lawnctl("--addr " + cluster[1].address() + " cluster status", &out), 0) << out;
  EXPECT_NE(out.find("cluster t: 64 partitions, leader m"), std::string::npos) << out;
  EXPECT_NE(out.find("seen from m1 (serving)"), std::string::npos) << out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(out.find("m" + std::to_string(i) + "  " + cluster[static_cast<size_t>(i)].address() + "  32 partitions"),
              std::string::npos)
        << out;
  }
  ASSERT_EQ(Lawnctl("--addr " + cluster[0].address() + " cluster map", &out), 0) << out;
  // One line per run of partitions with one owner, together covering 0..63 in order.
  uint32_t next = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    uint32_t from = 0, to = 0;
    char owner[64] = {0};
    ASSERT_EQ(std::sscanf(line.c_str(), "%u-%u %63s", &from, &to, owner), 3) << line;
    EXPECT_EQ(from, next) << line;
    for (uint32_t p = from; p <= to; ++p) EXPECT_EQ(map.owners(static_cast<int>(p)).member(), owner) << p;
    next = to + 1;
  }
  EXPECT_EQ(next, kPartitions);
  // A lawnd without a cluster section: the call fails (FAILED_PRECONDITION), lawnctl exits non-zero.
  TempDir dir;
  LawndProcess alone(dir.path());
  alone.Start();
  EXPECT_NE(Lawnctl("--addr " + alone.address() + " cluster status", &out), 0);
}

TEST(LawndClusterTest, AMemberConfiguredForAnotherPartitionCountRefusesToStart) {
  EtcdProcess etcd;
  Cluster first(etcd, 1);
  first.StartAll();
  WaitFormed(first[0], 1);
  TempDir dir;
  LawndProcess other(dir.path() + "/data",
                     {"--cluster-etcd-endpoints", etcd.endpoint(), "--cluster-member", "x", "--cluster-advertise",
                      "127.0.0.1:0", "--config",
                      testing::WriteFile(dir.path() + "/lawn.yaml", "cluster:\n  name: t\n  partitions: 32\n")});
  EXPECT_EQ(other.RunToExit(seconds(30)), 1);
  EXPECT_NE(other.Log().find("formed with 64 partitions"), std::string::npos) << other.Log();
}

TEST(LawndClusterTest, AClusterOfOneWithoutAClusterSectionHasNoMap) {
  TempDir dir;
  LawndProcess alone(dir.path());
  alone.Start();
  v1::GetClusterMapResponse map;
  EXPECT_EQ(ClusterMap(alone, &map).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace lawn
