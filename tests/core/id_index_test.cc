// Unit tests of IdIndex: lookups, erasure and growth against a std::map oracle, with hashes that spread, that
// share their low bits (as one shard's do), and that all collide (overflow chains, saturated counts).
#include "core/id_index.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lawn {
namespace {

// Refs stand for records; each has a 64-bit key (its "id") and the 32-bit hash the index files it under.
class Records {
 public:
  explicit Records(uint32_t (*hash_fn)(uint64_t)) : hash_fn_(hash_fn) {}

  TimerRef Add(uint64_t key) {
    keys_.push_back(key);
    return static_cast<TimerRef>(keys_.size() - 1);
  }
  uint64_t key(TimerRef ref) const { return keys_[ref]; }
  uint32_t hash(TimerRef ref) const { return hash_fn_(keys_[ref]); }
  uint32_t HashOfKey(uint64_t key) const { return hash_fn_(key); }

  TimerRef Find(const IdIndex& index, uint64_t key) const {
    return index.Find(hash_fn_(key), [&](TimerRef ref) { return keys_[ref] == key; });
  }
  void Insert(IdIndex& index, TimerRef ref) const {
    index.Insert(ref, hash(ref), [this](TimerRef r) { return hash(r); });
  }

 private:
  uint32_t (*hash_fn_)(uint64_t);
  std::vector<uint64_t> keys_;
};

uint32_t SpreadHash(uint64_t key) { return static_cast<uint32_t>((key * 0xD6E8FEB86659FD93ULL) >> 32); }
// Low 4 bits constant, as in a shard of a 16-shard lawnd that picks shards by the hash's low bits.
uint32_t ShardLikeHash(uint64_t key) { return SpreadHash(key) << 4 | 0x5u; }
// 97 distinct hashes in all: long overflow chains, many tag matches per lookup.
uint32_t CollidingHash(uint64_t key) { return SpreadHash(key % 97); }
// One hash for every key: one chain, its overflow counts saturate.
uint32_t OneHash(uint64_t) { return 0x12345678u; }

void ExpectMatchesOracle(const IdIndex& index, const Records& records, const std::map<uint64_t, TimerRef>& live,
                         const std::vector<uint64_t>& gone) {
  ASSERT_EQ(index.size(), live.size());
  for (const auto& [key, ref] : live) {
    ASSERT_EQ(records.Find(index, key), ref) << "key " << key;
    ASSERT_TRUE(index.Contains(ref, records.hash(ref)));
  }
  for (uint64_t key : gone) ASSERT_EQ(records.Find(index, key), kNoTimer) << "erased key " << key;
  std::vector<TimerRef> visited;
  index.ForEach([&](TimerRef ref) { visited.push_back(ref); });
  std::vector<TimerRef> expected;
  for (const auto& [key, ref] : live) expected.push_back(ref);
  std::sort(visited.begin(), visited.end());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(visited, expected);
}

// Random inserts and erases (more inserts first, then more erases), checked against the oracle every step
// batch: growth, overflow bookkeeping on erase, and reuse of emptied slots.
void RunAgainstOracle(uint32_t (*hash_fn)(uint64_t), size_t steps, uint64_t seed) {
  Records records(hash_fn);
  IdIndex index;
  std::map<uint64_t, TimerRef> live;
  std::vector<uint64_t> gone;
  std::mt19937_64 rng(seed);
  for (size_t step = 0; step < steps; ++step) {
    const bool growing = step < steps / 2;
    const bool insert = live.empty() || rng() % 100 < (growing ? 70u : 30u);
    if (insert) {
      const uint64_t key = rng() % (steps * 4);
      if (live.count(key) != 0) continue;
      const TimerRef ref = records.Add(key);
      records.Insert(index, ref);
      live.emplace(key, ref);
      gone.erase(std::remove(gone.begin(), gone.end(), key), gone.end());
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(index.Erase(it->second, records.hash(it->second)));
      ASSERT_FALSE(index.Erase(it->second, records.hash(it->second))) << "erased twice";
      gone.push_back(it->first);
      live.erase(it);
    }
    if (step % 997 == 0 || step + 1 == steps) ExpectMatchesOracle(index, records, live, gone);
  }
}

TEST(IdIndexTest, EmptyIndexFindsNothingAndErasesNothing) {
  IdIndex index;
  EXPECT_EQ(index.Find(42, [](TimerRef) { return true; }), kNoTimer);
  EXPECT_FALSE(index.Erase(7, 42));
  EXPECT_FALSE(index.Contains(7, 42));
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.MemoryBytes(), 0u);
  index.Prefetch(42);  // No table yet: must not touch memory.
}

