// Table answers for `kubectl get`, checked against the columns and cells kube-apiserver 1.32
// renders (pkg/printers/internalversion for built-ins, the CRD's additionalPrinterColumns).
#include "tests/support/apiserver/table.h"

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An RFC 3339 timestamp `ago` before now. Ages in these tests are whole hours or days, which
// render the same for a minute: no test depends on how fast it runs.
std::string Ago(std::chrono::seconds ago) {
  const std::time_t t =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() - ago);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

constexpr std::chrono::hours kThreeHours{3};

ResourceInfo Resource(std::string group, std::string kind, std::string plural) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = "v1";
  r.kind = std::move(kind);
  r.plural = std::move(plural);
  return r;
}

json Object(const std::string& name, const std::string& created) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"resourceVersion", "42"},
            {"creationTimestamp", created}}}};
}

std::vector<std::string> ColumnNames(const json& table) {
  std::vector<std::string> names;
  for (const json& column : table.at("columnDefinitions")) names.push_back(column.at("name"));
  return names;
}

json OnlyRowCells(const ResourceInfo& resource, const json& object) {
  const json table = ToTable(resource, {object}, nullptr, IncludeObject::kNone);
  EXPECT_EQ(table.at("rows").size(), 1u);
  return table.at("rows").at(0).at("cells");
}

TEST(Table, KubectlGetsAcceptHeaderAsksForATable) {
  EXPECT_TRUE(AcceptsTable(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
      "g=meta.k8s.io,application/json"));
  EXPECT_TRUE(AcceptsTable("application/json; g=meta.k8s.io; v=v1; as=Table"));
  EXPECT_FALSE(AcceptsTable("application/json"));
  EXPECT_FALSE(AcceptsTable(""));
  EXPECT_FALSE(AcceptsTable("application/json;as=Table;v=v1beta1;g=meta.k8s.io"));
  EXPECT_FALSE(AcceptsTable("application/yaml;as=Table;v=v1;g=meta.k8s.io"));
  EXPECT_FALSE(AcceptsTable(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"));
}

TEST(Table, IncludeObjectDefaultsToMetadataAndRejectsUnknownValues) {
  ASSERT_OK_AND_ASSIGN(IncludeObject none, ParseIncludeObject("None"));
  EXPECT_EQ(none, IncludeObject::kNone);
  ASSERT_OK_AND_ASSIGN(IncludeObject metadata, ParseIncludeObject("Metadata"));
  EXPECT_EQ(metadata, IncludeObject::kMetadata);
  ASSERT_OK_AND_ASSIGN(IncludeObject object, ParseIncludeObject("Object"));
  EXPECT_EQ(object, IncludeObject::kObject);
  ASSERT_OK_AND_ASSIGN(IncludeObject absent, ParseIncludeObject(""));  // the server's default
  EXPECT_EQ(absent, IncludeObject::kMetadata);
  EXPECT_THAT(ParseIncludeObject("Everything"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"Everything\"")));
}

TEST(Table, PodRowShowsReadyStatusRestartsAndAge) {
  json pod = Object("web-0", Ago(std::chrono::hours(5)));
  pod["spec"] = {{"nodeName", "gpu-node-1"},
                 {"containers", {{{"name", "app"}}, {{"name", "log"}}}}};
  // Walked last to first: "log" is running and ready (1 ready), then "app" waits in
  // CrashLoopBackOff, whose reason wins. Restarts: 3 + 1 = 4, the last one 4 hours
  // ago (under 3 hours it would read in minutes: "120m").
  pod["status"] = {
      {"phase", "Running"},
      {"podIPs", {{{"ip", "10.0.0.7"}}}},
      {"containerStatuses",
       {{{"name", "app"},
         {"ready", false},
         {"restartCount", 3},
         {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
         {"lastState",
          {{"terminated", {{"exitCode", 1}, {"finishedAt", Ago(std::chrono::hours(4))}}}}}},
        {{"name", "log"},
         {"ready", true},
         {"restartCount", 1},
         {"state", {{"running", {{"startedAt", Ago(kThreeHours)}}}}}}}}};
  const json table = ToTable(Resource("", "Pod", "pods"), {pod}, nullptr, IncludeObject::kNone);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Ready", "Status", "Restarts", "Age", "IP",
                                              "Node", "Nominated Node", "Readiness Gates"));
  EXPECT_EQ(table.at("columnDefinitions").at(0).at("format"), "name");
  EXPECT_EQ(table.at("columnDefinitions").at(4).at("priority"), 0);
  EXPECT_EQ(table.at("columnDefinitions").at(5).at("priority"), 1);  // shown by -o wide
  EXPECT_EQ(table.at("rows").at(0).at("cells"),
            json({"web-0", "1/2", "CrashLoopBackOff", "4 (4h ago)", "5h", "10.0.0.7", "gpu-node-1",
                  "<none>", "<none>"}));
}

