// StreamRegistry: the live Subscribe streams, so a drain can end them all, and the status new streams are
// refused with once it has.
//
// Thread-safety: thread-safe. CloseAll holds the registry's mutex while it closes each stream, so no stream
// can finish (and remove itself) meanwhile. Lock order: the registry's mutex, then a stream's.
#pragma once

#include <cstddef>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

class SubscribeReactor;

// The live Subscribe streams, so a drain can end them all.
class StreamRegistry {
 public:
  void Add(SubscribeReactor* r);
  void Remove(SubscribeReactor* r);
  // Ends every stream with `status`; later streams are refused with it too.
  void CloseAll(const grpc::Status& status);
  // Calls `f` for every live stream, with the registry's mutex held (so none finishes meanwhile).
  void ForEach(absl::FunctionRef<void(SubscribeReactor*)> f);
  size_t size() const;
  // Status new streams are refused with; OK while open.
  grpc::Status closing_status() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<SubscribeReactor*> live_ ABSL_GUARDED_BY(mu_);
  grpc::Status closing_ ABSL_GUARDED_BY(mu_) = grpc::Status::OK;
};

}  // namespace lawn
