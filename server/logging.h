// Logging setup for lawnd: spdlog to stderr, as text or one JSON object per line (for a cluster's log
// pipeline).
//
// Thread-safety: call once at start, before other threads log.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace lawn {

// `level`: trace, debug, info, warn, error, critical, off. `format`: text or json. Also routes libprotobuf's
// own log lines (which it would write to stderr) into this logger, at debug.
absl::Status SetupLogging(const std::string& level, const std::string& format);

}  // namespace lawn
