#include "core/id_index.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace lawn {

namespace {

constexpr std::align_val_t kChunkAlignment{64};

}  // namespace

IdIndex::~IdIndex() {
  if (chunks_ != nullptr) ::operator delete(chunks_, kChunkAlignment);
}

void IdIndex::Insert(TimerRef ref, uint32_t hash, HashOf hash_of) {
  if (size_ + 1 > chunk_count_ * kMaxFilledPerChunk) Grow(hash_of);
  Place(ref, hash);
  ++size_;
}

void IdIndex::Place(TimerRef ref, uint32_t hash) {
  // The load bound leaves room in some chunk, so this ends.
  for (size_t chunk = HomeOf(hash);; chunk = Next(chunk)) {
    Chunk& c = chunks_[chunk];
    const uint32_t empty = Match(c, 0);
    if (empty != 0) {
      const int slot = __builtin_ctz(empty);
      c.tags[slot] = TagOf(hash);
      c.refs[slot] = ref;
      return;
    }
    if (c.overflow != kOverflowSaturated) ++c.overflow;
  }
}

bool IdIndex::Erase(TimerRef ref, uint32_t hash) {
  size_t chunk;
  int slot;
  if (!Locate(hash, [ref](TimerRef candidate) { return candidate == ref; }, &chunk, &slot)) return false;
  chunks_[chunk].tags[slot] = 0;
  --size_;
  // The chunks this ref's probe passed no longer need to send lookups on for it.
  for (size_t passed = HomeOf(hash); passed != chunk; passed = Next(passed)) {
    if (chunks_[passed].overflow != kOverflowSaturated) --chunks_[passed].overflow;
  }
  return true;
}

bool IdIndex::Contains(TimerRef ref, uint32_t hash) const {
  size_t chunk;
  int slot;
  return Locate(hash, [ref](TimerRef candidate) { return candidate == ref; }, &chunk, &slot);
}

void IdIndex::ForEach(absl::FunctionRef<void(TimerRef)> visit) const {
  for (size_t chunk = 0; chunk < chunk_count_; ++chunk) {
    const Chunk& c = chunks_[chunk];
    for (int slot = 0; slot < kSlots; ++slot) {
      if (c.tags[slot] != 0) visit(c.refs[slot]);
    }
  }
}

void IdIndex::Grow(HashOf hash_of) {
  const size_t old_count = chunk_count_;
  const size_t new_count = old_count == 0 ? 1 : old_count * 2;
  // 2^32 refs fill at most 2^29 chunks: HomeOf's shift by 32 - chunk_bits_ stays defined.
  if (new_count > (size_t{1} << 32)) std::abort();
  // Allocated before any field changes, so a failed allocation leaves the index as it was.
  auto* const fresh = static_cast<Chunk*>(::operator new(new_count * sizeof(Chunk), kChunkAlignment));
  std::memset(static_cast<void*>(fresh), 0, new_count * sizeof(Chunk));  // Every tag empty, every count 0.
  Chunk* const old = chunks_;
  chunks_ = fresh;
  chunk_count_ = new_count;
  chunk_bits_ = old_count == 0 ? 0 : chunk_bits_ + 1;
  for (size_t chunk = 0; chunk < old_count; ++chunk) {
    const Chunk& c = old[chunk];
    for (int slot = 0; slot < kSlots; ++slot) {
      if (c.tags[slot] != 0) Place(c.refs[slot], hash_of(c.refs[slot]));
    }
  }
  if (old != nullptr) ::operator delete(old, kChunkAlignment);
}

}  // namespace lawn
