#include "local_jobs.h"

#include <cstdint>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "wavepool/api/manifest.h"
#include "wavepool/base/atomic_file.h"

namespace wavepool::local {

bool LocalJob::background() const { return job.spec.role == api::Role::kBackground; }

namespace {

// Manifests are a few KB: a file far larger is not one, and is not read whole.
constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{64} << 20;

absl::Status InFile(const std::string& file, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(file, ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::vector<LocalJob>> LoadJobs(const std::vector<std::string>& files,
                                               const std::string& device) {
  std::vector<LocalJob> jobs;
  std::set<std::string> keys;
  for (const std::string& file : files) {
    // A regular file of a bounded size: a FIFO would block the run, /dev/zero never ends.
    absl::StatusOr<std::string> text = ReadWholeFile(file, "manifest", kMaxManifestBytes);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<api::TrainingJob>> loaded = api::LoadTrainingJobs(*text);
    if (!loaded.ok()) return InFile(file, loaded.status());
    for (api::TrainingJob& job : *loaded) {
      LocalJob local;
      local.manifest = file;
      local.key = absl::StrCat(job.metadata.namespace_, "/", job.metadata.name);
      local.slug = absl::StrCat(job.metadata.namespace_, "-", job.metadata.name);
      if (!keys.insert(local.key).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": TrainingJob ", local.key, " is given twice"));
      }
      if (job.spec.model.layer_table.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            file, ": TrainingJob ", local.key,
            ": spec.model.layerTable: local mode trains built-in models only (a layer table "
            "lives in a ConfigMap of a cluster)"));
      }
      controller::PlanInputs inputs;
      inputs.device = device;
      absl::StatusOr<controller::JobPlan> plan = controller::PlanJob(job, inputs);
      if (!plan.ok()) {
        return InFile(
            file, absl::Status(plan.status().code(), absl::StrCat("TrainingJob ", local.key, ": ",
                                                                  plan.status().message())));
      }
      local.plan = *std::move(plan);
      local.job = std::move(job);
      jobs.push_back(std::move(local));
    }
  }
  return jobs;
}

absl::Status AssignGpus(std::vector<LocalJob>& jobs, std::uint32_t* gpus) {
  std::uint32_t needed = 0;
  for (const LocalJob& job : jobs) {
    if (!job.background()) needed += static_cast<std::uint32_t>(job.plan.plan.gpus);
  }
  if (*gpus == 0) *gpus = std::max<std::uint32_t>(needed, 1);
  std::uint32_t next = 0;
  for (LocalJob& job : jobs) {
    if (job.background()) continue;
    if (next + job.plan.plan.gpus > *gpus) {
      return absl::FailedPreconditionError(
          absl::StrCat("TrainingJob ", job.key, " needs ", job.plan.plan.gpus,
                       " GPUs; the foreground jobs "
                       "need ",
                       needed, " and the local node has ", *gpus, " (--gpus)"));
    }
    for (std::int64_t r = 0; r < job.plan.plan.gpus; ++r) job.gpus.push_back(next++);
  }
  const std::uint32_t shared = next == 0 ? *gpus : next;  // GPUs a background job may share
  std::uint32_t turn = 0;
  for (LocalJob& job : jobs) {
    if (job.background()) job.gpus = {turn++ % shared};
  }
  return absl::OkStatus();
}

}  // namespace wavepool::local
