// Helpers shared by the builders of the objects a TrainingJob owns (owned_objects.h).
#ifndef WAVEPOOL_CONTROLLER_SRC_OWNED_OBJECTS_OWNED_OBJECTS_INTERNAL_H_
#define WAVEPOOL_CONTROLLER_SRC_OWNED_OBJECTS_OWNED_OBJECTS_INTERNAL_H_

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/training_job.h"

namespace wavepool::controller::internal {

// InvalidArgument naming metadata.name, metadata.namespace or metadata.uid when one is empty:
// an owned object needs all three (its name, its namespace, its ownerReference).
absl::Status CheckJobIdentity(const api::TrainingJob& job);

// metadata of an object owned by `job`: name, namespace, the app/managed-by/job labels, the
// job-name annotation and the controller ownerReference.
nlohmann::json OwnedMetadata(const api::TrainingJob& job, const std::string& name);

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_OWNED_OBJECTS_OWNED_OBJECTS_INTERNAL_H_
