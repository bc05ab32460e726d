// The audit log: one line (identity, method, namespace, outcome) per admin call and per denied call, at
// most kBurst lines at once and kPerSecond on average, so a flood of denials cannot flood the log; lines over
// the budget are counted and the next line written says how many were dropped.
//
// Thread-safety: Record may be called from any thread.
#pragma once

#include <string_view>

namespace lawn {

class AuditLog {
 public:
  static constexpr double kPerSecond = 20;
  static constexpr double kBurst = 100;

  static void Record(std::string_view identity, std::string_view method, std::string_view ns,
                     std::string_view outcome);
};

}  // namespace lawn
