// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr (Debian's abseil lacks
// them). Header-only; no state.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CONTEXTD_CONCAT_INNER_(a, b) a##b
#define CONTEXTD_CONCAT_(a, b) CONTEXTD_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function unless it is OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status contextd_status_ = (expr);            \
    if (!contextd_status_.ok()) return contextd_status_; \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise moves the value
// into `lhs` (a declaration such as `auto x` or an existing lvalue).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  CONTEXTD_ASSIGN_OR_RETURN_IMPL_(CONTEXTD_CONCAT_(contextd_statusor_, __LINE__), lhs, rexpr)

#define CONTEXTD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                    \
  if (!tmp.ok()) return std::move(tmp).status();         \
  lhs = std::move(tmp).value()
