// The headless Service through which a gang's pods find rank 0's store (reconcile_context.h;
// docs/controller.md "Rendezvous").
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "reconcile_context.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

using nlohmann::json;

json Meta(const json& object) {
  return object.is_object() ? object.value("metadata", json::object()) : json::object();
}

}  // namespace

absl::Status EnsureGangService(ReconcileContext& ctx) {
  const std::int64_t generation = ctx.job.status.gang_generation;
  const std::string name = GangServiceName(ctx.name(), generation);
  for (const json& service : ctx.reader.ServicesOfJob(ctx.ns(), ctx.name())) {
    if (Meta(service).value("name", "") != name) continue;
    if (IsControlledBy(service, ctx.job.metadata.uid)) return absl::OkStatus();
    // Never adopted (DESIGN.md "Trust": the controller touches only what the job owns).
    return absl::FailedPreconditionError(absl::StrCat("Service ", ctx.ns(), "/", name));
  }
  absl::StatusOr<json> service = BuildGangService(ctx.job, generation);
  if (!service.ok()) return service.status();
  if (absl::Status s = FenceOnJob(ctx); !s.ok()) return s;
  absl::StatusOr<json> created = ctx.writer.CreateService(*service);
  if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
    return created.status();
  }
  return absl::OkStatus();
}

absl::Status DeleteGangServices(ReconcileContext& ctx, std::optional<std::int64_t> keep) {
  for (const json& service : ctx.reader.ServicesOfJob(ctx.ns(), ctx.name())) {
    if (keep.has_value() && GangGenerationOf(service) == *keep) continue;
    if (!IsControlledBy(service, ctx.job.metadata.uid)) continue;
    const json meta = Meta(service);
    const absl::Status s =
        ctx.writer.DeleteService(ctx.ns(), meta.value("name", ""), meta.value("uid", ""));
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound) return s;
  }
  return absl::OkStatus();
}

}  // namespace wavepool::controller::internal
