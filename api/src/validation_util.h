// Small checks every validator uses; each returns OK or the error "<path>: <problem>" with the
// value it got, so messages read the same across types.
#ifndef WAVEPOOL_API_SRC_VALIDATION_UTIL_H_
#define WAVEPOOL_API_SRC_VALIDATION_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "wavepool/api/field_path.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/base/status_macros.h"  // WAVEPOOL_RETURN_IF_ERROR, for every validator

namespace wavepool::api {

// "must be >= 1, got 0"
absl::Status CheckAtLeast(const FieldPath& path, std::int64_t value, std::int64_t minimum);
// "must be >= 1.0, got 0.5"; also rejects NaN and infinities.
absl::Status CheckAtLeast(const FieldPath& path, double value, double minimum);
// "must be > 0.0, got 0.0"
absl::Status CheckPositive(const FieldPath& path, double value);
// "must be at most 3.40282e+38 (the largest float32 ...), got 1e+300": a learning rate, which
// the workers' optimizers apply to float32 tensors and refuse when it does not fit one; without
// this check it would surface only after placement, as every worker failing its first step.
absl::Status CheckLearningRateFitsFloat32(const FieldPath& path, double value);
// "must be in [0.0, 1.0], got 1.5"
absl::Status CheckInClosedRange(const FieldPath& path, double value, double low, double high);
// "required"
absl::Status CheckNonEmpty(const FieldPath& path, std::string_view value);
// "must be an RFC 3339 time such as ..., got ..." unless empty and !required.
absl::Status CheckRfc3339(const FieldPath& path, std::string_view value, bool required);
// "<kind> <name>", the context of a validation error, with an over-long name cut short.
std::string ObjectContext(std::string_view kind, std::string_view name);

// metadata.name (DNS-1123 subdomain, required) and metadata.namespace (a DNS-1123 label when
// the kind is namespaced and required; empty when cluster-scoped).
absl::Status CheckObjectNames(const ObjectMeta& metadata, bool namespaced);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_SRC_VALIDATION_UTIL_H_
