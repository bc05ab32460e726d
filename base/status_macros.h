// LAWN_RETURN_IF_ERROR / LAWN_ASSIGN_OR_RETURN: early returns on a non-OK absl::Status or absl::StatusOr.
// Debian's Abseil 20220623 ships Status and StatusOr but not these macros; the LAWN_ prefix keeps them clear
// of any later Abseil or gRPC macro of the same name.
//
// Thread-safety: macros over the caller's own values; nothing shared.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LAWN_CONCAT_INNER(a, b) a##b
#define LAWN_CONCAT(a, b) LAWN_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` (an absl::Status) is not OK.
#define LAWN_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status lawn_status_ = (expr);        \
    if (!lawn_status_.ok()) return lawn_status_; \
  } while (false)

// LAWN_ASSIGN_OR_RETURN(auto x, StatusOrExpr()): declares/assigns `lhs` from the value of `expr` (an
// absl::StatusOr), or returns its status from the enclosing function. Expands to several statements: not for
// the body of an unbraced if/else.
#define LAWN_ASSIGN_OR_RETURN(lhs, expr) \
  LAWN_ASSIGN_OR_RETURN_IMPL(LAWN_CONCAT(lawn_statusor_, __LINE__), lhs, expr)
#define LAWN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
