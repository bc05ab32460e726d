// ExpiryProbe: one Subscribe stream of lawn_load that measures every delivery the moment it is read and acks
// it at once. Pending acks go out together in the next `ack` message, written as soon as the previous write
// completed (one write in flight). Opened with open.max_batch (0: one expiration per response, the original
// shape; N > 0: up to N per response).
//
// Per first delivery it records receive wall time minus Expiration.timer.deadline (lateness; the wall clock
// of this process against the deadline lawnd reports), and fired_at minus deadline (lawnd's own firing
// lateness). A receive before the deadline is counted as `early`: lawnd promises never to fire early.
//
// Thread-safety: the reactions run on gRPC's callback threads; the Wait* and Stop calls block the calling
// thread. The result fields are read only after Stop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

class ExpiryProbe final : public grpc::ClientBidiReactor<v1::SubscribeRequest, v1::SubscribeResponse> {
 public:
  // Starts the stream on `stub` (not owned; outlives the probe). The probe must be destroyed only after
  // Stop has returned.
  ExpiryProbe(v1::TimerService::Stub* stub, const std::string& ns, uint32_t max_in_flight, uint32_t max_batch);

  // Blocks until `open` is written or the stream ended; true if it was written.
  bool WaitOpen();
  // Blocks until `n` first deliveries arrived, the stream ended, or `deadline`; returns the count so far.
  uint64_t WaitReceived(uint64_t n, absl::Time deadline);
  // Blocks until `n` acks have been written (their writes completed), the stream ended, or `deadline`;
  // returns the count so far.
  uint64_t WaitAcksWritten(uint64_t n, absl::Time deadline);
  // Half-closes (after the pending acks) and waits for lawnd to end the stream; cancels it after 5 s.
  grpc::Status Stop();

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

  // Results; read after Stop.
  std::vector<double> lateness_us_, fire_lateness_us_;
  uint64_t received_ = 0, early_ = 0, fired_early_ = 0, late_flagged_ = 0, redeliveries_ = 0;
  uint64_t responses_ = 0;     // SubscribeResponse messages read.
  uint64_t ack_messages_ = 0;  // `ack` messages written.
  int64_t first_receive_ns_ = 0, last_receive_ns_ = 0;

 private:
  // Records one expiration read at wall time `now`; queues its ack.
  void Record(const v1::Expiration& e, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the pending acks into request_ if no write is under way; true if the caller must StartWrite.
  bool PrepareWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::ClientContext context_;
  v1::SubscribeRequest request_;    // Owned by the write under way while writing_.
  v1::SubscribeResponse response_;  // Owned by the read under way.
  absl::Mutex mu_;
  std::vector<uint64_t> acks_ ABSL_GUARDED_BY(mu_);
  uint64_t acks_in_write_ ABSL_GUARDED_BY(mu_) = 0;  // Acks in the write under way.
  uint64_t acks_written_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool opened_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t target_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