TEST(Table, PodStatusFollowsPhaseTerminationAndDeletion) {
  json pod = Object("job-0", Ago(kThreeHours));
  pod["spec"] = {{"containers", {{{"name", "main"}}}}};
  pod["status"] = {{"phase", "Pending"}};
  EXPECT_EQ(OnlyRowCells(Resource("", "Pod", "pods"), pod).at(2), "Pending");

  pod["status"] = {{"phase", "Failed"},
                   {"containerStatuses",
                    {{{"name", "main"}, {"state", {{"terminated", {{"exitCode", 137}}}}}}}}};
  EXPECT_EQ(OnlyRowCells(Resource("", "Pod", "pods"), pod).at(2), "ExitCode:137");

  // Readiness gates: one of the two declared has a True condition.
  pod["spec"]["readinessGates"] = {{{"conditionType", "wavepool.dev/placed"}},
                                   {{"conditionType", "wavepool.dev/warm"}}};
  pod["status"] = {{"phase", "Running"},
                   {"conditions",
                    {{{"type", "wavepool.dev/placed"}, {"status", "True"}},
                     {{"type", "wavepool.dev/warm"}, {"status", "False"}}}}};
  EXPECT_EQ(OnlyRowCells(Resource("", "Pod", "pods"), pod).at(8), "1/2");

  pod["status"] = {{"phase", "Running"}};
  pod["metadata"]["deletionTimestamp"] = Ago(std::chrono::seconds(0));
  const json cells = OnlyRowCells(Resource("", "Pod", "pods"), pod);
  EXPECT_EQ(cells.at(1), "0/1");
  EXPECT_EQ(cells.at(2), "Terminating");
  EXPECT_EQ(cells.at(3), "0");
}

TEST(Table, NodeRowShowsReadinessRolesAndKubeletVersion) {
  json node = Object("gpu-node-1", Ago(std::chrono::hours(53)));
  node["metadata"]["labels"] = {{"node-role.kubernetes.io/worker", ""},
                                {"node-role.kubernetes.io/gpu", ""},
                                {"kubernetes.io/hostname", "gpu-node-1"}};
  node["spec"] = {{"unschedulable", true}};
  node["status"] = {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
                    {"addresses", {{{"type", "InternalIP"}, {"address", "192.168.1.5"}}}},
                    {"nodeInfo", {{"kubeletVersion", "v1.32.0"}, {"osImage", "Debian 12"}}}};
  const json table = ToTable(Resource("", "Node", "nodes"), {node}, nullptr, IncludeObject::kNone);
  EXPECT_THAT(ColumnNames(table),
              ElementsAre("Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
                          "OS-Image", "Kernel-Version", "Container-Runtime"));
  // 53 hours: 2 days and 5 hours.
  EXPECT_EQ(table.at("rows").at(0).at("cells"),
            json({"gpu-node-1", "Ready,SchedulingDisabled", "gpu,worker", "2d5h", "v1.32.0",
                  "192.168.1.5", "<none>", "Debian 12", "<unknown>", "<unknown>"}));
  node["status"].erase("conditions");
  EXPECT_EQ(OnlyRowCells(Resource("", "Node", "nodes"), node).at(1), "Unknown,SchedulingDisabled");
}

