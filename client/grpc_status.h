// grpc::Status -> absl::Status for the client library: same canonical code, same message.
//
// Thread-safety: pure function.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace lawn {

// The absl::Status with `status`'s code and message (gRPC and Abseil share the canonical code numbers); OK
// for OK. A code outside the canonical range becomes UNKNOWN.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace lawn
