// The built-in kinds wavepool reads and writes, as small structs: Pod, Node, ConfigMap, Service,
// Event, Lease and Namespace, with only the fields the controller and the agent use.
//
// Round trips keep what they do not model: every struct that mirrors a JSON object keeps the
// object it was decoded from in `raw`, and ToJson starts from `raw` and writes the modelled
// fields over it (removing those that are empty), so a read-modify-write never drops a field a
// newer Kubernetes added. Decoding reports a bad field by its path ("Pod default/w-0:
// spec.containers[1].resources.limits: must be an object, got array").
//
// Plain values: copyable, not synchronised.
#ifndef WAVEPOOL_KUBE_CORE_TYPES_H_
#define WAVEPOOL_KUBE_CORE_TYPES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/object_meta.h"

namespace wavepool::kube {

// metav1.ObjectMeta: name, namespace, uid, resourceVersion, generation, labels, annotations,
// ownerReferences, finalizers, creation and deletion timestamps; the rest in unknown_fields.
using ObjectMeta = api::ObjectMeta;
using OwnerReference = api::OwnerReference;

// metav1.MicroTime: written as RFC 3339 with microseconds, "2026-05-01T10:00:00.123456Z"
// (Leases); any RFC 3339 time is read.
using MicroTime = std::chrono::system_clock::time_point;

// RFC 3339 with microseconds, as metav1.MicroTime: "2026-11-22T20:51:41.123456Z".
std::string FormatMicroTime(MicroTime time);

// --- Pod (core/v1) ---

struct EnvVar {
  std::string name;
  std::string value;
  nlohmann::json raw = nlohmann::json::object();  // valueFrom and the rest
};

struct ResourceRequirements {
  std::map<std::string, std::string> requests;  // "cpu": "500m", "nvidia.com/gpu": "1"
  std::map<std::string, std::string> limits;
};

struct VolumeMount {
  std::string name;
  std::string mount_path;
  bool read_only = false;
  nlohmann::json raw = nlohmann::json::object();
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  ResourceRequirements resources;
  std::vector<VolumeMount> volume_mounts;
  nlohmann::json raw = nlohmann::json::object();
};

// A volume: its name, and its source as the API writes it ({"configMap": {"name": "plan"}}).
struct Volume {
  std::string name;
  nlohmann::json raw = nlohmann::json::object();  // the source and anything else
};

struct PodSpec {
  std::vector<Container> containers;
  std::vector<Volume> volumes;
  std::string node_name;
  std::string restart_policy;  // "Always", "OnFailure", "Never"; "" leaves the default
  std::optional<std::int64_t> termination_grace_period_seconds;
  nlohmann::json raw = nlohmann::json::object();
};

struct PodCondition {
  std::string type;    // "Ready", "PodScheduled", ...
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
};

// Which of waiting / running / terminated a container is in.
struct ContainerState {
  enum class Phase { kUnknown, kWaiting, kRunning, kTerminated };
  Phase phase = Phase::kUnknown;
  std::string reason;  // waiting or terminated: "CrashLoopBackOff", "Completed", "OOMKilled"
  std::string message;
  std::int64_t exit_code = 0;  // terminated
  std::string started_at;      // running or terminated, RFC 3339
  std::string finished_at;     // terminated
};

struct ContainerStatus {
  std::string name;
  bool ready = false;
  std::int64_t restart_count = 0;
  ContainerState state;
  ContainerState last_state;  // lastState: the previous run, after a restart
};

struct PodStatus {
  std::string phase;  // "Pending", "Running", "Succeeded", "Failed", "Unknown"
  std::string reason;
  std::string message;
  std::vector<PodCondition> conditions;
  std::vector<ContainerStatus> container_statuses;
  nlohmann::json raw = nlohmann::json::object();
};

struct Pod {
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<Pod> FromJson(const nlohmann::json& json);
};

// --- Node, Namespace, ConfigMap (core/v1) ---

struct NodeCondition {
  std::string type;    // "Ready", "MemoryPressure", ...
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
};

struct Node {
  ObjectMeta metadata;
  bool unschedulable = false;                      // spec.unschedulable
  std::map<std::string, std::string> capacity;     // status.capacity
  std::map<std::string, std::string> allocatable;  // status.allocatable
  std::vector<NodeCondition> conditions;           // status.conditions (read-only here)
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<Node> FromJson(const nlohmann::json& json);
};

struct Namespace {
  ObjectMeta metadata;
  std::string phase;  // status.phase: "Active", "Terminating"
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<Namespace> FromJson(const nlohmann::json& json);
};

struct ConfigMap {
  ObjectMeta metadata;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;  // base64, as on the wire
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<ConfigMap> FromJson(const nlohmann::json& json);
};

// --- Service (core/v1) ---

// The Service fields the controller reads back (the gangs' headless rendezvous Services); ports
// and the rest stay in `raw`.
struct ServiceSpec {
  std::string cluster_ip;                       // clusterIP: "None" for a headless Service
  std::map<std::string, std::string> selector;  // the pods' labels
  bool publish_not_ready_addresses = false;
  nlohmann::json raw = nlohmann::json::object();
};

struct Service {
  ObjectMeta metadata;
  ServiceSpec spec;
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<Service> FromJson(const nlohmann::json& json);
};

// --- Event (core/v1) ---

// core/v1 ObjectReference.
struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_;  // "namespace" on the wire
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string field_path;
};

struct Event {
  ObjectMeta metadata;
  ObjectReference involved_object;
  std::string reason;  // "Planned", "Preempted"
  std::string message;
  std::string type;  // "Normal", "Warning"
  std::int64_t count = 0;
  std::string first_timestamp;   // RFC 3339
  std::string last_timestamp;    // RFC 3339
  std::string source_component;  // source.component
  std::string source_host;       // source.host
  std::string reporting_component;
  std::string reporting_instance;
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<Event> FromJson(const nlohmann::json& json);
};

// --- Lease (coordination.k8s.io/v1) ---

struct LeaseSpec {
  std::string holder_identity;
  std::optional<std::int64_t> lease_duration_seconds;
  std::optional<MicroTime> acquire_time;
  std::optional<MicroTime> renew_time;
  std::optional<std::int64_t> lease_transitions;
};

struct Lease {
  ObjectMeta metadata;
  LeaseSpec spec;
  nlohmann::json raw = nlohmann::json::object();

  static absl::StatusOr<Lease> FromJson(const nlohmann::json& json);
};

// Each writes apiVersion and kind, then the modelled fields over `raw`.
nlohmann::json ToJson(const Pod& pod);
nlohmann::json ToJson(const Node& node);
nlohmann::json ToJson(const Namespace& ns);
nlohmann::json ToJson(const ConfigMap& config_map);
nlohmann::json ToJson(const Service& service);
nlohmann::json ToJson(const Event& event);
nlohmann::json ToJson(const Lease& lease);

// Empty the JSON an object keeps for re-encoding: each `raw` member (for a pod: its own, its
// spec's and status's, and each container's, env var's, volume mount's and volume's) and the
// metadata's unknown fields (managedFields and the like). For a cache that reads only the typed
// fields, where that JSON would repeat what the informer holds several times over. ToJson of the
// result writes the typed fields alone, so it must not be written back.
void DropRawJson(Pod& pod);
void DropRawJson(Service& service);

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_CORE_TYPES_H_
