#include "core/timer_pool.h"

#include <cstdlib>
#include <cstring>

namespace lawn {

namespace {

char* CopyBlob(std::string_view id, std::string_view payload) {
  const size_t size = id.size() + payload.size();
  if (size == 0) return nullptr;
  // malloc, not new[]: blobs are plain bytes and realloc-able by SetPayload.
  char* blob = static_cast<char*>(std::malloc(size));
  if (blob == nullptr) std::abort();
  if (!id.empty()) std::memcpy(blob, id.data(), id.size());
  if (!payload.empty()) std::memcpy(blob + id.size(), payload.data(), payload.size());
  return blob;
}

}  // namespace

TimerPool::~TimerPool() {
  // Free every live blob: a record is live iff its home or blob says so; free records have blob == nullptr.
  for (uint32_t i = 0; i < used_; ++i) std::free((*this)[i].blob);
}

TimerRef TimerPool::Allocate(std::string_view id, std::string_view payload, uint32_t id_hash) {
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
  r.blob = CopyBlob(id, payload);
  r.id_size = static_cast<uint32_t>(id.size());
  r.payload_size = static_cast<uint32_t>(payload.size());
  r.id_hash = id_hash;
  ++live_;
  blob_bytes_ += id.size() + payload.size();
  return ref;
}

void TimerPool::SetPayload(TimerRef ref, std::string_view payload) {
  TimerRecord& r = (*this)[ref];
  if (payload == r.payload()) return;
  char* blob = CopyBlob(r.id(), payload);
  blob_bytes_ = blob_bytes_ - r.payload_size + payload.size();
  std::free(r.blob);
  r.blob = blob;
  r.payload_size = static_cast<uint32_t>(payload.size());
}

void TimerPool::Free(TimerRef ref) {
  TimerRecord& r = (*this)[ref];
  blob_bytes_ -= r.id_size + r.payload_size;
  std::free(r.blob);
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
