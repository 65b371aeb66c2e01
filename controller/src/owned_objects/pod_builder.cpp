// One worker pod of a TrainingJob: the user's template with wavepool's parts merged in
// (owned_objects.h, docs/controller.md "Pods").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "owned_objects/owned_objects_internal.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/enums.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;

// The resource the NVIDIA device plugin allocates: asking for it would make the kubelet hand
// the container GPUs of the plugin's choosing, overriding NVIDIA_VISIBLE_DEVICES.
constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// Volumes wavepool adds; a template volume of the same name is replaced.
constexpr std::string_view kAgentVolume = "wavepool-agent";
constexpr std::string_view kMpsVolume = "wavepool-mps";
constexpr std::string_view kMpsShmVolume = "wavepool-mps-shm";
constexpr std::string_view kPlanVolume = "wavepool-plan";
constexpr std::string_view kCheckpointVolume = "wavepool-checkpoint";

struct Inputs {
  const api::TrainingJob& job;
  const api::Plan& plan;
  const PodAssignment& assignment;
  std::int64_t gang_generation;
  const OwnedObjectOptions& options;
  std::string object;  // "TrainingJob <ns>/<name>", for messages.
};

absl::Status Invalid(const Inputs& in, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(in.object, ": ", std::string(field), ": ", std::string(what)));
}

absl::Status CheckAssignment(const Inputs& in) {
  const PodAssignment& a = in.assignment;
  if (!in.job.spec.role.has_value()) return Invalid(in, "spec.role", "required");
  if (in.plan.gpus < 1) {
    return Invalid(in, "plan.gpus", absl::StrCat("must be >= 1, got ", in.plan.gpus));
  }
  if (a.rank < 0 || a.rank >= in.plan.gpus) {
    return Invalid(in, "assignment.rank",
                   absl::StrCat("must be in [0, ", in.plan.gpus, ") (plan.gpus), got ", a.rank));
  }
  if (in.gang_generation < 0) {
    return Invalid(in, "gangGeneration", absl::StrCat("must be >= 0, got ", in.gang_generation));
  }
  if (a.node_name.empty()) return Invalid(in, "assignment.nodeName", "required");
  if (a.gpu_uuids.empty()) {
    return Invalid(in, "assignment.gpuUUIDs", "must not be empty (one GPU UUID per device)");
  }
  for (std::size_t i = 0; i < a.gpu_uuids.size(); ++i) {
    const std::string& uuid = a.gpu_uuids[i];
    if (uuid.empty() || uuid.find_first_of(", ") != std::string::npos) {
      return Invalid(
          in, absl::StrCat("assignment.gpuUUIDs[", i, "]"),
          absl::StrCat("must be a GPU UUID without commas or spaces, got \"", uuid, "\""));
    }
  }
  if (a.gpu_indices.size() != a.gpu_uuids.size()) {
    return Invalid(in, "assignment.gpuIndices",
                   absl::StrCat("must have one index per UUID (", a.gpu_uuids.size(), "), got ",
                                a.gpu_indices.size()));
  }
  for (std::size_t i = 0; i < a.gpu_indices.size(); ++i) {
    if (a.gpu_indices[i] < 0) {
      return Invalid(in, absl::StrCat("assignment.gpuIndices[", i, "]"),
                     absl::StrCat("must be >= 0, got ", a.gpu_indices[i]));
    }
  }
  return absl::OkStatus();
}

// The field at `key` of `object` must be absent, null or of `type`; a null becomes absent.
absl::Status ExpectType(const Inputs& in, json& object, const std::string& key, json::value_t type,
                        std::string_view path) {
  if (!object.contains(key)) return absl::OkStatus();
  if (object[key].is_null()) {
    object.erase(key);
    return absl::OkStatus();
  }
  if (object[key].type() != type) {
    return Invalid(in, path,
                   absl::StrCat("must be ", type == json::value_t::array ? "an array" : "an object",
                                ", got ", object[key].type_name()));
  }
  return absl::OkStatus();
}

// Every entry of the array `list` (when present) must be an object with a string "name".
absl::Status ExpectNamedObjects(const Inputs& in, const json& object, const std::string& key,
                                const std::string& path) {
  if (!object.contains(key)) return absl::OkStatus();
  const json& list = object[key];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object() || !list[i].contains("name") || !list[i]["name"].is_string()) {
      return Invalid(in, absl::StrCat(path, "[", i, "]"),
                     "must be an object with a string \"name\"");
    }
  }
  return absl::OkStatus();
}