TEST(Table, ConfigMapDataCountsDataAndBinaryData) {
  json configmap = Object("plan", Ago(std::chrono::hours(24 * 400)));
  configmap["data"] = {{"plan.json", "{}"}, {"waves.csv", ""}};
  configmap["binaryData"] = {{"blob", "AAEC"}};
  const ResourceInfo resource = Resource("", "ConfigMap", "configmaps");
  const json table = ToTable(resource, {configmap}, nullptr, IncludeObject::kNone);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Data", "Age"));
  // 2 + 1 entries; 400 days render as days below two years.
  EXPECT_EQ(table.at("rows").at(0).at("cells"), json({"plan", 3, "400d"}));
}

TEST(Table, NamespaceLeaseAndOtherBuiltinRows) {
  json ns = Object("team-a", Ago(std::chrono::hours(24 * 365 * 3)));
  ns["status"] = {{"phase", "Active"}};
  EXPECT_EQ(OnlyRowCells(Resource("", "Namespace", "namespaces"), ns),
            json({"team-a", "Active", "3y"}));

  json lease = Object("wavepool-controller", Ago(std::chrono::minutes(90)));
  lease["spec"] = {{"holderIdentity", "controller-7f9c"}};
  EXPECT_EQ(OnlyRowCells(Resource("coordination.k8s.io", "Lease", "leases"), lease),
            json({"wavepool-controller", "controller-7f9c", "90m"}));

  const json service = Object("web", Ago(kThreeHours));
  const json table =
      ToTable(Resource("", "Service", "services"), {service}, nullptr, IncludeObject::kNone);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Age"));
  EXPECT_EQ(table.at("rows").at(0).at("cells"), json({"web", "3h"}));
}

TEST(Table, CustomResourceDefinitionsShowTheirCreationTime) {
  const json crd = Object("trainingjobs.wavepool.dev", "2026-01-02T03:04:05Z");
  const json table = ToTable(
      Resource("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions"),
      {crd}, nullptr, IncludeObject::kNone);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Created At"));
  EXPECT_EQ(table.at("columnDefinitions").at(1).at("type"), "date");
  EXPECT_EQ(table.at("rows").at(0).at("cells"),
            json({"trainingjobs.wavepool.dev", "2026-01-02T03:04:05Z"}));
}

TEST(Table, EventRowNamesTheObjectAndTheSource) {
  json event = Object("web-0.17a2", Ago(kThreeHours));
  event["involvedObject"] = {
      {"kind", "Pod"}, {"name", "web-0"}, {"fieldPath", "spec.containers{app}"}};
  event["type"] = "Warning";
  event["reason"] = "BackOff";
  event["message"] = "Back-off restarting failed container\n";
  event["source"] = {{"component", "kubelet"}, {"host", "gpu-node-1"}};
  event["firstTimestamp"] = Ago(std::chrono::hours(5));
  event["lastTimestamp"] = Ago(kThreeHours);
  event["count"] = 12;
  const json table =
      ToTable(Resource("", "Event", "events"), {event}, nullptr, IncludeObject::kNone);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Last Seen", "Type", "Reason", "Object", "Subobject",
                                              "Source", "Message", "First Seen", "Count", "Name"));
  EXPECT_EQ(
      table.at("rows").at(0).at("cells"),
      json({"3h", "Warning", "BackOff", "pod/web-0", "spec.containers{app}", "kubelet, gpu-node-1",
            "Back-off restarting failed container", "5h", 12, "web-0.17a2"}));
}

