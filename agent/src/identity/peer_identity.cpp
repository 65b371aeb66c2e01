#include "wavepool/agent/peer_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "wavepool/agent/placement_records.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::agent {
namespace {

// A pod UID as the kubelet writes it: 8-4-4-4-12 lower-case hex digits.
bool IsPodUid(absl::string_view uid) {
  if (uid.size() != 36) return false;
  for (std::size_t i = 0; i < uid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? uid[i] != '-' : !absl::ascii_isxdigit(uid[i]) || absl::ascii_isupper(uid[i])) {
      return false;
    }
  }
  return true;
}

// The UID in one path component after the kubepods one: "pod<uid>" (cgroupfs driver) or
// "<prefix>-pod<uid with _>.slice" (systemd driver). nullopt when the component is no pod's.
std::optional<std::string> PodComponentUid(absl::string_view component) {
  if (absl::ConsumeSuffix(&component, ".slice")) {
    const std::size_t pod = component.rfind("-pod");
    if (pod == absl::string_view::npos) return std::nullopt;
    std::string uid(component.substr(pod + 4));
    for (char& c : uid) c = c == '_' ? '-' : c;
    return uid;
  }
  if (!absl::ConsumePrefix(&component, "pod")) return std::nullopt;
  return std::string(component);
}

// The pod UID of one cgroup line's path, nullopt when the path is not under kubepods.
absl::StatusOr<std::optional<std::string>> UidOfLine(absl::string_view line) {
  // "hierarchy-ID:controller-list:path"; the path may itself contain ':'.
  const std::size_t first = line.find(':');
  const std::size_t second =
      first == absl::string_view::npos ? absl::string_view::npos : line.find(':', first + 1);
  if (second == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup line \"", line, "\": not hierarchy:controllers:path"));
  }
  bool under_kubepods = false;
  for (absl::string_view component : absl::StrSplit(line.substr(second + 1), '/')) {
    if (!under_kubepods) {
      under_kubepods = absl::StrContains(component, "kubepods");
      // systemd: "kubepods-burstable-pod<uid>.slice" also contains "kubepods".
      if (!under_kubepods || !absl::StrContains(component, "-pod")) continue;
    }
    std::optional<std::string> uid = PodComponentUid(component);
    if (!uid) continue;  // "burstable", "besteffort", "kubepods-burstable.slice"
    if (!IsPodUid(*uid)) {
      return absl::InvalidArgumentError(absl::StrCat("cgroup line \"", line, "\": pod component \"",
                                                     component, "\" holds no pod UID"));
    }
    return uid;
  }
  return std::optional<std::string>();
}

std::string Trim(absl::string_view text) { return std::string(absl::StripAsciiWhitespace(text)); }

class KubePodSource final : public PodSource {
 public:
  KubePodSource(kube::Client* client, KubePodSourceOptions options, Clock* clock)
      : client_(client), options_(std::move(options)), clock_(clock) {}

  absl::StatusOr<PodRecord> FindByUid(const std::string& uid) override {
    absl::MutexLock lock(&mu_);
    const MonotonicTime now = clock_->Now();
    const bool fresh = listed_ && now - *listed_ < options_.cache_ttl;
    auto found = pods_.find(uid);
    if (found != pods_.end() && fresh) return found->second;
    if (!listed_ || now - *listed_ >= options_.min_relist) {
      WAVEPOOL_RETURN_IF_ERROR(Relist(now));
      found = pods_.find(uid);
      if (found != pods_.end()) return found->second;
    }
    return absl::NotFoundError(absl::StrCat("no pod of node ", options_.node_name, " with uid ",
                                            uid, " is managed by wavepool"));
  }

 private:
  absl::Status Relist(MonotonicTime now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    kube::ListOptions list;
    list.field_selector = "spec.nodeName=" + options_.node_name;
    list.label_selector = kPodManagedBySelector;
    absl::StatusOr<kube::TypedList<kube::Pod>> pods =
        kube::TypedClient<kube::Pod>(client_).ListAll("", list);
    if (!pods.ok()) {
      return absl::UnavailableError(absl::StrCat("list the pods of node ", options_.node_name, ": ",
                                                 pods.status().message()));
    }
    pods_.clear();
    for (const kube::Pod& pod : pods->items) {
      if (!pod.metadata.deletion_timestamp.empty()) continue;  // terminating: never a new worker
      PodRecord& record = pods_[pod.metadata.uid];
      record = {pod.metadata.uid,    pod.metadata.namespace_,  pod.metadata.name,
                pod.metadata.labels, pod.metadata.annotations, std::nullopt};
      for (const api::OwnerReference& owner : pod.metadata.owner_references) {
        if (owner.controller.value_or(false)) record.controller_owner = owner;
      }
    }
    listed_ = now;
    return absl::OkStatus();
  }

  kube::Client* const client_;
  const KubePodSourceOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<std::string, PodRecord> pods_ ABSL_GUARDED_BY(mu_);
  std::optional<MonotonicTime> listed_ ABSL_GUARDED_BY(mu_);  // the last list, if any
};

}  // namespace

absl::StatusOr<std::string> PodUidFromCgroup(std::string_view cgroup_file) {
  std::optional<std::string> uid;
  const absl::string_view text(cgroup_file.data(), cgroup_file.size());
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::string> of_line, UidOfLine(Trim(line)));
    if (!of_line.has_value()) continue;
    if (uid && *uid != *of_line) {
      return absl::InvalidArgumentError(
          absl::StrCat("cgroup: lines name two pods, ", *uid, " and ", *of_line));
    }
    uid = *of_line;
  }
  if (!uid) return absl::NotFoundError("cgroup: no line is under a kubepods cgroup (not in a pod)");
  return *uid;
}

