// LeaseKeeper against a real etcd: it keeps a lease alive, and its fencing clock runs out before the lease
// can expire at etcd when etcd stops answering (paused with SIGSTOP), so a member that checks Fresh() never
// acts on a lease that etcd may already have expired.
#include "cluster/lease_keeper.h"

#include <thread>

#include "gtest/gtest.h"
#include "tests/cluster/etcd_process.h"

namespace lawn {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EtcdProcess;
using testing::WaitFor;

TEST(LeaseKeeperTest, KeepsItsLeaseAndItsKeysAlivePastTheTtl) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  auto keeper = LeaseKeeper::Start(*client, {.ttl = seconds(3), .margin = milliseconds(500)});
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  ASSERT_TRUE(client->Put("/t/members/m", "addr", (*keeper)->lease()).ok());
  EXPECT_TRUE((*keeper)->Fresh());
  // Three TTLs: without renewals the key would be gone.
  std::this_thread::sleep_for(seconds(9));
  absl::StatusOr<std::optional<EtcdKeyValue>> key = client->Get("/t/members/m");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_TRUE(key->has_value());
  EXPECT_GE((*keeper)->renewals(), 3);
  EXPECT_TRUE((*keeper)->Fresh());
  EXPECT_FALSE((*keeper)->lost());
}

TEST(LeaseKeeperTest, AStoppedKeeperLetsTheLeaseExpireAndRevokeEndsItAtOnce) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  {
    auto keeper = LeaseKeeper::Start(*client, {.ttl = seconds(2), .margin = milliseconds(500)});
    ASSERT_TRUE(keeper.ok());
    ASSERT_TRUE(client->Put("/t/members/crashed", "addr", (*keeper)->lease()).ok());
  }  // Stops renewing, as a crashed member would.
  EXPECT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<std::optional<EtcdKeyValue>> key = client->Get("/t/members/crashed");
        return key.ok() && !key->has_value();
      },
      seconds(15)));

  auto keeper = LeaseKeeper::Start(*client, {.ttl = seconds(30), .margin = milliseconds(500)});
  ASSERT_TRUE(keeper.ok());
  ASSERT_TRUE(client->Put("/t/members/leaving", "addr", (*keeper)->lease()).ok());
  ASSERT_TRUE((*keeper)->Revoke().ok());
  absl::StatusOr<std::optional<EtcdKeyValue>> leaving = client->Get("/t/members/leaving");
  ASSERT_TRUE(leaving.ok()) << leaving.status();
  EXPECT_FALSE(leaving->has_value());
  EXPECT_FALSE((*keeper)->Fresh());
}

TEST(LeaseKeeperTest, ALeaseRevokedElsewhereIsLostForGood) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  auto keeper = LeaseKeeper::Start(*client, {.ttl = seconds(3), .margin = milliseconds(500)});
  ASSERT_TRUE(keeper.ok());
  ASSERT_TRUE(client->RevokeLease((*keeper)->lease()).ok());
  EXPECT_TRUE(WaitFor([&] { return (*keeper)->lost(); }, seconds(15)));
  EXPECT_FALSE((*keeper)->Fresh());
}

TEST(LeaseKeeperTest, FreshRunsOutBeforeTheLeaseCanExpireWhileEtcdIsPaused) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  const seconds ttl(3);
  auto keeper = LeaseKeeper::Start(*client, {.ttl = ttl, .margin = milliseconds(500)});
  ASSERT_TRUE(keeper.ok());
  ASSERT_TRUE(client->Put("/t/members/m", "addr", (*keeper)->lease()).ok());
  ASSERT_TRUE(WaitFor([&] { return (*keeper)->renewals() >= 1; }, seconds(15)));

  const milliseconds margin(500);
  etcd.Pause();
  const auto paused_at = BootClock::now();
  // Every renewal that etcd answered was sent before the pause, so etcd keeps the lease at least until
  // pause + ttl, and the fence must be closed by pause + ttl - margin: checked at that instant (a late
  // wake-up of this thread only makes the check stricter).
  std::this_thread::sleep_until(std::chrono::steady_clock::now() + (ttl - margin));
  EXPECT_FALSE((*keeper)->Fresh()) << "the fence outlived the lease: " << (BootClock::now() - paused_at).count() << " ns after the pause";
  // The first failed renewal is counted a call timeout after it was sent: wait for it, bounded.
  EXPECT_TRUE(WaitFor([&] { return (*keeper)->failures() >= 1; }, seconds(10)));
  etcd.Resume();

  // After the pause the keeper either renews (Fresh again, the key still there) or learns that the lease
  // expired (lost, the key gone); never Fresh with the lease gone.
  ASSERT_TRUE(WaitFor([&] { return (*keeper)->Fresh() || (*keeper)->lost(); }, seconds(20)));
  if ((*keeper)->lost()) {
    EXPECT_FALSE(client->Get("/t/members/m")->has_value());
  } else {
    EXPECT_TRUE(client->Get("/t/members/m")->has_value());
  }
}

TEST(LeaseKeeperTest, AMarginOfTheWholeTtlOrRenewalsTooRareAreRefused) {
  EtcdProcess etcd;
  auto client = etcd.Client();
  EXPECT_TRUE(absl::IsInvalidArgument(LeaseKeeper::Start(*client, {.ttl = seconds(2), .margin = seconds(2)}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      LeaseKeeper::Start(*client, {.ttl = seconds(3), .margin = seconds(1), .renew_every = seconds(2)}).status()));
}

}  // namespace
}  // namespace lawn
