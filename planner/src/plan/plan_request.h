// The checks MakePlan runs on a request before planning (planner.h's PlanRequest).
#ifndef WAVEPOOL_PLANNER_SRC_PLAN_PLAN_REQUEST_H_
#define WAVEPOOL_PLANNER_SRC_PLAN_PLAN_REQUEST_H_

#include "absl/status/status.h"
#include "wavepool/planner/planner.h"

namespace wavepool::planner {

// InvalidArgument naming the request's field ("gpus: must be in [1, 65536], got 0", "job: must
// be namespace/name ...") for a value out of range; FailedPrecondition for a global batch
// smaller than the GPUs (every GPU needs at least one sample).
absl::Status ValidateRequest(const PlanRequest& request);

// InvalidArgument naming the model and the global batch when the model's activations at the
// request's global batch and its parameter state pass 1 EiB: the planner's byte counts are 64-bit
// integers, and no cluster holds that much. REQUIRES: ValidateRequest(request) is OK.
absl::Status ValidateJobSize(const ModelGraph& model, const PlanRequest& request);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_SRC_PLAN_PLAN_REQUEST_H_