TEST(IdIndexTest, SpreadHashesMatchTheOracle) { RunAgainstOracle(&SpreadHash, 40'000, 1); }
TEST(IdIndexTest, HashesSharingTheirLowBitsMatchTheOracle) { RunAgainstOracle(&ShardLikeHash, 40'000, 2); }
TEST(IdIndexTest, CollidingHashesMatchTheOracle) { RunAgainstOracle(&CollidingHash, 8'000, 3); }

TEST(IdIndexTest, OneHashForAllSaturatesTheOverflowCountsAndStaysCorrect) {
  // 4,000 refs in one chain pass well over 255 full chunks: those counts saturate and stay, and lookups of
  // refs placed beyond them must still probe that far; erasing most of them must leave the rest findable.
  Records records(&OneHash);
  IdIndex index;
  std::map<uint64_t, TimerRef> live;
  std::vector<uint64_t> gone;
  for (uint64_t key = 0; key < 4'000; ++key) {
    const TimerRef ref = records.Add(key);
    records.Insert(index, ref);
    live.emplace(key, ref);
  }
  ExpectMatchesOracle(index, records, live, gone);
  for (uint64_t key = 0; key < 4'000; key += 3) {
    ASSERT_TRUE(index.Erase(live.at(key), OneHash(key)));
    live.erase(key);
    gone.push_back(key);
  }
  ExpectMatchesOracle(index, records, live, gone);
  for (uint64_t key = 10'000; key < 11'000; ++key) {  // Reuse of the emptied slots along the chain.
    const TimerRef ref = records.Add(key);
    records.Insert(index, ref);
    live.emplace(key, ref);
  }
  ExpectMatchesOracle(index, records, live, gone);
}

TEST(IdIndexTest, EraseIdentifiesTheRefNotTheTag) {
  // Two refs under one hash: erasing one by ref must leave the other, though their tags are equal.
  Records records(&OneHash);
  IdIndex index;
  const TimerRef a = records.Add(1);
  const TimerRef b = records.Add(2);
  records.Insert(index, a);
  records.Insert(index, b);
  EXPECT_FALSE(index.Erase(99, OneHash(0)));  // Not in the index, same tag.
  EXPECT_TRUE(index.Erase(a, OneHash(1)));
  EXPECT_EQ(records.Find(index, 1), kNoTimer);
  EXPECT_EQ(records.Find(index, 2), b);
  EXPECT_EQ(index.size(), 1u);
}

TEST(IdIndexTest, GrowsByDoublingWithinTenOfTwelveSlotsPerChunk) {
  Records records(&SpreadHash);
  IdIndex index;
  for (uint64_t key = 0; key < 100'000; ++key) {
    records.Insert(index, records.Add(key));
    ASSERT_LE(index.size() * 12, index.capacity() * 10) << "over the load bound at " << key;
  }
  // 100,000 refs need 10,000 chunks of 10: the next power of two is 16,384 chunks of 64 bytes.
  EXPECT_EQ(index.capacity(), 16'384u * 12);
  EXPECT_EQ(index.MemoryBytes(), 16'384u * 64);
}

}  // namespace
}  // namespace lawn
