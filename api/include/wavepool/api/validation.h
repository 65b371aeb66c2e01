// Validation of the wavepool.dev objects: each function returns OK or InvalidArgument for the
// first rule broken, in the format
//   "<Kind> <namespace>/<name>: <field path>: <problem>"
//   e.g. "TrainingJob default/vgg: spec.parallelism.amplificationLimit: must be >= 1.0, got 0.5"
// The status also carries the field path as a payload (FieldPathOf in field_path.h). docs/api.md
// lists every rule. All functions are thread-safe.
#ifndef WAVEPOOL_API_VALIDATION_H_
#define WAVEPOOL_API_VALIDATION_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "wavepool/api/field_path.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/training_job.h"

namespace wavepool::api {

// Spec and status rules of a TrainingJob. Expects a defaulted job (SetDefaults): an unset
// required field such as metadata.namespace is an error, not a default.
absl::Status Validate(const TrainingJob& job);

// GPUNode rules: cluster-scoped name, nodeName, unique GPU indices and UUIDs, ratios in [0, 1],
// memory-wave sizes, tasks.
absl::Status Validate(const GpuNode& node);

// Plan rules: stage indices in order, ranks within [0, gpus) ascending and as many as the
// stage's GPUs, dependencies on earlier stages, transfers and sync groups on existing stages,
// wave counts, batch sizes, non-negative predictions. The context is "Plan <job>".
absl::Status Validate(const Plan& plan);

// metav1.Condition rules for a list at `path`: type (qualified name, unique in the list),
// reason, RFC 3339 lastTransitionTime, observedGeneration >= 0, message length.
absl::Status ValidateConditions(const std::vector<Condition>& conditions, const FieldPath& path);

// Kubernetes name rules.
// DNS-1123 subdomain: at most 253 of [a-z0-9.-], dot-separated labels that start and end with
// a letter or digit (object names).
bool IsDns1123Subdomain(std::string_view name);
// DNS-1123 label: at most 63 of [a-z0-9-], starting and ending with a letter or digit
// (namespaces).
bool IsDns1123Label(std::string_view name);
// A ConfigMap or Secret data key: at most 253 of [-._a-zA-Z0-9], not "." or "..".
bool IsConfigMapKey(std::string_view key);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_VALIDATION_H_
