// EtcdWatch and ClusterNode's use of it, against a real etcd: a change under the watched prefix is reported
// and one outside it is not; a stream that etcd stopped answering is reopened and reported as a change; a
// member whose periodic re-read is an hour away still sees another member join at once, and its own passes
// do not wake it again (no refresh storm).
#include "cluster/etcd_watch.h"

#include <atomic>
#include <thread>

#include "cluster/cluster_node.h"
#include "cluster/etcd_client.h"
#include "gtest/gtest.h"
#include "tests/cluster/etcd_process.h"

namespace lawn {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EtcdProcess;
using testing::WaitFor;

TEST(EtcdWatchTest, AChangeUnderThePrefixIsReportedAndOneOutsideItIsNot) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  std::atomic<int> changes{0};
  std::unique_ptr<EtcdWatch> watch = client->Watch("/w/", [&] { changes.fetch_add(1); });
  // The open itself counts as a change: what happened before it was not seen.
  ASSERT_TRUE(WaitFor([&] { return watch->opens() == 1 && changes.load() == 1; }, seconds(10)));

  // Outside the prefix (one shares its first bytes), then inside. etcd sends events in revision order, so
  // once the inside one is counted any report of the outside ones would have been counted before it.
  ASSERT_TRUE(client->Put("/x/a", "1").ok());
  ASSERT_TRUE(client->Put("/wz", "1").ok());
  ASSERT_TRUE(client->Put("/w/a", "1").ok());
  ASSERT_TRUE(WaitFor([&] { return changes.load() >= 2; }, seconds(10)));
  EXPECT_EQ(changes.load(), 2);

  // A delete is a change too (a member key going with its lease).
  ASSERT_EQ(*client->Delete("/w/a"), 1);
  ASSERT_TRUE(WaitFor([&] { return changes.load() == 3; }, seconds(10)));
  EXPECT_EQ(watch->opens(), 1u);
}

TEST(EtcdWatchTest, AStreamToAnEtcdThatStoppedAnsweringIsReopenedAndReportedAsAChange) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  std::atomic<int> changes{0};
  std::unique_ptr<EtcdWatch> watch = client->Watch("/w/", [&] { changes.fetch_add(1); });
  ASSERT_TRUE(WaitFor([&] { return watch->opens() == 1; }, seconds(10)));

  // A paused etcd keeps its socket open and answers nothing: the channel's keepalive (a ping after 10 s
  // quiet, 5 s to answer) is what ends the stream.
  etcd.Pause();
  const bool ended = WaitFor([&] { return watch->streams_ended() >= 1; }, seconds(40));
  etcd.Resume();
  ASSERT_TRUE(ended) << "the stream to the paused etcd did not end";
  ASSERT_TRUE(WaitFor([&] { return watch->opens() >= 2; }, seconds(20))) << "the watch was not reopened";
  // The reopen is reported as a change just after it is counted as an open: the first open and the reopen.
  EXPECT_TRUE(WaitFor([&] { return changes.load() >= 2; }, seconds(10))) << changes.load();
  const int after_reopen = changes.load();
  ASSERT_TRUE(client->Put("/w/b", "1").ok());
  EXPECT_TRUE(WaitFor([&] { return changes.load() > after_reopen; }, seconds(10)));
}

TEST(EtcdWatchTest, AWatchOfAnEtcdThatIsNotThereRetriesAndStopsAtOnce) {
  auto client = EtcdClient::Connect({.endpoints = {"127.0.0.1:1"}});  // Nothing listens on port 1.
  ASSERT_TRUE(client.ok()) << client.status();
  std::atomic<int> changes{0};
  auto watch = (*client)->Watch("/w/", [&] { changes.fetch_add(1); });
  std::this_thread::sleep_for(milliseconds(500));
  const auto before = std::chrono::steady_clock::now();
  watch.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(3));
  EXPECT_EQ(changes.load(), 0);
}

ClusterNodeOptions NodeOptions(const EtcdProcess& etcd, const std::string& member) {
  ClusterNodeOptions options;
  options.etcd_endpoints = {etcd.endpoint()};
  options.cluster = "watched";
  options.member = member;
  options.advertise = "127.0.0.1:1";  // Never called: the test only reads the maps.
  options.partitions = 16;
  options.lease_ttl = seconds(5);
  options.refresh_every = hours(1);  // Only the watch can make a member read etcd again.
  return options;
}

TEST(EtcdWatchTest, AMemberSeesAnotherJoinAndLeaveThroughTheWatchAndItsOwnPassesDoNotWakeIt) {
  EtcdProcess etcd;
  auto a = ClusterNode::Join(NodeOptions(etcd, "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  // a registers, leads and hands out the partitions in its first pass; the watch's first open (and a's
  // own writes) bring the passes that publish the result.
  ASSERT_TRUE(WaitFor([&] { return (*a)->map()->live.count("a") == 1 && (*a)->map()->owners[0] == "a"; },
                      seconds(15)));

  auto b = ClusterNode::Join(NodeOptions(etcd, "b"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(WaitFor([&] { return (*a)->map()->live.count("b") == 1; }, seconds(10)))
      << "a did not see b join";
  EXPECT_TRUE(
      WaitFor([&] { return (*b)->map()->live.size() == 2 && (*b)->map()->owners[0] == "a"; }, seconds(10)));

  // Settled: no key changes, so no more passes (a pass that woke the watch with its own writes would loop).
  std::this_thread::sleep_for(milliseconds(500));
  const uint64_t settled = (*a)->generation();
  std::this_thread::sleep_for(seconds(1));
  EXPECT_EQ((*a)->generation(), settled);

  (*b)->Leave();  // Revokes b's lease: its member key goes at once.
  EXPECT_TRUE(WaitFor([&] { return (*a)->map()->live.count("b") == 0; }, seconds(10)))
      << "a did not see b leave";
}

}  // namespace
}  // namespace lawn
