// Node, Namespace, ConfigMap, Service, Event and Lease <-> JSON (core_types.h); Pod is in pod.cpp.
#include "wavepool/kube/core_types.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "json_fields.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::kube {
namespace {

using internal::FieldReader;
using internal::Put;
using nlohmann::json;

absl::Status DecodeNodeCondition(const json& value, const std::string& path, NodeCondition* out) {
  FieldReader reader(value, path);
  reader.String("type", &out->type);
  reader.String("status", &out->status);
  reader.String("reason", &out->reason);
  reader.String("message", &out->message);
  return reader.status();
}

// Decodes the top-level object, then runs `fields` (a reader over it) and keeps the raw JSON.
template <typename T, typename Fields>
absl::StatusOr<T> DecodeObject(const json& input, const char* kind, Fields fields) {
  T object;
  std::string name;
  WAVEPOOL_RETURN_IF_ERROR(internal::DecodeTop(input, kind, &object.metadata, &name));
  FieldReader reader(input, "");
  if (absl::Status status = fields(reader, object); !status.ok()) {
    return internal::Named(name, status);
  }
  object.raw = input;
  return object;
}

}  // namespace

absl::StatusOr<Node> Node::FromJson(const json& input) {
  return DecodeObject<Node>(input, "Node", [](FieldReader& reader, Node& node) {
    FieldReader spec(reader.Object("spec"), "spec");
    spec.Bool("unschedulable", &node.unschedulable);
    if (!spec.status().ok()) return spec.status();
    FieldReader status(reader.Object("status"), "status");
    status.StringMap("capacity", &node.capacity);
    status.StringMap("allocatable", &node.allocatable);
    status.List("conditions", &node.conditions, DecodeNodeCondition);
    return reader.status().ok() ? status.status() : reader.status();
  });
}

json ToJson(const Node& node) {
  json out = internal::EncodeTop(node.raw, "v1", "Node", node.metadata);
  json spec = internal::Base(out.value("spec", json::object()));
  internal::PutBool(spec, "unschedulable", node.unschedulable);
  internal::PutObject(out, "spec", std::move(spec));
  json status = internal::Base(out.value("status", json::object()));
  Put(status, "capacity", node.capacity);
  Put(status, "allocatable", node.allocatable);
  internal::PutObject(out, "status", std::move(status));
  return out;
}

absl::StatusOr<Namespace> Namespace::FromJson(const json& input) {
  return DecodeObject<Namespace>(input, "Namespace", [](FieldReader& reader, Namespace& ns) {
    FieldReader status(reader.Object("status"), "status");
    status.String("phase", &ns.phase);
    return reader.status().ok() ? status.status() : reader.status();
  });
}

json ToJson(const Namespace& ns) {
  json out = internal::EncodeTop(ns.raw, "v1", "Namespace", ns.metadata);
  json status = internal::Base(out.value("status", json::object()));
  Put(status, "phase", ns.phase);
  internal::PutObject(out, "status", std::move(status));
  return out;
}

absl::StatusOr<ConfigMap> ConfigMap::FromJson(const json& input) {
  return DecodeObject<ConfigMap>(input, "ConfigMap", [](FieldReader& reader, ConfigMap& map) {
    reader.StringMap("data", &map.data);
    reader.StringMap("binaryData", &map.binary_data);
    return reader.status();
  });
}

json ToJson(const ConfigMap& config_map) {
  json out = internal::EncodeTop(config_map.raw, "v1", "ConfigMap", config_map.metadata);
  Put(out, "data", config_map.data);
  Put(out, "binaryData", config_map.binary_data);
  return out;
}

absl::StatusOr<Service> Service::FromJson(const json& input) {
  return DecodeObject<Service>(input, "Service", [](FieldReader& reader, Service& service) {
    const json& spec_json = reader.Object("spec");
    FieldReader spec(spec_json, "spec");
    spec.String("clusterIP", &service.spec.cluster_ip);
    spec.StringMap("selector", &service.spec.selector);
    spec.Bool("publishNotReadyAddresses", &service.spec.publish_not_ready_addresses);
    service.spec.raw = internal::Base(spec_json);
    return reader.status().ok() ? spec.status() : reader.status();
  });
}

