#include "server/stream_registry.h"

#include "server/subscribe_reactor.h"

namespace lawn {

void StreamRegistry::Add(SubscribeReactor* r) {
  absl::MutexLock lock(&mu_);
  live_.insert(r);
}

void StreamRegistry::Remove(SubscribeReactor* r) {
  absl::MutexLock lock(&mu_);
  live_.erase(r);
}

void StreamRegistry::CloseAll(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  closing_ = status;
  // Held across Close: a reactor cannot reach OnDone (which takes mu_ to Remove itself) meanwhile.
  for (SubscribeReactor* r : live_) r->Close(status);
}

void StreamRegistry::ForEach(absl::FunctionRef<void(SubscribeReactor*)> f) {
  absl::MutexLock lock(&mu_);
  for (SubscribeReactor* r : live_) f(r);
}

size_t StreamRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return live_.size();
}

grpc::Status StreamRegistry::closing_status() const {
  absl::MutexLock lock(&mu_);
  return closing_;
}

}  // namespace lawn
