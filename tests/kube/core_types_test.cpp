// The core kinds' JSON: decoding with field paths, and round trips that keep unknown fields.
#include "wavepool/kube/core_types.h"

#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::kube {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

const json kPodJson = json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "w-0", "namespace": "team-a", "uid": "u-1", "resourceVersion": "12",
               "labels": {"app": "vgg"}, "managedFields": [{"manager": "kubectl"}],
               "ownerReferences": [{"apiVersion": "wavepool.dev/v1alpha1", "kind": "TrainingJob",
                                    "name": "vgg", "uid": "j-1", "controller": true}]},
  "spec": {
    "containers": [{
      "name": "worker", "image": "wavepool/runtime:1", "command": ["wavepool-worker"],
      "env": [{"name": "RANK", "value": "0"},
              {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
      "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4"}, "requests": {"memory": "8Gi"}},
      "volumeMounts": [{"name": "plan", "mountPath": "/etc/wavepool", "readOnly": true}],
      "ports": [{"containerPort": 29500}]
    }],
    "volumes": [{"name": "plan", "configMap": {"name": "vgg-plan"}}],
    "nodeName": "gpu-1", "restartPolicy": "Never", "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler"
  },
  "status": {
    "phase": "Running",
    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-05-01T10:00:00Z"}],
    "containerStatuses": [{
      "name": "worker", "ready": true, "restartCount": 2,
      "state": {"running": {"startedAt": "2026-05-01T10:00:00Z"}},
      "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    }],
    "podIP": "10.1.2.3"
  }
})");

TEST(CoreTypes, PodDecodesTheModelledFields) {
  ASSERT_OK_AND_ASSIGN(Pod pod, Pod::FromJson(kPodJson));
  EXPECT_EQ(pod.metadata.name, "w-0");
  EXPECT_EQ(pod.metadata.namespace_, "team-a");
  ASSERT_EQ(pod.metadata.owner_references.size(), 1u);
  EXPECT_EQ(pod.metadata.owner_references[0].kind, "TrainingJob");
  ASSERT_EQ(pod.spec.containers.size(), 1u);
  const Container& worker = pod.spec.containers[0];
  EXPECT_EQ(worker.image, "wavepool/runtime:1");
  ASSERT_EQ(worker.env.size(), 2u);
  EXPECT_EQ(worker.env[0].value, "0");
  EXPECT_EQ(worker.resources.limits.at("cpu"), "4");
  // A hand-written number quantity reads as its text, as the API server would store it.
  json numeric = kPodJson;
  numeric["spec"]["containers"][0]["resources"]["limits"]["cpu"] = 4;
  ASSERT_OK_AND_ASSIGN(Pod numeric_pod, Pod::FromJson(numeric));
  EXPECT_EQ(numeric_pod.spec.containers[0].resources.limits.at("cpu"), "4");
  EXPECT_EQ(worker.resources.requests.at("memory"), "8Gi");
  EXPECT_TRUE(worker.volume_mounts[0].read_only);
  EXPECT_EQ(pod.spec.volumes[0].raw["configMap"]["name"], "vgg-plan");
  EXPECT_EQ(pod.spec.node_name, "gpu-1");
  EXPECT_EQ(pod.spec.termination_grace_period_seconds, 30);
  EXPECT_EQ(pod.status.phase, "Running");
  EXPECT_EQ(pod.status.conditions[0].status, "True");
  const ContainerStatus& status = pod.status.container_statuses[0];
  EXPECT_EQ(status.restart_count, 2);
  EXPECT_EQ(status.state.phase, ContainerState::Phase::kRunning);
  EXPECT_EQ(status.last_state.phase, ContainerState::Phase::kTerminated);
  EXPECT_EQ(status.last_state.exit_code, 137);
  EXPECT_EQ(status.last_state.reason, "OOMKilled");
}

