// Pod <-> JSON (core_types.h).
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "json_fields.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::kube {
namespace {

using api::FieldPath;
using api::ObjectReader;
using internal::Put;
using nlohmann::json;

}  // namespace

// The list elements of a Pod, in namespace kube, where api's list decoder finds them by
// argument-dependent lookup. Each keeps its element's JSON in `raw` (where the type has one), so
// fields kube does not model survive a read-modify-write.

static absl::Status DecodeValue(const json& value, const FieldPath& path, EnvVar* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  reader.Read("value", &out->value);
  out->raw = value;
  return internal::Lenient(reader);
}

static absl::Status DecodeValue(const json& value, const FieldPath& path, VolumeMount* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  reader.Read("mountPath", &out->mount_path);
  reader.Read("readOnly", &out->read_only);
  out->raw = value;
  return internal::Lenient(reader);
}

static absl::Status DecodeValue(const json& value, const FieldPath& path, Container* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  reader.Read("image", &out->image);
  reader.Read("command", &out->command);
  reader.Read("args", &out->args);
  reader.Read("env", &out->env);
  const json resources_json = internal::ReadObject(reader, "resources");
  ObjectReader resources(resources_json, path.Child("resources"));
  internal::ReadStringMap(resources, "requests", &out->resources.requests);
  internal::ReadStringMap(resources, "limits", &out->resources.limits);
  reader.Read("volumeMounts", &out->volume_mounts);
  out->raw = value;
  WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
  return internal::Lenient(resources);
}

static absl::Status DecodeValue(const json& value, const FieldPath& path, Volume* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  out->raw = value;
  return internal::Lenient(reader);
}

static absl::Status DecodeValue(const json& value, const FieldPath& path, PodCondition* out) {
  ObjectReader reader(value, path);
  reader.Read("type", &out->type);
  reader.Read("status", &out->status);
  reader.Read("reason", &out->reason);
  reader.Read("message", &out->message);
  reader.Read("lastTransitionTime", &out->last_transition_time);
  return internal::Lenient(reader);
}

// {"waiting": {...}} | {"running": {...}} | {"terminated": {...}} | {}.
static absl::Status DecodeState(const json& value, const FieldPath& path, ContainerState* out) {
  ObjectReader reader(value, path);
  const std::pair<const char*, ContainerState::Phase> phases[] = {
      {"waiting", ContainerState::Phase::kWaiting},
      {"running", ContainerState::Phase::kRunning},
      {"terminated", ContainerState::Phase::kTerminated}};
  for (const auto& [key, phase] : phases) {
    if (!value.is_object() || !value.contains(key) || value[key].is_null()) continue;
    const json state_json = internal::ReadObject(reader, key);
    ObjectReader state(state_json, path.Child(key));
    out->phase = phase;
    state.Read("reason", &out->reason);
    state.Read("message", &out->message);
    state.Read("exitCode", &out->exit_code);
    state.Read("startedAt", &out->started_at);
    state.Read("finishedAt", &out->finished_at);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(state));
  }
  return internal::Lenient(reader);
}

static absl::Status DecodeValue(const json& value, const FieldPath& path, ContainerStatus* out) {
  ObjectReader reader(value, path);
  reader.Read("name", &out->name);
  reader.Read("ready", &out->ready);
  reader.Read("restartCount", &out->restart_count);
  const json state = internal::ReadObject(reader, "state");
  const json last_state = internal::ReadObject(reader, "lastState");
  WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
  WAVEPOOL_RETURN_IF_ERROR(DecodeState(state, path.Child("state"), &out->state));
  return DecodeState(last_state, path.Child("lastState"), &out->last_state);
}

