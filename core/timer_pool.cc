#include "core/timer_pool.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace lawn {

namespace {

// Stores id and payload into `r` (inline or in a new heap block) and sets their sizes. Returns the bytes
// allocated on the heap. REQUIRES: r holds no heap block.
size_t StoreBytes(TimerRecord& r, std::string_view id, std::string_view payload) {
  const size_t size = id.size() + payload.size();
  if (id.size() > TimerRecord::kMaxIdBytes || payload.size() > UINT32_MAX) std::abort();  // Callers check.
  char* dst = r.storage;
  size_t heap = 0;
  if (size > TimerRecord::kInlineBytes) {
    // malloc, not new[]: plain bytes.
    dst = static_cast<char*>(std::malloc(size));
    if (dst == nullptr) std::abort();
    r.set_blob(dst);
    heap = size;
  }
  if (!id.empty()) std::memmove(dst, id.data(), id.size());
  if (!payload.empty()) std::memmove(dst + id.size(), payload.data(), payload.size());
  r.id_size = static_cast<uint16_t>(id.size());
  r.payload_size = static_cast<uint32_t>(payload.size());
  return heap;
}

size_t HeapBytes(const TimerRecord& r) { return r.is_inline() ? 0 : r.id_size + r.payload_size; }

}  // namespace

TimerPool::~TimerPool() {
  // Free records have sizes 0 (inline): only live out-of-line blocks are freed.
  for (uint32_t i = 0; i < used_; ++i) {
    if (!(*this)[i].is_inline()) std::free((*this)[i].blob());
  }
}

TimerRef TimerPool::Allocate(std::string_view id, std::string_view payload, uint32_t id_hash, uint16_t group) {
  TimerRef ref;
  if (free_head_ != kNoTimer) {
    ref = free_head_;
    free_head_ = (*this)[ref].next;
  } else {
    if (used_ == kNoTimer) std::abort();  // 2^32 - 1 timers in one shard: far beyond any memory budget.
    ref = used_++;
    if ((ref >> kChunkBits) == chunks_.size()) chunks_.push_back(std::make_unique<TimerRecord[]>(kChunkSize));
  }
  TimerRecord& r = (*this)[ref];
  r = TimerRecord{};
  blob_bytes_ += StoreBytes(r, id, payload);
  r.id_hash = id_hash;
  r.group = group;
  ++live_;
  return ref;
}

void TimerPool::SetPayload(TimerRef ref, std::string_view payload) {
  TimerRecord& r = (*this)[ref];
  if (payload == r.payload()) return;
  // Copy the id out first: the old bytes may be inline in the very record being rewritten.
  const std::string id(r.id());
  const bool had_heap = !r.is_inline();
  char* old_blob = had_heap ? r.blob() : nullptr;
  blob_bytes_ -= HeapBytes(r);
  blob_bytes_ += StoreBytes(r, id, payload);
  if (had_heap) std::free(old_blob);
}

void TimerPool::Free(TimerRef ref) {
  TimerRecord& r = (*this)[ref];
  blob_bytes_ -= HeapBytes(r);
  if (!r.is_inline()) std::free(r.blob());
  r = TimerRecord{};
  r.next = free_head_;
  free_head_ = ref;
  --live_;
}

size_t TimerPool::MemoryBytes() const {
  return chunks_.size() * kChunkSize * sizeof(TimerRecord) + chunks_.capacity() * sizeof(chunks_[0]) +
         blob_bytes_;
}

}  // namespace lawn
