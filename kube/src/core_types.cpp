// Node, Namespace, ConfigMap, Service, Event and Lease <-> JSON (core_types.h); Pod is in pod.cpp.
#include "wavepool/kube/core_types.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "json_fields.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::kube {
namespace {

using api::FieldPath;
using api::ObjectReader;
using internal::Put;
using nlohmann::json;

}  // namespace

// In namespace kube, where api's list decoder finds it by argument-dependent lookup.
static absl::Status DecodeValue(const json& value, const FieldPath& path, NodeCondition* out) {
  ObjectReader reader(value, path);
  reader.Read("type", &out->type);
  reader.Read("status", &out->status);
  reader.Read("reason", &out->reason);
  reader.Read("message", &out->message);
  return internal::Lenient(reader);
}

namespace {

// Decodes the top-level object, then runs `fields` (a reader over it) and keeps the raw JSON.
template <typename T, typename Fields>
absl::StatusOr<T> DecodeObject(const json& input, const char* kind, Fields fields) {
  T object;
  std::string name;
  WAVEPOOL_RETURN_IF_ERROR(internal::DecodeTop(input, kind, &object.metadata, &name));
  ObjectReader reader(input, FieldPath());
  if (absl::Status status = fields(reader, object); !status.ok()) {
    return internal::Named(name, status);
  }
  object.raw = input;
  return object;
}

}  // namespace

absl::StatusOr<Node> Node::FromJson(const json& input) {
  return DecodeObject<Node>(input, "Node", [](ObjectReader& reader, Node& node) {
    const json spec_json = internal::ReadObject(reader, "spec");
    ObjectReader spec(spec_json, FieldPath("spec"));
    spec.Read("unschedulable", &node.unschedulable);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(spec));
    const json status_json = internal::ReadObject(reader, "status");
    ObjectReader status(status_json, FieldPath("status"));
    internal::ReadStringMap(status, "capacity", &node.capacity);
    internal::ReadStringMap(status, "allocatable", &node.allocatable);
    status.Read("conditions", &node.conditions);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
    return internal::Lenient(status);
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
  return DecodeObject<Namespace>(input, "Namespace", [](ObjectReader& reader, Namespace& ns) {
    const json status_json = internal::ReadObject(reader, "status");
    ObjectReader status(status_json, FieldPath("status"));
    status.Read("phase", &ns.phase);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
    return internal::Lenient(status);
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
  return DecodeObject<ConfigMap>(input, "ConfigMap", [](ObjectReader& reader, ConfigMap& map) {
    internal::ReadStringMap(reader, "data", &map.data);
    internal::ReadStringMap(reader, "binaryData", &map.binary_data);
    return internal::Lenient(reader);
  });
}

json ToJson(const ConfigMap& config_map) {
  json out = internal::EncodeTop(config_map.raw, "v1", "ConfigMap", config_map.metadata);
  Put(out, "data", config_map.data);
  Put(out, "binaryData", config_map.binary_data);
  return out;
}

absl::StatusOr<Service> Service::FromJson(const json& input) {
  return DecodeObject<Service>(input, "Service", [](ObjectReader& reader, Service& service) {
    json spec_json = internal::ReadObject(reader, "spec");
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
    ObjectReader spec(spec_json, FieldPath("spec"));
    spec.Read("clusterIP", &service.spec.cluster_ip);
    internal::ReadStringMap(spec, "selector", &service.spec.selector);
    spec.Read("publishNotReadyAddresses", &service.spec.publish_not_ready_addresses);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(spec));
    service.spec.raw = std::move(spec_json);
    return absl::OkStatus();
  });
}

void DropRawJson(Service& service) {
  internal::DropRawMetadata(service.metadata);
  service.raw = nullptr;
  service.spec.raw = nullptr;
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
  return DecodeObject<Event>(input, "Event", [](ObjectReader& reader, Event& event) {
    const json involved_json = internal::ReadObject(reader, "involvedObject");
    ObjectReader involved(involved_json, FieldPath("involvedObject"));
    ObjectReference& ref = event.involved_object;
    involved.Read("apiVersion", &ref.api_version);
    involved.Read("kind", &ref.kind);
    involved.Read("namespace", &ref.namespace_);
    involved.Read("name", &ref.name);
    involved.Read("uid", &ref.uid);
    involved.Read("resourceVersion", &ref.resource_version);
    involved.Read("fieldPath", &ref.field_path);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(involved));
    reader.Read("reason", &event.reason);
    reader.Read("message", &event.message);
    reader.Read("type", &event.type);
    reader.Read("count", &event.count);
    reader.Read("firstTimestamp", &event.first_timestamp);
    reader.Read("lastTimestamp", &event.last_timestamp);
    reader.Read("reportingComponent", &event.reporting_component);
    reader.Read("reportingInstance", &event.reporting_instance);
    const json source_json = internal::ReadObject(reader, "source");
    ObjectReader source(source_json, FieldPath("source"));
    source.Read("component", &event.source_component);
    source.Read("host", &event.source_host);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
    return internal::Lenient(source);
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
  return DecodeObject<Lease>(input, "Lease", [](ObjectReader& reader, Lease& lease) {
    const json spec_json = internal::ReadObject(reader, "spec");
    ObjectReader spec(spec_json, FieldPath("spec"));
    spec.Read("holderIdentity", &lease.spec.holder_identity);
    spec.Read("leaseDurationSeconds", &lease.spec.lease_duration_seconds);
    internal::ReadTime(spec, "acquireTime", &lease.spec.acquire_time);
    internal::ReadTime(spec, "renewTime", &lease.spec.renew_time);
    spec.Read("leaseTransitions", &lease.spec.lease_transitions);
    WAVEPOOL_RETURN_IF_ERROR(internal::Lenient(reader));
    return internal::Lenient(spec);
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
