// RETURN_IF_ERROR / ASSIGN_OR_RETURN: Debian's Abseil 20220623 ships Status/StatusOr but not these macros.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LAWN_CONCAT_INNER(a, b) a##b
#define LAWN_CONCAT(a, b) LAWN_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    ::absl::Status lawn_status_ = (expr);           \
    if (!lawn_status_.ok()) return lawn_status_;    \
  } while (false)

// ASSIGN_OR_RETURN(auto x, StatusOrExpr()): declares/assigns `lhs` from the value or returns the status.
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(LAWN_CONCAT(lawn_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
