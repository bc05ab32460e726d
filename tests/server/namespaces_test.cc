// Namespaces' lifetime: acquired or non-empty namespaces are never retired; a retired one is replaced by a
// fresh state on the next use; indexes (hold groups) are reused; max_namespaces counts live ones.
#include "server/namespaces.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace lawn {
namespace {

NamespaceLimits Limits(uint32_t max_namespaces) {
  NamespaceLimits l;
  l.max_namespaces = max_namespaces;
  return l;
}

TEST(NamespacesTest, OnlyAnIdleEmptyNamespaceIsRetired) {
  Namespaces registry(Limits(10));
  NamespaceState* ns = *registry.Acquire("a");
  EXPECT_EQ(registry.TryRetire(ns), nullptr) << "acquired";
  ns->pending.fetch_add(1);
  ns->Release();
  EXPECT_EQ(registry.TryRetire(ns), nullptr) << "holds a timer";
  ns->pending.fetch_sub(1);
  ASSERT_TRUE(ns->outbox.TryReserve(100));
  EXPECT_EQ(registry.TryRetire(ns), nullptr) << "holds an outbox entry";
  ns->outbox.Unreserve(1, 100);
  std::shared_ptr<NamespaceState> retired = registry.TryRetire(ns);
  ASSERT_NE(retired, nullptr);
  EXPECT_TRUE(retired->retired());
  EXPECT_FALSE(retired->TryAcquire());
  EXPECT_EQ(registry.Find("a"), nullptr);
  // The next use gets a fresh state, with the freed index.
  NamespaceState* fresh = *registry.Acquire("a");
  EXPECT_NE(fresh, retired.get());
  EXPECT_EQ(fresh->index(), retired->index());
  fresh->Release();
}

TEST(NamespacesTest, MaxNamespacesCountsLiveOnes) {
  Namespaces registry(Limits(2));
  NamespaceState* a = *registry.GetOrCreate("a");
  ASSERT_TRUE(registry.GetOrCreate("b").ok());
  EXPECT_EQ(registry.GetOrCreate("c").status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_NE(registry.TryRetire(a), nullptr);
  EXPECT_TRUE(registry.GetOrCreate("c").ok());
}

TEST(NamespacesTest, AWatchTakesNoNamespaceSlotAndBecomesTheNamespaceInPlace) {
  Namespaces registry(Limits(1));
  NamespaceState* watched = *registry.AcquireToWatch("w");
  EXPECT_FALSE(watched->exists());
  EXPECT_EQ(registry.size(), 0u) << "a watch is not a namespace";
  // The one namespace slot is still free for a timer's namespace.
  NamespaceState* a = *registry.Acquire("a");
  EXPECT_TRUE(a->exists());
  EXPECT_EQ(registry.size(), 1u);
  // Watch-only states have their own bound (max_namespaces of them).
  absl::StatusOr<NamespaceState*> second_watch = registry.AcquireToWatch("w2");
  EXPECT_EQ(second_watch.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second_watch.status().message().find("max_namespaces"), std::string::npos);
  // A start into the watched name needs a namespace slot: refused while "a" holds it...
  EXPECT_EQ(registry.Acquire("w").status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(watched->exists());
  // ...and once "a" is gone, the watched state itself becomes the namespace (its subscribers stay attached).
  a->Release();
  ASSERT_NE(registry.TryRetire(a), nullptr);
  absl::StatusOr<NamespaceState*> started = registry.Acquire("w");
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(*started, watched);
  EXPECT_TRUE(watched->exists());
  EXPECT_EQ(registry.size(), 1u);
  watched->Release();
  watched->Release();
  // Retiring it frees its slot and its index.
  const uint16_t index = watched->index();
  ASSERT_NE(registry.TryRetire(watched), nullptr);
  EXPECT_EQ(registry.size(), 0u);
  NamespaceState* b = *registry.Acquire("b");
  EXPECT_EQ(b->index(), index);
  b->Release();
}

TEST(NamespacesTest, AnUnusedWatchIsRetiredWithoutEverTakingAnIndex) {
  Namespaces registry(Limits(1));
  NamespaceState* watched = *registry.AcquireToWatch("w");
  EXPECT_EQ(registry.TryRetire(watched), nullptr) << "acquired";
  watched->Release();
  ASSERT_NE(registry.TryRetire(watched), nullptr);
  EXPECT_EQ(registry.Find("w"), nullptr);
  // The watch-only bound is free again.
  NamespaceState* again = *registry.AcquireToWatch("w3");
  again->Release();
}

TEST(NamespacesTest, ConcurrentAcquiresNeverLandInARetiredState) {
  Namespaces registry(Limits(10));
  std::atomic<bool> stop{false};
  std::atomic<int> in_retired{0};
  std::vector<std::shared_ptr<NamespaceState>> graveyard;  // Retired states stay alive for the checks.
  std::thread user([&] {
    for (int i = 0; i < 200000; ++i) {
      NamespaceState* ns = *registry.Acquire("x");
      ns->pending.fetch_add(1);  // What a start does while it holds the namespace.
      if (ns->retired()) in_retired++;
      ns->pending.fetch_sub(1);
      ns->Release();
    }
    stop = true;
  });
  while (!stop) {
    if (NamespaceState* ns = registry.Find("x")) {
      if (auto retired = registry.TryRetire(ns)) graveyard.push_back(std::move(retired));
    }
  }
  user.join();
  EXPECT_EQ(in_retired.load(), 0);
  for (const auto& ns : graveyard) EXPECT_EQ(ns->pending.load(), 0u);
}

}  // namespace
}  // namespace lawn
