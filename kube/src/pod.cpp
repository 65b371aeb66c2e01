// Pod <-> JSON (core_types.h).
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "json_fields.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::kube {
namespace {

using internal::FieldReader;
using internal::Put;
using nlohmann::json;

absl::Status DecodeEnv(const json& value, const std::string& path, EnvVar* out) {
  FieldReader reader(value, path);
  reader.String("name", &out->name);
  reader.String("value", &out->value);
  out->raw = internal::Base(value);
  return reader.status();
}

absl::Status DecodeMount(const json& value, const std::string& path, VolumeMount* out) {
  FieldReader reader(value, path);
  reader.String("name", &out->name);
  reader.String("mountPath", &out->mount_path);
  reader.Bool("readOnly", &out->read_only);
  out->raw = internal::Base(value);
  return reader.status();
}

absl::Status DecodeContainer(const json& value, const std::string& path, Container* out) {
  FieldReader reader(value, path);
  reader.String("name", &out->name);
  reader.String("image", &out->image);
  reader.StringList("command", &out->command);
  reader.StringList("args", &out->args);
  reader.List("env", &out->env, DecodeEnv);
  FieldReader resources(reader.Object("resources"), reader.Path("resources"));
  resources.StringMap("requests", &out->resources.requests);
  resources.StringMap("limits", &out->resources.limits);
  reader.List("volumeMounts", &out->volume_mounts, DecodeMount);
  out->raw = internal::Base(value);
  return reader.status().ok() ? resources.status() : reader.status();
}

absl::Status DecodeVolume(const json& value, const std::string& path, Volume* out) {
  FieldReader reader(value, path);
  reader.String("name", &out->name);
  out->raw = internal::Base(value);
  return reader.status();
}

absl::Status DecodeCondition(const json& value, const std::string& path, PodCondition* out) {
  FieldReader reader(value, path);
  reader.String("type", &out->type);
  reader.String("status", &out->status);
  reader.String("reason", &out->reason);
  reader.String("message", &out->message);
  reader.String("lastTransitionTime", &out->last_transition_time);
  return reader.status();
}

// {"waiting": {...}} | {"running": {...}} | {"terminated": {...}} | {}.
absl::Status DecodeState(const json& value, const std::string& path, ContainerState* out) {
  FieldReader reader(value, path);
  const std::pair<const char*, ContainerState::Phase> phases[] = {
      {"waiting", ContainerState::Phase::kWaiting},
      {"running", ContainerState::Phase::kRunning},
      {"terminated", ContainerState::Phase::kTerminated}};
  for (const auto& [key, phase] : phases) {
    if (!value.is_object() || !value.contains(key) || value[key].is_null()) continue;
    FieldReader state(reader.Object(key), reader.Path(key));
    out->phase = phase;
    state.String("reason", &out->reason);
    state.String("message", &out->message);
    state.Int("exitCode", &out->exit_code);
    state.String("startedAt", &out->started_at);
    state.String("finishedAt", &out->finished_at);
    if (!state.status().ok()) return state.status();
  }
  return reader.status();
}

absl::Status DecodeContainerStatus(const json& value, const std::string& path,
                                   ContainerStatus* out) {
  FieldReader reader(value, path);
  reader.String("name", &out->name);
  reader.Bool("ready", &out->ready);
  reader.Int("restartCount", &out->restart_count);
  if (!reader.status().ok()) return reader.status();
  WAVEPOOL_RETURN_IF_ERROR(DecodeState(reader.Object("state"), reader.Path("state"), &out->state));
  if (!reader.status().ok()) return reader.status();
  return DecodeState(reader.Object("lastState"), reader.Path("lastState"), &out->last_state);
}

absl::Status DecodeSpec(const json& value, PodSpec* out) {
  FieldReader reader(value, "spec");
  reader.List("containers", &out->containers, DecodeContainer);
  reader.List("volumes", &out->volumes, DecodeVolume);
  reader.String("nodeName", &out->node_name);
  reader.String("restartPolicy", &out->restart_policy);
  reader.OptionalInt("terminationGracePeriodSeconds", &out->termination_grace_period_seconds);
  out->raw = internal::Base(value);
  return reader.status();
}

absl::Status DecodeStatus(const json& value, PodStatus* out) {
  FieldReader reader(value, "status");
  reader.String("phase", &out->phase);
  reader.String("reason", &out->reason);
  reader.String("message", &out->message);
  reader.List("conditions", &out->conditions, DecodeCondition);
  reader.List("containerStatuses", &out->container_statuses, DecodeContainerStatus);
  out->raw = internal::Base(value);
  return reader.status();
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
  FieldReader reader(input, "");
  const nlohmann::json& spec = reader.Object("spec");
  const nlohmann::json& status = reader.Object("status");
  absl::Status result = reader.status();
  if (result.ok()) result = DecodeSpec(spec, &pod.spec);
  if (result.ok()) result = DecodeStatus(status, &pod.status);
  if (!result.ok()) return internal::Named(name, result);
  pod.raw = input;
  return pod;
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