// spec.template as a PodTemplateSpec object with well-typed parts wavepool edits.
absl::StatusOr<json> TemplateOf(const Inputs& in) {
  json tmpl = in.job.spec.pod_template.is_null() ? json::object() : in.job.spec.pod_template;
  if (!tmpl.is_object()) {
    return Invalid(in, "spec.template", absl::StrCat("must be an object, got ", tmpl.type_name()));
  }
  const auto obj = json::value_t::object;
  const auto arr = json::value_t::array;
  for (absl::Status s : {ExpectType(in, tmpl, "metadata", obj, "spec.template.metadata"),
                         ExpectType(in, tmpl, "spec", obj, "spec.template.spec")}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  json& meta = tmpl["metadata"];
  if (meta.is_null()) meta = json::object();
  json& spec = tmpl["spec"];
  if (spec.is_null()) spec = json::object();
  for (absl::Status s :
       {ExpectType(in, meta, "labels", obj, "spec.template.metadata.labels"),
        ExpectType(in, meta, "annotations", obj, "spec.template.metadata.annotations"),
        ExpectType(in, spec, "containers", arr, "spec.template.spec.containers"),
        ExpectType(in, spec, "volumes", arr, "spec.template.spec.volumes")}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  if (!spec.contains("containers")) spec["containers"] = json::array();
  for (std::size_t i = 0; i < spec["containers"].size(); ++i) {
    json& c = spec["containers"][i];
    const std::string path = absl::StrCat("spec.template.spec.containers[", i, "]");
    if (!c.is_object()) return Invalid(in, path, "must be an object");
    for (absl::Status s : {ExpectType(in, c, "env", arr, path + ".env"),
                           ExpectType(in, c, "volumeMounts", arr, path + ".volumeMounts"),
                           ExpectType(in, c, "resources", obj, path + ".resources"),
                           ExpectNamedObjects(in, c, "env", path + ".env"),
                           ExpectNamedObjects(in, c, "volumeMounts", path + ".volumeMounts")}) {
      WAVEPOOL_RETURN_IF_ERROR(s);
    }
  }
  WAVEPOOL_RETURN_IF_ERROR(ExpectNamedObjects(in, spec, "volumes", "spec.template.spec.volumes"));
  return tmpl;
}

// GPUs are assigned by UUID; a device-plugin request would pick others (kGpuResource).
absl::Status CheckNoGpuResource(const Inputs& in, const json& containers) {
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const json& resources = containers[i].value("resources", json::object());
    for (const char* kind : {"limits", "requests"}) {
      if (resources.contains(kind) && resources[kind].is_object() &&
          resources[kind].contains(std::string(kGpuResource))) {
        return Invalid(in,
                       absl::StrCat("spec.template.spec.containers[", i, "].resources.", kind, "[",
                                    std::string(kGpuResource), "]"),
                       "must not be set: wavepool assigns GPUs by UUID (NVIDIA_VISIBLE_DEVICES)");
      }
    }
  }
  return absl::OkStatus();
}

// The index of the container named "worker", else 0; appends one when there is none.
std::size_t WorkerContainer(json& containers) {
  for (std::size_t i = 0; i < containers.size(); ++i) {
    if (containers[i].value("name", "") == kWorkerContainerName) return i;
  }
  if (containers.empty()) containers.push_back({{"name", std::string(kWorkerContainerName)}});
  return 0;
}

std::string MpsDirectory(const OwnedObjectOptions& options) {
  return options.mps_directory.empty() ? absl::StrCat(options.agent_directory, "/mps")
                                       : options.mps_directory;
}

// An MPS server and its clients share memory through files in /dev/shm, so the agent's
// DaemonSet mounts this host directory as the daemons' /dev/shm and every worker mounts it as its
// own (NVIDIA's device plugin and DRA driver do the same); a pod's /dev/shm is otherwise private.
std::string MpsShmDirectory(const OwnedObjectOptions& options) {
  return absl::StrCat(MpsDirectory(options), "/shm");
}

bool IsBackground(const Inputs& in) { return in.job.spec.role == api::Role::kBackground; }

json EnvVar(std::string_view name, const std::string& value) {
  return {{"name", std::string(name)}, {"value", value}};
}

// The downward API: the variable holds the pod's own metadata.<field>.
json FieldRefEnvVar(std::string_view name, std::string_view field) {
  return {{"name", std::string(name)},
          {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", std::string(field)}}}}}};
}

// Ours come first so that the user's env may refer to them as $(WAVEPOOL_RANK).
json WavepoolEnv(const Inputs& in) {
  const PodAssignment& a = in.assignment;
  json env = json::array({
      EnvVar("WAVEPOOL_JOB", in.job.metadata.name),
      EnvVar("WAVEPOOL_NAMESPACE", in.job.metadata.namespace_),
      // The pod's own name, which the worker registers with the agent under: HOSTNAME is the
      // pod's hostname, which differs from its name for a job name with dots.
      FieldRefEnvVar("WAVEPOOL_POD_NAME", "metadata.name"),
      EnvVar("WAVEPOOL_ROLE", std::string(api::ToString(*in.job.spec.role))),
      EnvVar("WAVEPOOL_RANK", absl::StrCat(a.rank)),
      EnvVar("WAVEPOOL_WORLD_SIZE", absl::StrCat(in.plan.gpus)),
      EnvVar("WAVEPOOL_GANG_GENERATION", absl::StrCat(in.gang_generation)),
      // Rank 0's c10d TCP store, found through the gang's headless Service.
      EnvVar("WAVEPOOL_STORE", RendezvousStore(in.job, in.gang_generation)),
      EnvVar("WAVEPOOL_PLAN", std::string(kPlanPath)),
      EnvVar("WAVEPOOL_AGENT_DIR", in.options.agent_directory),
      EnvVar("NVIDIA_VISIBLE_DEVICES", absl::StrJoin(a.gpu_uuids, ",")),
      // The node-local index of the first GPU: the agent's launch gate and MPS pipe are per
      // index, and the worker names its device to the agent by it.
      EnvVar("WAVEPOOL_GPU_INDEX", absl::StrCat(a.gpu_indices.front())),
      // The agent runs one MPS control daemon per GPU (docs/agent.md), each started with
      // CUDA_VISIBLE_DEVICES set to its GPU alone. A CUDA process reads one
      // CUDA_MPS_PIPE_DIRECTORY at initialisation and connects to that one daemon, which only
      // exposes its own GPU: no setting makes one process a client of several daemons. So a
      // process is an MPS client of its first GPU's daemon; every index's pipe stays reachable
      // under the mounted MPS directory for a launcher that starts one process per GPU and
      // sets each its own pipe. Placement gives each rank one GPU, so this is the common case.
      EnvVar("CUDA_MPS_PIPE_DIRECTORY",
             absl::StrCat(MpsDirectory(in.options), "/", a.gpu_indices.front(), "/pipe")),
      // DESIGN.md "GPU sharing": background clients below normal, foreground at normal.
      EnvVar("CUDA_MPS_CLIENT_PRIORITY", IsBackground(in) ? "1" : "0"),
  });
  if (!IsBackground(in)) {
    // The SLO the worker reports its slowdown against (the agent enforces it).
    env.push_back(
        EnvVar("WAVEPOOL_MAX_FOREGROUND_SLOWDOWN",
               absl::StrFormat("%.6g", in.job.spec.collocation.max_foreground_slowdown.value_or(
                                           api::kDefaultMaxForegroundSlowdown))));
  }
  if (in.job.spec.checkpoint.path.has_value()) {
    env.push_back(EnvVar("WAVEPOOL_CHECKPOINT_PATH", *in.job.spec.checkpoint.path));
  }
  return env;
}

json HostPathVolume(std::string_view name, const std::string& path) {
  return {{"name", std::string(name)},
          {"hostPath", {{"path", path}, {"type", "DirectoryOrCreate"}}}};
}

json Mount(std::string_view name, const std::string& path, bool read_only) {
  json mount = {{"name", std::string(name)}, {"mountPath", path}};
  if (read_only) mount["readOnly"] = true;
  return mount;
}

// Whether one of `mounts` holds `path` (the user brought a volume for checkpoints).
bool MountCovers(const json& mounts, const std::string& path) {
  for (const json& m : mounts) {
    std::string mount_path = m.value("mountPath", "");
    while (mount_path.size() > 1 && mount_path.back() == '/') mount_path.pop_back();
    if (mount_path.empty()) continue;
    if (path == mount_path || path.rfind(mount_path + "/", 0) == 0) {
      return true;
    }
  }
  return false;
}

// `ours` followed by the user's entries whose `key` (and, for mounts, mountPath) ours lack.
json MergeList(const json& ours, const json& user, const char* key, const char* second_key) {
  std::set<std::string> taken;  // Names as is; paths behind "\n", which no name contains.
  for (const json& item : ours) {
    taken.insert(item.value(key, ""));
    if (second_key != nullptr) taken.insert(absl::StrCat("\n", item.value(second_key, "")));
  }
  json merged = ours;
  for (const json& item : user) {
    const bool clash =
        item.is_object() &&
        (taken.count(item.value(key, "")) > 0 ||
         (second_key != nullptr && taken.count(absl::StrCat("\n", item.value(second_key, "")))));
    if (!clash) merged.push_back(item);
  }
  return merged;
}

// Adds wavepool's volumes to spec and its mounts and env to the worker container.
void MergeWorker(const Inputs& in, json& spec, json& worker) {
  const OwnedObjectOptions& o = in.options;
  json volumes = json::array({
      HostPathVolume(kAgentVolume, o.agent_directory),
      HostPathVolume(kMpsVolume, MpsDirectory(o)),
      HostPathVolume(kMpsShmVolume, MpsShmDirectory(o)),
      {{"name", std::string(kPlanVolume)},
       {"configMap",
        {{"name", PlanConfigMapName(in.job.metadata.name)},
         {"items",
          json::array({{{"key", std::string(kPlanKey)}, {"path", std::string(kPlanKey)}}})}}}},
  });
  json mounts = json::array({Mount(kAgentVolume, o.agent_directory, false),
                             Mount(kMpsVolume, MpsDirectory(o), false),
                             Mount(kMpsShmVolume, "/dev/shm", false),
                             Mount(kPlanVolume, std::string(kPlanMountPath), true)});
  const json user_mounts = worker.value("volumeMounts", json::array());
  // The user's mounts that survive the merge (those not clashing with ours).
  json kept_user_mounts = MergeList(mounts, user_mounts, "name", "mountPath");
  kept_user_mounts.erase(kept_user_mounts.begin(),
                         kept_user_mounts.begin() + static_cast<std::ptrdiff_t>(mounts.size()));
  const std::optional<std::string>& checkpoint = in.job.spec.checkpoint.path;
  // A path that is not absolute (an object-store URL) needs no volume.
  if (checkpoint.has_value() && !checkpoint->empty() && checkpoint->front() == '/' &&
      !MountCovers(kept_user_mounts, *checkpoint)) {
    volumes.push_back(HostPathVolume(
        kCheckpointVolume, absl::StrCat(o.checkpoint_host_root, "/", in.job.metadata.namespace_,
                                        "/", in.job.metadata.name)));
    mounts.push_back(Mount(kCheckpointVolume, *checkpoint, false));
  }
  spec["volumes"] = MergeList(volumes, spec.value("volumes", json::array()), "name", nullptr);
  worker["volumeMounts"] = MergeList(mounts, user_mounts, "name", "mountPath");
  worker["env"] = MergeList(WavepoolEnv(in), worker.value("env", json::array()), "name", nullptr);
}

// The agent's socket is mode 0660 in its group: the worker joins that group whatever user it runs
// as. The template's own supplementary groups are kept.
void AddSocketGroup(std::int64_t gid, json& spec) {
  if (gid < 0) return;
  json& context = spec["securityContext"];
  if (!context.is_object()) context = json::object();
  json& groups = context["supplementalGroups"];
  if (!groups.is_array()) groups = json::array();
  for (const json& g : groups) {
    if (g.is_number_integer() && g.get<std::int64_t>() == gid) return;
  }
  groups.push_back(gid);
}

// spec fields wavepool decides: binding, restarts, the gang's DNS names, the agent's socket group,
// background priority and grace period.
void SetSpecFields(const Inputs& in, json& spec) {
  spec["nodeName"] = in.assignment.node_name;  // Bound here: the GPUs are chosen on this node.
  spec["restartPolicy"] = "Never";             // The controller restarts whole gangs.
  // <hostname>.<subdomain>.<namespace>.svc resolves to this pod through the gang's headless
  // Service (BuildGangService), which is how the ranks find rank 0's store.
  spec["hostname"] = PodHostname(in.job.metadata.name, in.gang_generation, in.assignment.rank);
  spec["subdomain"] = GangServiceName(in.job.metadata.name, in.gang_generation);
  AddSocketGroup(in.options.agent_socket_gid, spec);
  if (!IsBackground(in)) return;
  if (!in.options.background_priority_class.empty()) {
    spec["priorityClassName"] = in.options.background_priority_class;
  }
  // A background pod checkpoints on SIGTERM before it exits (preemption).
  std::int64_t grace = in.options.background_termination_grace_seconds;
  if (spec.contains("terminationGracePeriodSeconds") &&
      spec["terminationGracePeriodSeconds"].is_number_integer()) {
    grace = std::max(grace, spec["terminationGracePeriodSeconds"].get<std::int64_t>());
  }
  spec["terminationGracePeriodSeconds"] = grace;
}

// The template's labels or annotations without the controller's keys (IsControllerMetadataKey):
// those on a pod must be exactly the ones BuildPod writes, or a template could, say, mark its own
// pods preempted by another job or give a background pod a foreground's annotations.
json WithoutControllerKeys(json entries) {
  for (auto it = entries.begin(); it != entries.end();) {
    it = IsControllerMetadataKey(it.key()) ? entries.erase(it) : std::next(it);
  }
  return entries;
}

// The pod's metadata: the template's labels and annotations, ours over them.
json PodMetadata(const Inputs& in, const json& tmpl_meta) {
  json meta = internal::OwnedMetadata(
      in.job, PodName(in.job.metadata.name, in.gang_generation, in.assignment.rank));
  json labels = WithoutControllerKeys(tmpl_meta.value("labels", json::object()));
  labels.update(meta["labels"]);
  labels[std::string(kLabelRole)] = std::string(api::ToString(*in.job.spec.role));
  labels[std::string(kLabelRank)] = absl::StrCat(in.assignment.rank);
  labels[std::string(kLabelGangGeneration)] = absl::StrCat(in.gang_generation);
  json annotations = WithoutControllerKeys(tmpl_meta.value("annotations", json::object()));
  annotations.update(meta["annotations"]);
  annotations[std::string(kAnnotationPlanHash)] = HashJson(api::ToJson(in.plan));
  // What placement needs to count this pod's GPUs from the pod alone (AssignmentFromPod).
  annotations[std::string(kAnnotationGpuUuids)] = absl::StrJoin(in.assignment.gpu_uuids, ",");
  annotations[std::string(kAnnotationMemoryPerGpu)] =
      absl::StrCat(in.plan.predictions.memory_per_gpu_bytes);
  if (!IsBackground(in)) {
    const api::CollocationSpec& c = in.job.spec.collocation;
    annotations[std::string(kAnnotationIdleFraction)] =
        absl::StrFormat("%.6g", IdleFraction(in.plan.predictions, in.plan.gpus));
    annotations[std::string(kAnnotationAllowBackground)] =
        c.allow_background.value_or(api::kDefaultAllowBackground) ? "true" : "false";
    annotations[std::string(kAnnotationMaxSlowdown)] = absl::StrFormat(
        "%.6g", c.max_foreground_slowdown.value_or(api::kDefaultMaxForegroundSlowdown));
  }
  meta["labels"] = labels;
  meta["annotations"] = annotations;
  return meta;
}

absl::StatusOr<json> BuildPodOrThrow(const api::TrainingJob& job, const api::Plan& plan,
                                     const PodAssignment& assignment, std::int64_t gang_generation,
                                     const OwnedObjectOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(internal::CheckJobIdentity(job));
  const Inputs in{job,        plan,
                  assignment, gang_generation,
                  options,    absl::StrCat("TrainingJob ", api::NamespacedName(job.metadata))};
  WAVEPOOL_RETURN_IF_ERROR(CheckAssignment(in));
  WAVEPOOL_ASSIGN_OR_RETURN(json tmpl, TemplateOf(in));
  json spec = tmpl["spec"];
  WAVEPOOL_RETURN_IF_ERROR(CheckNoGpuResource(in, spec["containers"]));
  const std::size_t index = WorkerContainer(spec["containers"]);
  json& worker = spec["containers"][index];
  if (worker.value("image", "").empty()) {
    if (options.default_image.empty()) {
      return Invalid(in, absl::StrCat("spec.template.spec.containers[", index, "].image"),
                     "required (the controller has no default image)");
    }
    worker["image"] = options.default_image;
  }
  MergeWorker(in, spec, worker);
  SetSpecFields(in, spec);
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", PodMetadata(in, tmpl["metadata"])},
              {"spec", spec}};
  pod["metadata"]["annotations"][std::string(kAnnotationTemplateHash)] = HashJson(pod);
  return pod;
}

}  // namespace

absl::StatusOr<nlohmann::json> BuildPod(const api::TrainingJob& job, const api::Plan& plan,
                                        const PodAssignment& assignment,
                                        std::int64_t gang_generation,
                                        const OwnedObjectOptions& options) {
  // A template entry of the wrong JSON type (a string where a mount object belongs, a number
  // as a name) surfaces as a nlohmann::json exception while merging.
  try {
    return BuildPodOrThrow(job, plan, assignment, gang_generation, options);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainingJob ", api::NamespacedName(job.metadata),
                     ": spec.template: not a valid PodTemplateSpec: ", e.what()));
  }
}

}  // namespace wavepool::controller