namespace {

absl::Status DecodeSpec(const json& value, PodSpec* out) {
  ObjectReader reader(value, FieldPath("spec"));
  reader.Read("containers", &out->containers);
  reader.Read("volumes", &out->volumes);
  reader.Read("nodeName", &out->node_name);
  reader.Read("restartPolicy", &out->restart_policy);
  reader.Read("terminationGracePeriodSeconds", &out->termination_grace_period_seconds);
  out->raw = value;
  return internal::Lenient(reader);
}

absl::Status DecodeStatus(const json& value, PodStatus* out) {
  ObjectReader reader(value, FieldPath("status"));
  reader.Read("phase", &out->phase);
  reader.Read("reason", &out->reason);
  reader.Read("message", &out->message);
  reader.Read("conditions", &out->conditions);
  reader.Read("containerStatuses", &out->container_statuses);
  out->raw = value;
  return internal::Lenient(reader);
}

json Encode(const EnvVar& env) {
  json out = internal::Base(env.raw);
  Put(out, "name", env.name);
  Put(out, "value", env.value);
  return out;
}

json Encode(const VolumeMount& mount) {
  json out = internal::Base(mount.raw);
  Put(out, "name", mount.name);
  Put(out, "mountPath", mount.mount_path);
  internal::PutBool(out, "readOnly", mount.read_only);
  return out;
}

json Encode(const Container& container);
json Encode(const Volume& volume);
json Encode(const PodCondition& condition);
json Encode(const ContainerStatus& status);

template <typename T>
json EncodeList(const std::vector<T>& items) {
  json out = json::array();
  for (const T& item : items) out.push_back(Encode(item));
  return out;
}

json Encode(const Container& container) {
  json out = internal::Base(container.raw);
  Put(out, "name", container.name);
  Put(out, "image", container.image);
  Put(out, "command", container.command);
  Put(out, "args", container.args);
  internal::PutObject(out, "env", EncodeList(container.env));
  json resources = internal::Base(out.value("resources", json::object()));
  Put(resources, "requests", container.resources.requests);
  Put(resources, "limits", container.resources.limits);
  internal::PutObject(out, "resources", std::move(resources));
  internal::PutObject(out, "volumeMounts", EncodeList(container.volume_mounts));
  return out;
}

json Encode(const Volume& volume) {
  json out = internal::Base(volume.raw);
  Put(out, "name", volume.name);
  return out;
}

json Encode(const PodCondition& condition) {
  json out = json::object();
  Put(out, "type", condition.type);
  Put(out, "status", condition.status);
  Put(out, "reason", condition.reason);
  Put(out, "message", condition.message);
  Put(out, "lastTransitionTime", condition.last_transition_time);
  return out;
}

json Encode(const ContainerState& state) {
  json details = json::object();
  Put(details, "reason", state.reason);
  Put(details, "message", state.message);
  Put(details, "startedAt", state.started_at);
  switch (state.phase) {
    case ContainerState::Phase::kWaiting:
      return json{{"waiting", details}};
    case ContainerState::Phase::kRunning:
      return json{{"running", details}};
    case ContainerState::Phase::kTerminated:
      details["exitCode"] = state.exit_code;
      Put(details, "finishedAt", state.finished_at);
      return json{{"terminated", details}};
    case ContainerState::Phase::kUnknown:
      break;
  }
  return json::object();
}

json Encode(const ContainerStatus& status) {
  json out = json::object();
  Put(out, "name", status.name);
  out["ready"] = status.ready;
  out["restartCount"] = status.restart_count;
  out["state"] = Encode(status.state);
  internal::PutObject(out, "lastState", Encode(status.last_state));
  return out;
}

}  // namespace

absl::StatusOr<Pod> Pod::FromJson(const json& input) {
  Pod pod;
  std::string name;
  WAVEPOOL_RETURN_IF_ERROR(internal::DecodeTop(input, "Pod", &pod.metadata, &name));
  ObjectReader reader(input, FieldPath());
  const json spec = internal::ReadObject(reader, "spec");
  const json status = internal::ReadObject(reader, "status");
  absl::Status result = internal::Lenient(reader);
  if (result.ok()) result = DecodeSpec(spec, &pod.spec);
  if (result.ok()) result = DecodeStatus(status, &pod.status);
  if (!result.ok()) return internal::Named(name, result);
  pod.raw = input;
  return pod;
}

void DropRawJson(Pod& pod) {
  internal::DropRawMetadata(pod.metadata);
  pod.raw = nullptr;
  pod.spec.raw = nullptr;
  for (Container& container : pod.spec.containers) {
    container.raw = nullptr;
    for (EnvVar& env : container.env) env.raw = nullptr;
    for (VolumeMount& mount : container.volume_mounts) mount.raw = nullptr;
  }
  for (Volume& volume : pod.spec.volumes) volume.raw = nullptr;
  pod.status.raw = nullptr;
}

json ToJson(const Pod& pod) {
  json out = internal::EncodeTop(pod.raw, "v1", "Pod", pod.metadata);
  json spec = internal::Base(pod.spec.raw);
  spec["containers"] = EncodeList(pod.spec.containers);
  internal::PutObject(spec, "volumes", EncodeList(pod.spec.volumes));
  Put(spec, "nodeName", pod.spec.node_name);
  Put(spec, "restartPolicy", pod.spec.restart_policy);
  Put(spec, "terminationGracePeriodSeconds", pod.spec.termination_grace_period_seconds);
  out["spec"] = std::move(spec);
  json status = internal::Base(pod.status.raw);
  Put(status, "phase", pod.status.phase);
  Put(status, "reason", pod.status.reason);
  Put(status, "message", pod.status.message);
  internal::PutObject(status, "conditions", EncodeList(pod.status.conditions));
  internal::PutObject(status, "containerStatuses", EncodeList(pod.status.container_statuses));
  internal::PutObject(out, "status", std::move(status));
  return out;
}

}  // namespace wavepool::kube