TEST(CoreTypes, PodRoundTripKeepsUnknownFieldsAndWritesChanges) {
  ASSERT_OK_AND_ASSIGN(Pod pod, Pod::FromJson(kPodJson));
  EXPECT_EQ(ToJson(pod), kPodJson);  // nothing changed: the same JSON
  pod.spec.containers[0].env[0].value = "1";
  pod.spec.node_name.clear();  // an emptied field disappears
  pod.metadata.labels["wave"] = "2";
  const json out = ToJson(pod);
  EXPECT_EQ(out["spec"]["containers"][0]["env"][0]["value"], "1");
  EXPECT_EQ(out["spec"]["containers"][0]["env"][1]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.name");
  EXPECT_EQ(out["spec"]["containers"][0]["ports"][0]["containerPort"], 29500);
  EXPECT_FALSE(out["spec"].contains("nodeName"));
  EXPECT_EQ(out["spec"]["schedulerName"], "default-scheduler");
  EXPECT_EQ(out["status"]["podIP"], "10.1.2.3");
  EXPECT_EQ(out["metadata"]["managedFields"][0]["manager"], "kubectl");
  EXPECT_EQ(out["metadata"]["labels"]["wave"], "2");
}

TEST(CoreTypes, APodWithoutItsRawJsonKeepsItsTypedFieldsAndEncodesOnlyThem) {
  ASSERT_OK_AND_ASSIGN(const Pod decoded, Pod::FromJson(kPodJson));
  Pod pod = decoded;
  DropRawJson(pod);
  EXPECT_TRUE(pod.raw.is_null());
  EXPECT_TRUE(pod.spec.raw.is_null());
  EXPECT_TRUE(pod.status.raw.is_null());
  EXPECT_TRUE(pod.metadata.unknown_fields.is_null());
  EXPECT_TRUE(pod.metadata.owner_references[0].unknown_fields.is_null());
  EXPECT_TRUE(pod.spec.containers[0].raw.is_null());
  EXPECT_TRUE(pod.spec.containers[0].env[1].raw.is_null());
  EXPECT_TRUE(pod.spec.containers[0].volume_mounts[0].raw.is_null());
  EXPECT_TRUE(pod.spec.volumes[0].raw.is_null());

  // The typed fields are untouched.
  EXPECT_EQ(pod.metadata.uid, decoded.metadata.uid);
  EXPECT_EQ(pod.metadata.owner_references[0].controller, true);
  EXPECT_EQ(pod.spec.containers[0].env[0].value, "0");
  EXPECT_EQ(pod.spec.containers[0].resources.limits, decoded.spec.containers[0].resources.limits);
  EXPECT_EQ(pod.spec.node_name, "gpu-1");
  EXPECT_EQ(pod.status.container_statuses[0].last_state.exit_code, 137);

  // Encoding writes them alone: what only the raw JSON held is gone.
  const json out = ToJson(pod);
  EXPECT_EQ(out["metadata"]["uid"], "u-1");
  EXPECT_EQ(out["spec"]["containers"][0]["env"][0]["value"], "0");
  EXPECT_EQ(out["spec"]["nodeName"], "gpu-1");
  EXPECT_EQ(out["status"]["phase"], "Running");
  EXPECT_FALSE(out["metadata"].contains("managedFields"));
  EXPECT_FALSE(out["spec"]["containers"][0].contains("ports"));
  EXPECT_FALSE(out["spec"]["containers"][0]["env"][1].contains("valueFrom"));
  EXPECT_FALSE(out["spec"].contains("schedulerName"));
  EXPECT_FALSE(out["status"].contains("podIP"));
}

TEST(CoreTypes, NewPodEncodesWithTypeMeta) {
  Pod pod;
  pod.metadata.name = "p";
  pod.metadata.namespace_ = "default";
  Container container;
  container.name = "c";
  container.image = "busybox";
  pod.spec.containers.push_back(container);
  pod.spec.restart_policy = "Never";
  EXPECT_EQ(ToJson(pod), json::parse(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","namespace":"default"},
      "spec":{"containers":[{"name":"c","image":"busybox"}],"restartPolicy":"Never"}})"));
}

TEST(CoreTypes, BadFieldsAreReportedByPath) {
  json bad = kPodJson;
  bad["spec"]["containers"][0]["resources"]["limits"] = json::array();
  EXPECT_THAT(Pod::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Pod team-a/w-0: spec.containers[0].resources.limits: must be an "
                                 "object, got array")));
  bad = kPodJson;
  bad["status"]["containerStatuses"][0]["restartCount"] = "two";
  EXPECT_THAT(Pod::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.containerStatuses[0].restartCount: must be an integer")));
  bad = kPodJson;
  bad["metadata"]["labels"] = "x";
  EXPECT_THAT(Pod::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Pod: metadata.labels")));
  EXPECT_THAT(Pod::FromJson(json{{"kind", "Node"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kind: must be \"Pod\"")));
  EXPECT_THAT(ConfigMap::FromJson(json::array()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ConfigMap")));
}

TEST(CoreTypes, LeaseMicroTimes) {
  ASSERT_OK_AND_ASSIGN(Lease lease, Lease::FromJson(json::parse(R"({
    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "wavepool-controller", "namespace": "wavepool-system"},
    "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
             "acquireTime": "2026-05-01T10:00:00.000000Z",
             "renewTime": "2026-05-01T10:00:07.250000Z", "leaseTransitions": 3}})")));
  EXPECT_EQ(lease.spec.holder_identity, "pod-a");
  EXPECT_EQ(lease.spec.lease_duration_seconds, 15);
  EXPECT_EQ(lease.spec.lease_transitions, 3);
  ASSERT_TRUE(lease.spec.acquire_time && lease.spec.renew_time);
  // 10:00:07.25 - 10:00:00 = 7250 ms.
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(*lease.spec.renew_time -
                                                                  *lease.spec.acquire_time)
                .count(),
            7250);
  lease.spec.renew_time = *lease.spec.acquire_time + std::chrono::microseconds(8'000'001);
  EXPECT_EQ(ToJson(lease)["spec"]["renewTime"], "2026-05-01T10:00:08.000001Z");
  json bad = ToJson(lease);
  bad["spec"]["renewTime"] = "yesterday";
  EXPECT_THAT(Lease::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.renewTime")));
}

TEST(CoreTypes, EventNodeConfigMapNamespace) {
  Event event;
  event.metadata.name = "vgg.1";
  event.metadata.namespace_ = "team-a";
  event.involved_object.kind = "TrainingJob";
  event.involved_object.name = "vgg";
  event.reason = "Planned";
  event.type = "Normal";
  event.count = 2;
  event.source_component = "wavepool-controller";
  ASSERT_OK_AND_ASSIGN(Event decoded, Event::FromJson(ToJson(event)));
  EXPECT_EQ(decoded.involved_object.name, "vgg");
  EXPECT_EQ(decoded.count, 2);
  EXPECT_EQ(decoded.source_component, "wavepool-controller");
  EXPECT_EQ(ToJson(event)["source"], (json{{"component", "wavepool-controller"}}));

  ASSERT_OK_AND_ASSIGN(Node node, Node::FromJson(json::parse(R"({"kind":"Node",
      "metadata":{"name":"gpu-1"},"spec":{"unschedulable":true,"taints":[{"key":"k"}]},
      "status":{"allocatable":{"nvidia.com/gpu":"8"},
                "conditions":[{"type":"Ready","status":"True"}]}})")));
  EXPECT_TRUE(node.unschedulable);
  EXPECT_EQ(node.allocatable.at("nvidia.com/gpu"), "8");
  EXPECT_EQ(node.conditions[0].type, "Ready");
  node.unschedulable = false;
  const json node_out = ToJson(node);
  EXPECT_FALSE(node_out["spec"].contains("unschedulable"));
  EXPECT_EQ(node_out["spec"]["taints"][0]["key"], "k");

  ASSERT_OK_AND_ASSIGN(
      ConfigMap map,
      ConfigMap::FromJson(json::parse(R"({"metadata":{"name":"p"},"data":{"plan.json":"{}"}})")));
  EXPECT_EQ(map.data.at("plan.json"), "{}");
  EXPECT_EQ(ToJson(map)["apiVersion"], "v1");
  ASSERT_OK_AND_ASSIGN(
      Namespace ns,
      Namespace::FromJson(json::parse(R"({"metadata":{"name":"a"},"status":{"phase":"Active"}})")));
  EXPECT_EQ(ns.phase, "Active");
}

TEST(CoreTypes, ServiceKeepsItsPortsAndReportsABadSelectorByPath) {
  const json service_json = json::parse(R"({"apiVersion":"v1","kind":"Service",
      "metadata":{"name":"vgg-g0","namespace":"team-a","uid":"s-1",
                  "labels":{"wavepool.dev/gang-generation":"0"},
                  "ownerReferences":[{"apiVersion":"wavepool.dev/v1alpha1","kind":"TrainingJob",
                                      "name":"vgg","uid":"j-1","controller":true}]},
      "spec":{"clusterIP":"None","publishNotReadyAddresses":true,
              "selector":{"wavepool.dev/job":"vgg"},
              "ports":[{"name":"rendezvous","port":29500}]}})");
  ASSERT_OK_AND_ASSIGN(Service service, Service::FromJson(service_json));
  EXPECT_EQ(service.metadata.uid, "s-1");
  EXPECT_EQ(service.metadata.labels.at("wavepool.dev/gang-generation"), "0");
  ASSERT_EQ(service.metadata.owner_references.size(), 1u);
  EXPECT_EQ(service.metadata.owner_references[0].uid, "j-1");
  EXPECT_EQ(service.spec.cluster_ip, "None");
  EXPECT_TRUE(service.spec.publish_not_ready_addresses);
  EXPECT_EQ(service.spec.selector.at("wavepool.dev/job"), "vgg");
  EXPECT_EQ(ToJson(service), service_json);  // ports kept from raw
  Service lean = service;
  DropRawJson(lean);
  EXPECT_TRUE(lean.raw.is_null());
  EXPECT_TRUE(lean.spec.raw.is_null());
  EXPECT_TRUE(lean.metadata.owner_references[0].unknown_fields.is_null());
  EXPECT_EQ(lean.spec.selector, service.spec.selector);
  EXPECT_FALSE(ToJson(lean)["spec"].contains("ports"));

  json bad = service_json;
  bad["spec"]["selector"]["wavepool.dev/job"] = json::array();
  EXPECT_THAT(Service::FromJson(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("Service team-a/vgg-g0: spec.selector")));
  bad = service_json;
  bad["spec"] = "headless";
  EXPECT_THAT(Service::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec: must be an object")));
}

TEST(CoreTypes, MistypedConfigMapDataIsReportedByPath) {
  EXPECT_THAT(
      ConfigMap::FromJson(
          json::parse(R"({"metadata":{"name":"layers","namespace":"team-a"},"data":{"k":true}})")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ConfigMap team-a/layers: data")));
}

TEST(CoreTypes, QuantitiesMayBeNumbersAndUnmodelledFieldsAreNotErrors) {
  ASSERT_OK_AND_ASSIGN(Node node, Node::FromJson(json::parse(R"({
    "apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"},
    "spec": {"podCIDR": "10.0.0.0/24", "unschedulable": true},
    "status": {"capacity": {"cpu": 8, "nvidia.com/gpu": "4"}, "nodeInfo": {"osImage": "x"},
               "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t"}]}})")));
  EXPECT_TRUE(node.unschedulable);
  EXPECT_EQ(node.capacity.at("cpu"), "8");
  EXPECT_EQ(node.capacity.at("nvidia.com/gpu"), "4");
  ASSERT_EQ(node.conditions.size(), 1u);
  EXPECT_EQ(node.conditions[0].type, "Ready");
  EXPECT_EQ(ToJson(node)["status"]["nodeInfo"]["osImage"], "x");

  json bad = ToJson(node);
  bad["spec"]["unschedulable"] = "yes";
  EXPECT_THAT(Node::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Node gpu-1: spec.unschedulable: must be a boolean, got string")));
  bad = ToJson(node);
  bad["status"]["conditions"] = json::object();
  EXPECT_THAT(Node::FromJson(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Node gpu-1: status.conditions: must be an array, got object")));
}

}  // namespace
}  // namespace wavepool::kube