absl::StatusOr<WorkerIdentity> IdentityOfPod(const PodRecord& pod) {
  const std::string where = absl::StrCat("pod ", pod.namespace_name, "/", pod.name, ": ");
  WorkerIdentity identity;
  identity.namespace_name = pod.namespace_name;
  identity.pod = pod.name;
  identity.pod_uid = pod.uid;
  auto role = pod.labels.find(kPodLabelRole);
  if (role == pod.labels.end() || (role->second != "Foreground" && role->second != "Background")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "label ", kPodLabelRole, ": must be Foreground or Background, got \"",
                     role == pod.labels.end() ? "" : role->second, "\""));
  }
  identity.role = role->second == "Foreground" ? Role::kForeground : Role::kBackground;
  auto job_name = pod.annotations.find(kPodAnnotationJobName);
  auto job_label = pod.labels.find(kPodLabelJob);
  if (job_name != pod.annotations.end() && !job_name->second.empty()) {
    identity.job = job_name->second;
  } else if (job_label != pod.labels.end() && !job_label->second.empty()) {
    identity.job = job_label->second;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(where, "neither annotation ",
                                                   kPodAnnotationJobName, " nor label ",
                                                   kPodLabelJob, " names its job"));
  }
  auto gpus = pod.annotations.find(kPodAnnotationGpuUuids);
  if (gpus == pod.annotations.end() || Trim(gpus->second).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "annotation ", kPodAnnotationGpuUuids, ": no GPU assigned"));
  }
  for (absl::string_view uuid : absl::StrSplit(gpus->second, ',')) {
    const std::string trimmed = Trim(uuid);
    if (trimmed.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "annotation ", kPodAnnotationGpuUuids,
                                                     ": empty UUID in \"", gpus->second, "\""));
    }
    identity.gpu_uuids.push_back(trimmed);
  }
  return identity;
}

absl::StatusOr<PodSourcePtr> MakeKubePodSource(kube::Client* client, KubePodSourceOptions options,
                                               Clock* clock) {
  if (client == nullptr || clock == nullptr) {
    return absl::InvalidArgumentError("pod source: client and clock are required");
  }
  if (options.node_name.empty()) {
    return absl::InvalidArgumentError("pod source: node_name: must be set (--node-name)");
  }
  if (options.cache_ttl.count() <= 0 || options.min_relist.count() < 0) {
    return absl::InvalidArgumentError("pod source: cache_ttl must be > 0 and min_relist >= 0");
  }
  return PodSourcePtr(std::make_unique<KubePodSource>(client, std::move(options), clock));
}

KubernetesPeerIdentity::KubernetesPeerIdentity(PodSource* pods, PlacementRecords* placements,
                                               std::string proc_root)
    : pods_(pods), placements_(placements), proc_root_(std::move(proc_root)) {}

absl::StatusOr<std::string> KubernetesPeerIdentity::PodUidOf(pid_t pid) const {
  const std::string path = absl::StrCat(proc_root_, "/", pid, "/cgroup");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return ErrnoError(absl::StatusCode::kNotFound, errno,
                      absl::StrCat("process ", pid, ": ", path));
  }
  std::string text;
  char buffer[4096];
  ssize_t n;
  // A cgroup file is a few lines; 64 KiB is far beyond any real one.
  while (text.size() < (64 << 10) && (n = read(fd, buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  absl::StatusOr<std::string> uid = PodUidFromCgroup(text);
  if (!uid.ok()) {
    return absl::Status(uid.status().code(),
                        absl::StrCat("process ", pid, ": ", uid.status().message()));
  }
  return uid;
}

absl::StatusOr<WorkerIdentity> KubernetesPeerIdentity::Resolve(pid_t pid) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string uid, PodUidOf(pid));
  absl::StatusOr<PodRecord> pod = pods_->FindByUid(uid);
  if (!pod.ok()) {
    return absl::Status(pod.status().code(),
                        absl::StrCat("process ", pid, ": ", pod.status().message()));
  }
  absl::StatusOr<WorkerIdentity> identity = IdentityOfPod(*pod);
  if (!identity.ok() || placements_ == nullptr) return identity;
  if (absl::Status placed = placements_->Confirm(*pod, *identity); !placed.ok()) {
    return absl::Status(placed.code(), absl::StrCat("process ", pid, ": ", placed.message()));
  }
  return identity;
}

std::string KubernetesPeerIdentity::ConnectionGroup(pid_t pid) {
  absl::StatusOr<std::string> uid = PodUidOf(pid);
  return uid.ok() ? "pod:" + *uid : PeerIdentity::ConnectionGroup(pid);
}

void LocalPeerIdentity::Add(pid_t pid, WorkerIdentity identity) {
  absl::MutexLock lock(&mu_);
  workers_[pid] = std::move(identity);
}

void LocalPeerIdentity::Remove(pid_t pid) {
  absl::MutexLock lock(&mu_);
  workers_.erase(pid);
}

absl::StatusOr<WorkerIdentity> LocalPeerIdentity::Resolve(pid_t pid) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(pid);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " is no worker this run started"));
  }
  return it->second;
}

}  // namespace wavepool::agent