TEST(Table, ListMetadataAndRowObjectsFollowIncludeObject) {
  const ResourceInfo configmaps = Resource("", "ConfigMap", "configmaps");
  const json configmap = Object("plan", Ago(kThreeHours));
  ListResult list;
  list.resource_version = "77";
  list.continue_token = "next-page";
  list.remaining_item_count = 5;

  const json metadata_table = ToTable(configmaps, {configmap}, &list, IncludeObject::kMetadata);
  EXPECT_EQ(metadata_table.at("kind"), "Table");
  EXPECT_EQ(metadata_table.at("apiVersion"), "meta.k8s.io/v1");
  EXPECT_EQ(
      metadata_table.at("metadata"),
      json({{"resourceVersion", "77"}, {"continue", "next-page"}, {"remainingItemCount", 5}}));
  const json& partial = metadata_table.at("rows").at(0).at("object");
  EXPECT_EQ(partial.at("kind"), "PartialObjectMetadata");
  EXPECT_EQ(partial.at("apiVersion"), "meta.k8s.io/v1");
  EXPECT_EQ(partial.at("metadata").at("name"), "plan");

  const json object_table = ToTable(configmaps, {configmap}, nullptr, IncludeObject::kObject);
  EXPECT_EQ(object_table.at("metadata"), json({{"resourceVersion", "42"}}));  // the object's
  const json& full = object_table.at("rows").at(0).at("object");
  EXPECT_EQ(full.at("kind"), "ConfigMap");
  EXPECT_EQ(full.at("apiVersion"), "v1");

  const json none_table = ToTable(configmaps, {configmap}, &list, IncludeObject::kNone);
  EXPECT_FALSE(none_table.at("rows").at(0).contains("object"));
  EXPECT_TRUE(ToTable(configmaps, {}, &list, IncludeObject::kNone).at("rows").empty());
}

ResourceInfo TrainingJobs(json printer_columns) {
  ResourceInfo r = Resource("wavepool.dev", "TrainingJob", "trainingjobs");
  r.version = "v1alpha1";
  r.crd_name = "trainingjobs.wavepool.dev";
  r.crd_version = {{"name", "v1alpha1"}, {"served", true}, {"storage", true}};
  if (!printer_columns.is_null()) r.crd_version["additionalPrinterColumns"] = printer_columns;
  return r;
}

TEST(Table, CustomResourceRowsFollowTheAdditionalPrinterColumns) {
  const ResourceInfo jobs = TrainingJobs(json::parse(R"([
      {"name":"GPUs","type":"integer","jsonPath":".spec.gpus"},
      {"name":"Phase","type":"string","jsonPath":".status.phase"},
      {"name":"Model","type":"string","jsonPath":".spec.model","priority":1}])"));
  json job = Object("vgg", Ago(kThreeHours));
  job["spec"] = {{"gpus", 8}, {"model", "vgg16"}};
  job["status"] = {{"phase", "Running"}};
  const json table = ToTable(jobs, {job}, nullptr, IncludeObject::kNone);
  // Name first, then the declared columns; no Age because the CRD declares none.
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "GPUs", "Phase", "Model"));
  EXPECT_EQ(table.at("columnDefinitions").at(3).at("priority"), 1);
  EXPECT_EQ(table.at("rows").at(0).at("cells"), json({"vgg", 8, "Running", "vgg16"}));
}

TEST(Table, CustomResourceWithoutPrinterColumnsShowsNameAndAge) {
  const json job = Object("vgg", Ago(kThreeHours));
  const json table = ToTable(TrainingJobs(json()), {job}, nullptr, IncludeObject::kObject);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Age"));
  EXPECT_EQ(table.at("rows").at(0).at("cells"), json({"vgg", "3h"}));
  EXPECT_EQ(table.at("rows").at(0).at("object").at("apiVersion"), "wavepool.dev/v1alpha1");
}

}  // namespace
}  // namespace wavepool::testing::apiserver
