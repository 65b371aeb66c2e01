// The headless Service through which a gang's pods find rank 0's store (reconcile_context.h;
// docs/controller.md "Rendezvous").
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

using nlohmann::json;

}  // namespace

absl::Status EnsureGangService(ReconcileContext& ctx) {
  const std::int64_t generation = ctx.job.status.gang_generation;
  const std::string name = GangServiceName(ctx.name(), generation);
  for (const kube::Service& service : ctx.reader.ServicesOfJob(ctx.ns(), ctx.name())) {
    if (service.metadata.name != name) continue;
    if (IsControlledBy(service.metadata, ctx.job.metadata.uid)) return absl::OkStatus();
    // Never adopted (DESIGN.md "Trust": the controller touches only what the job owns).
    return absl::FailedPreconditionError(absl::StrCat("Service ", ctx.ns(), "/", name));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(json service, BuildGangService(ctx.job, generation));
  WAVEPOOL_RETURN_IF_ERROR(FenceOnJob(ctx));
  absl::StatusOr<json> created = ctx.writer.CreateService(service);
  if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
    return created.status();
  }
  return absl::OkStatus();
}

absl::Status DeleteGangServices(ReconcileContext& ctx, std::optional<std::int64_t> keep) {
  for (const kube::Service& service : ctx.reader.ServicesOfJob(ctx.ns(), ctx.name())) {
    if (keep.has_value() && GangGenerationOf(service.metadata) == *keep) continue;
    if (!IsControlledBy(service.metadata, ctx.job.metadata.uid)) continue;
    const absl::Status s =
        ctx.writer.DeleteService(ctx.ns(), service.metadata.name, service.metadata.uid);
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound) return s;
  }
  return absl::OkStatus();
}

}  // namespace wavepool::controller::internal
