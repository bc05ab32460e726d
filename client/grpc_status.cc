#include "client/grpc_status.h"

#include <string>

namespace lawn {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  // 1..16 are the canonical codes both libraries define; OK (0) was handled above.
  const absl::StatusCode absl_code =
      code >= 1 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown;
  return absl::Status(absl_code, status.error_message());
}

}  // namespace lawn