json ToJson(const Service& service) {
  json out = internal::EncodeTop(service.raw, "v1", "Service", service.metadata);
  json spec = internal::Base(service.spec.raw);
  Put(spec, "clusterIP", service.spec.cluster_ip);
  Put(spec, "selector", service.spec.selector);
  internal::PutBool(spec, "publishNotReadyAddresses", service.spec.publish_not_ready_addresses);
  internal::PutObject(out, "spec", std::move(spec));
  return out;
}

absl::StatusOr<Event> Event::FromJson(const json& input) {
  return DecodeObject<Event>(input, "Event", [](FieldReader& reader, Event& event) {
    FieldReader involved(reader.Object("involvedObject"), "involvedObject");
    ObjectReference& ref = event.involved_object;
    involved.String("apiVersion", &ref.api_version);
    involved.String("kind", &ref.kind);
    involved.String("namespace", &ref.namespace_);
    involved.String("name", &ref.name);
    involved.String("uid", &ref.uid);
    involved.String("resourceVersion", &ref.resource_version);
    involved.String("fieldPath", &ref.field_path);
    if (!involved.status().ok()) return involved.status();
    reader.String("reason", &event.reason);
    reader.String("message", &event.message);
    reader.String("type", &event.type);
    reader.Int("count", &event.count);
    reader.String("firstTimestamp", &event.first_timestamp);
    reader.String("lastTimestamp", &event.last_timestamp);
    reader.String("reportingComponent", &event.reporting_component);
    reader.String("reportingInstance", &event.reporting_instance);
    FieldReader source(reader.Object("source"), "source");
    source.String("component", &event.source_component);
    source.String("host", &event.source_host);
    return reader.status().ok() ? source.status() : reader.status();
  });
}

json ToJson(const Event& event) {
  json out = internal::EncodeTop(event.raw, "v1", "Event", event.metadata);
  json involved = internal::Base(out.value("involvedObject", json::object()));
  const ObjectReference& ref = event.involved_object;
  Put(involved, "apiVersion", ref.api_version);
  Put(involved, "kind", ref.kind);
  Put(involved, "namespace", ref.namespace_);
  Put(involved, "name", ref.name);
  Put(involved, "uid", ref.uid);
  Put(involved, "resourceVersion", ref.resource_version);
  Put(involved, "fieldPath", ref.field_path);
  out["involvedObject"] = std::move(involved);
  Put(out, "reason", event.reason);
  Put(out, "message", event.message);
  Put(out, "type", event.type);
  internal::PutInt(out, "count", event.count);
  Put(out, "firstTimestamp", event.first_timestamp);
  Put(out, "lastTimestamp", event.last_timestamp);
  Put(out, "reportingComponent", event.reporting_component);
  Put(out, "reportingInstance", event.reporting_instance);
  json source = internal::Base(out.value("source", json::object()));
  Put(source, "component", event.source_component);
  Put(source, "host", event.source_host);
  internal::PutObject(out, "source", std::move(source));
  return out;
}

absl::StatusOr<Lease> Lease::FromJson(const json& input) {
  return DecodeObject<Lease>(input, "Lease", [](FieldReader& reader, Lease& lease) {
    FieldReader spec(reader.Object("spec"), "spec");
    spec.String("holderIdentity", &lease.spec.holder_identity);
    spec.OptionalInt("leaseDurationSeconds", &lease.spec.lease_duration_seconds);
    spec.Time("acquireTime", &lease.spec.acquire_time);
    spec.Time("renewTime", &lease.spec.renew_time);
    spec.OptionalInt("leaseTransitions", &lease.spec.lease_transitions);
    return reader.status().ok() ? spec.status() : reader.status();
  });
}

json ToJson(const Lease& lease) {
  json out = internal::EncodeTop(lease.raw, "coordination.k8s.io/v1", "Lease", lease.metadata);
  json spec = internal::Base(out.value("spec", json::object()));
  Put(spec, "holderIdentity", lease.spec.holder_identity);
  Put(spec, "leaseDurationSeconds", lease.spec.lease_duration_seconds);
  Put(spec, "acquireTime", lease.spec.acquire_time);
  Put(spec, "renewTime", lease.spec.renew_time);
  Put(spec, "leaseTransitions", lease.spec.lease_transitions);
  out["spec"] = std::move(spec);
  return out;
}

}  // namespace wavepool::kube
