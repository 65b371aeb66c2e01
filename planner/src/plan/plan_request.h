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

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_SRC_PLAN_PLAN_REQUEST_H_
