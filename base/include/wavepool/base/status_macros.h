// Early returns for absl::Status and absl::StatusOr, so that a function that calls several
// fallible steps reads as the steps:
//
//   absl::StatusOr<Plan> LoadPlan(const std::string& path) {
//     WAVEPOOL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     WAVEPOOL_ASSIGN_OR_RETURN(Plan plan, ParsePlan(text));
//     WAVEPOOL_RETURN_IF_ERROR(Validate(plan));
//     return plan;
//   }
//
// The status returned is the callee's, unchanged (code, message and payloads). A caller that
// adds context to it ("while reading <path>: ...") writes that return out instead: these macros
// never annotate. They are prefixed with WAVEPOOL_ because the unprefixed names are common in
// other codebases' headers (older protobuf's generated code, many Google-derived projects), which a
// LibTorch or gRPC translation unit may include next to ours, and because the api's validators
// already used WAVEPOOL_RETURN_IF_ERROR, which this header now defines for everyone.
#ifndef WAVEPOOL_BASE_STATUS_MACROS_H_
#define WAVEPOOL_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// WAVEPOOL_RETURN_IF_ERROR(expr): evaluates `expr` (an absl::Status) once and, when it is not OK,
// returns it from the enclosing function.
// REQUIRES: the enclosing function returns absl::Status or absl::StatusOr<T>.
#define WAVEPOOL_RETURN_IF_ERROR(expr)                      \
  do {                                                      \
    ::absl::Status wavepool_status_macros_status_ = (expr); \
    if (!wavepool_status_macros_status_.ok()) {             \
      return wavepool_status_macros_status_;                \
    }                                                       \
  } while (false)

// WAVEPOOL_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (an absl::StatusOr<T>) once; when it is
// not OK returns its status from the enclosing function, otherwise moves its value into `lhs`,
// which is a declaration (`auto plan`, `const Plan& plan`) or an existing lvalue (`plan_`).
// The StatusOr lives, moved from, until the end of the enclosing scope, so `const T& lhs` is
// safe.
// It expands to several statements: under an `if` or a loop, give it braces.
// REQUIRES: the enclosing function returns absl::Status or absl::StatusOr<U>; `lhs` has no
//   unparenthesised comma (name the type with an alias: `using Pair = std::pair<A, B>`), and
//   `expr` has none outside parentheses (write `(Make<A, B>())`); at most one use per source line
//   (the temporary's name is made from __LINE__).
#define WAVEPOOL_ASSIGN_OR_RETURN(lhs, expr) \
  WAVEPOOL_STATUS_MACROS_ASSIGN_OR_RETURN_(  \
      WAVEPOOL_STATUS_MACROS_CONCAT_(wavepool_status_macros_or_, __LINE__), lhs, expr)

// Implementation details of the macros above.
#define WAVEPOOL_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define WAVEPOOL_STATUS_MACROS_CONCAT_(a, b) WAVEPOOL_STATUS_MACROS_CONCAT_INNER_(a, b)
#define WAVEPOOL_STATUS_MACROS_ASSIGN_OR_RETURN_(status_or, lhs, expr) \
  auto status_or = (expr);                                             \
  if (!status_or.ok()) return std::move(status_or).status();           \
  lhs = *std::move(status_or)

#endif  // WAVEPOOL_BASE_STATUS_MACROS_H_
