// The CRDs in crds/ as the test API server sees them: accepted and served with their names,
// scope, status subresource and printer columns; the examples accepted and defaulted exactly as
// api::SetDefaults defaults them; and the cross-field rules present as CEL and evaluated by the
// server, refusing what api refuses with the same field path and message.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/crds/crd_fixture.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/training_job.h"
#include "wavepool/api/validation.h"
#include "wavepool/api/yaml.h"
#include "yaml-cpp/yaml.h"

namespace wavepool::testing::crds {
namespace {

using apiserver::ResourceInfo;
using apiserver::WriteResult;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// name -> jsonPath of a version's additionalPrinterColumns, in order.
std::vector<std::pair<std::string, std::string>> Columns(const ResourceInfo& resource,
                                                         int priority) {
  std::vector<std::pair<std::string, std::string>> columns;
  for (const json& column : resource.crd_version["additionalPrinterColumns"]) {
    if (column.value("priority", 0) != priority) continue;
    columns.emplace_back(column["name"], column["jsonPath"]);
  }
  return columns;
}

TEST_F(CrdStoreTest, TrainingJobCrdIsServedWithItsNamesAndSubresource) {
  EXPECT_EQ(jobs_.kind, "TrainingJob");
  EXPECT_EQ(jobs_.list_kind, "TrainingJobList");
  EXPECT_EQ(jobs_.singular, "trainingjob");
  EXPECT_TRUE(jobs_.namespaced);
  EXPECT_TRUE(jobs_.status_subresource);
  EXPECT_THAT(jobs_.short_names, ElementsAre("tj"));
  EXPECT_THAT(jobs_.categories, ElementsAre("wavepool", "all"));
  using Column = std::pair<std::string, std::string>;
  EXPECT_THAT(
      Columns(jobs_, 0),
      ElementsAre(Column("Role", ".spec.role"), Column("Phase", ".status.phase"),
                  Column("GPUs", ".status.gpus"), Column("Strategy", ".status.plan.strategy"),
                  Column("Iter", ".status.progress.step"),
                  Column("Slowdown", ".status.progress.foregroundSlowdown"),
                  Column("Age", ".metadata.creationTimestamp")));
  EXPECT_THAT(Columns(jobs_, 1),
              ElementsAre(Column("Model", ".spec.model.name"),
                          Column("Restarts", ".status.restarts"), Column("MaxGPUs", ".spec.gpus")));
}

TEST_F(CrdStoreTest, GpuNodeCrdIsClusterScopedAndServed) {
  EXPECT_EQ(nodes_.kind, "GPUNode");
  EXPECT_EQ(nodes_.list_kind, "GPUNodeList");
  EXPECT_FALSE(nodes_.namespaced);
  EXPECT_TRUE(nodes_.status_subresource);
  EXPECT_THAT(nodes_.short_names, ElementsAre("gpun"));
  EXPECT_THAT(nodes_.categories, ElementsAre("wavepool"));
}

TEST_F(CrdStoreTest, CrdsAreEstablished) {
  for (const char* name : {"trainingjobs.wavepool.dev", "gpunodes.wavepool.dev"}) {
    ASSERT_OK_AND_ASSIGN(json crd, store_->Get(crds_, "", name));
    std::map<std::string, std::string> conditions;
    for (const json& condition : crd["status"]["conditions"]) {
      conditions[condition["type"]] = condition["status"];
    }
    EXPECT_EQ(conditions["Established"], "True") << name;
    EXPECT_EQ(conditions["NamesAccepted"], "True") << name;
  }
}

// The printer-column paths point at fields the api status really writes: a status built with
// api's types and encoded by api::ToJson has a value at each of them.
TEST_F(CrdStoreTest, PrinterColumnsReadFieldsApiWrites) {
  api::TrainingJobStatus status;
  status.phase = api::JobPhase::kRunning;
  status.plan = api::PlanSummary{api::Strategy::kBurstParallel, 0.5, 1 << 20, {8, 1}, 1.2};
  status.progress = api::TrainingProgress{120, 64.0, 0.5, 1.07};
  status.gpus = 6;
  status.restarts = 2;
  api::TrainingJob job;
  job.status = status;
  const json encoded = api::ToJson(job);
  EXPECT_EQ(encoded["status"]["gpus"], 6);
  EXPECT_EQ(encoded["status"]["phase"], "Running");
  EXPECT_EQ(encoded["status"]["plan"]["strategy"], "BurstParallel");
  EXPECT_EQ(encoded["status"]["progress"]["step"], 120);
  EXPECT_EQ(encoded["status"]["progress"]["foregroundSlowdown"], 1.07);
  EXPECT_EQ(encoded["status"]["restarts"], 2);
  // A started job with no restarts shows 0 in RESTARTS, not a blank cell.
  job.status.restarts = 0;
  EXPECT_EQ(api::ToJson(job)["status"]["restarts"], 0);
}

class ExampleTest : public CrdStoreTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void CheckAcceptedAndDefaultedAsApiDefaultsIt(const json& manifest) {
    ASSERT_OK_AND_ASSIGN(WriteResult stored, CreateJob(manifest));
    EXPECT_THAT(stored.warnings, IsEmpty());

    ASSERT_OK_AND_ASSIGN(api::TrainingJob from_server, api::TrainingJob::FromJson(stored.object));
    ASSERT_OK_AND_ASSIGN(api::TrainingJob expected, api::TrainingJob::FromJson(manifest));
    api::SetDefaults(&expected);
    ASSERT_OK(api::Validate(expected));

    // What the server did not fill: collocation (the manifest's own fields survive untouched).
    ASSERT_OK_AND_ASSIGN(api::TrainingJob as_written, api::TrainingJob::FromJson(manifest));
    json server_spec = api::ToJson(from_server)["spec"];
    json expected_spec = api::ToJson(expected)["spec"];
    EXPECT_EQ(server_spec.value("collocation", json()),
              api::ToJson(as_written)["spec"].value("collocation", json()));
    server_spec.erase("collocation");
    expected_spec.erase("collocation");
    EXPECT_EQ(server_spec, expected_spec) << "server:\n"
                                          << server_spec.dump(2) << "\napi:\n"
                                          << expected_spec.dump(2);

    // Finishing the defaulting with api's SetDefaults gives a valid job.
    api::SetDefaults(&from_server);
    EXPECT_OK(api::Validate(from_server));
  }
};

// The server's defaults are api's defaults: the stored spec, decoded by api, equals the
// manifest decoded and defaulted by api::SetDefaults, except the role-dependent collocation
// defaults, which a schema cannot express and which the controller fills (defaults.h).
TEST_P(ExampleTest, IsAcceptedAndDefaultedAsApiDefaultsIt) {
  // An example may hold several jobs (a foreground and a background to run together).
  ASSERT_OK_AND_ASSIGN(std::vector<api::YamlDocument> documents,
                       api::ParseDocuments(ReadSourceFile(GetParam())));
  int jobs = 0;
  for (const api::YamlDocument& document : documents) {
    if (document.value.is_null()) continue;
    ++jobs;
    SCOPED_TRACE(absl::StrCat("document at line ", document.line));
    CheckAcceptedAndDefaultedAsApiDefaultsIt(document.value);
  }
  EXPECT_GE(jobs, 1);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(YamlFilesIn("examples")),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name;
                           for (char c : param.param) {
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return name;
                         });

TEST(Examples, ThereAreExamplesToCheck) { EXPECT_GE(YamlFilesIn("examples").size(), 3u); }

// A job that sets nothing with a default gets every schema default: the values of defaults.h.
TEST_F(CrdStoreTest, MinimalJobGetsEveryDefaultOfDefaultsH) {
  const json manifest = json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "minimal", "namespace": "default"},
    "spec": {"role": "Background", "model": {"name": "resnet50"}, "globalBatchSize": 16,
             "gpus": 1, "steps": 10, "checkpoint": {"path": "/ckpt"}}
  })");
  ASSERT_OK_AND_ASSIGN(WriteResult stored, CreateJob(manifest));
  const json& spec = stored.object["spec"];
  EXPECT_EQ(spec["optimizer"], "SGD");
  EXPECT_EQ(spec["learningRate"], api::kDefaultLearningRate);
  EXPECT_EQ(spec["parallelism"], json::parse(R"({"strategy": "Auto", "amplificationLimit": 2.0,
                            "gpuCounts": "PowersOfTwo", "tickTock": "Auto"})"));
  EXPECT_EQ(spec["dataMovement"], json::parse(R"({"cpuSplit": "Auto", "preload": "Auto",
                                                  "weightCompression": "Auto"})"));
  EXPECT_EQ(spec["suspend"], false);
  EXPECT_FALSE(spec.contains("collocation"));  // Background: no collocation defaults at all.

  ASSERT_OK_AND_ASSIGN(api::TrainingJob from_server, api::TrainingJob::FromJson(stored.object));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob expected, api::TrainingJob::FromJson(manifest));
  api::SetDefaults(&expected);
  EXPECT_EQ(api::ToJson(from_server)["spec"], api::ToJson(expected)["spec"]);
}

// The GPUNode of docs/api.md: created by its agent, then its status written through /status.
TEST_F(CrdStoreTest, GpuNodeWithStatusIsAccepted) {
  const json node = json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "GPUNode",
    "metadata": {"name": "node-a"}, "spec": {"nodeName": "node-a"}})");
  const json status = json::parse(R"({
    "agentVersion": "0.1.0", "heartbeatTime": "2026-05-01T10:00:00Z",
    "gpus": [{"index": 0, "uuid": "GPU-5a1e", "model": "NVIDIA A100-SXM4-80GB",
              "memoryBytes": 85899345920,
              "occupancy": {"foreground": 0.75, "background": 0.2},
              "memoryWave": {"peakBytes": 60000000000, "troughBytes": 20000000000,
                             "periodSeconds": 0.25, "phaseOffsetSeconds": 0.125,
                             "headroomBytes": 25899345920},
              "tasks": [{"namespace": "team-a", "job": "vgg", "pod": "vgg-0",
                         "role": "Foreground", "pid": 4242}]},
             {"index": 1, "uuid": "GPU-77b0", "model": "NVIDIA A100-SXM4-80GB",
              "memoryBytes": 85899345920, "occupancy": {"foreground": 0, "background": 0},
              "tasks": []}],
    "conditions": [{"type": "Ready", "status": "True", "reason": "AgentReporting",
                    "message": "", "lastTransitionTime": "2026-05-01T10:00:00Z"}],
    "message": ""})");
  ASSERT_OK(CreateNode(node).status());
  ASSERT_OK_AND_ASSIGN(WriteResult written, WriteStatus(nodes_, "", "node-a", status));
  EXPECT_THAT(written.warnings, IsEmpty());
  EXPECT_EQ(written.object["status"], status);
  ASSERT_OK_AND_ASSIGN(api::GpuNode decoded, api::GpuNode::FromJson(written.object));
  EXPECT_OK(api::Validate(decoded));
  // What api writes, the server takes back unchanged.
  ASSERT_OK_AND_ASSIGN(WriteResult rewritten,
                       WriteStatus(nodes_, "", "node-a", api::ToJson(decoded)["status"]));
  EXPECT_EQ(rewritten.object["status"], api::ToJson(decoded)["status"]);
}

// A status built with api's types and encoded by api passes the server's schema.
TEST_F(CrdStoreTest, ApiEncodedTrainingJobStatusIsAccepted) {
  ASSERT_OK_AND_ASSIGN(json manifest, LoadSourceYaml("examples/vgg16-foreground.yaml"));
  ASSERT_OK(CreateJob(manifest).status());
  api::TrainingJob job;
  job.status.phase = api::JobPhase::kRunning;
  job.status.observed_generation = 1;
  job.status.plan =
      api::PlanSummary{api::Strategy::kBurstParallel, 0.0156, 4294967296, {8, 1}, 1.2};
  job.status.placement = {{"vgg16-0", "node-a", {"GPU-5a1e", "GPU-77b0"}}};
  job.status.progress = api::TrainingProgress{120, 2051.3, 0.0156, 1.04};
  job.status.restarts = 1;
  job.status.gpus = 8;
  api::SetCondition(&job.status.conditions,
                    {"Planned", api::ConditionStatus::kTrue, 1, "", "PlanFound", "8 GPUs"},
                    std::chrono::system_clock::now());
  const json status = api::ToJson(job)["status"];
  ASSERT_OK_AND_ASSIGN(WriteResult written, WriteStatus(jobs_, "default", "vgg16", status));
  EXPECT_EQ(written.object["status"], status);
}

// ---- CEL rules: present, with messages, on the field api's error names ----

// Every x-kubernetes-validations rule under `schema`, keyed by the schema path it sits on
// ("spec", "spec.model", ...), as {rule, message, fieldPath}.
struct CelRule {
  std::string at;
  std::string rule;
  std::string message;
  std::string field_path;
};

void CollectRules(const json& schema, const std::string& at, std::vector<CelRule>* rules) {
  if (!schema.is_object()) return;
  for (const json& rule : schema.value("x-kubernetes-validations", json::array())) {
    rules->push_back(
        {at, rule.value("rule", ""), rule.value("message", ""), rule.value("fieldPath", "")});
  }
  const json properties = schema.value("properties", json::object());
  for (const auto& [name, child] : properties.items()) {
    CollectRules(child, at.empty() ? name : at + "." + name, rules);
  }
  if (schema.contains("items")) CollectRules(schema["items"], at + "[]", rules);
}

std::vector<CelRule> RulesOf(const char* crd_path) {
  absl::StatusOr<json> crd = LoadSourceYaml(crd_path);
  EXPECT_OK(crd.status());
  std::vector<CelRule> rules;
  if (crd.ok()) {
    CollectRules((*crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "", &rules);
  }
  return rules;
}

// The field a rule's error names: where it sits plus its fieldPath.
std::string RuleField(const CelRule& rule) { return rule.at + rule.field_path; }

const CelRule* FindRule(const std::vector<CelRule>& rules, const std::string& field,
                        const std::string& message) {
  for (const CelRule& rule : rules) {
    if (RuleField(rule) == field && rule.message == message) return &rule;
  }
  return nullptr;
}

// Each cross-field rule of api/validation.h: the field path api's error names for a manifest
// that breaks it, and the CEL rule's message on that same path.
struct CrossFieldCase {
  std::string name;
  std::string base;  // an example
  json patch;        // RFC 7386 merge patch that breaks the rule
  std::string field;
  std::string message;
};

std::ostream& operator<<(std::ostream& os, const CrossFieldCase& c) { return os << c.name; }

std::vector<CrossFieldCase> TrainingJobCrossFieldCases() {
  const std::string vgg = "examples/vgg16-foreground.yaml";
  const std::string resnet = "examples/resnet50-background.yaml";
  return {
      {"BatchBelowGpus",
       vgg,
       {{"spec", {{"globalBatchSize", 4}}}},
       "spec.globalBatchSize",
       "must be >= spec.gpus (every GPU needs at least one sample of each batch)"},
      {"BackgroundWithTwoGpus",
       resnet,
       {{"spec", {{"gpus", 2}}}},
       "spec.gpus",
       "must be 1 for a Background job"},
      {"StepsAndEpochs",
       vgg,
       {{"spec", {{"epochs", 2}, {"datasetSamples", 1000}}}},
       "spec",
       "must set exactly one of steps or epochs"},
      {"NeitherStepsNorEpochs",
       vgg,
       {{"spec", {{"steps", nullptr}}}},
       "spec",
       "must set exactly one of steps or epochs"},
      {"EpochsWithoutDatasetSamples",
       resnet,
       {{"spec", {{"datasetSamples", nullptr}}}},
       "spec.datasetSamples",
       "required when spec.epochs is set"},
      {"DatasetBelowBatch",
       resnet,
       {{"spec", {{"datasetSamples", 10}}}},
       "spec.datasetSamples",
       "must be >= spec.globalBatchSize (an epoch holds at least one batch)"},
      {"BurstOnOneGpu",
       vgg,
       {{"spec", {{"gpus", 1}}}},
       "spec.parallelism.strategy",
       "BurstParallel and ModelParallelWaves need spec.gpus >= 2"},
      {"TickTockOff",
       vgg,
       {{"spec", {{"parallelism", {{"strategy", "TickTock"}, {"tickTock", "Off"}}}}}},
       "spec.parallelism.tickTock",
       "must not be Off when spec.parallelism.strategy is TickTock"},
      {"ForegroundWithMaxBatchSize",
       vgg,
       {{"spec", {{"collocation", {{"maxBatchSize", 8}}}}}},
       "spec.collocation.maxBatchSize",
       "only valid for a Background job"},
      {"BackgroundWithSlowdown",
       resnet,
       {{"spec", {{"collocation", {{"maxForegroundSlowdown", 1.2}}}}}},
       "spec.collocation.maxForegroundSlowdown",
       "only valid for a Foreground job"},
      {"BackgroundWithAllowBackground",
       resnet,
       {{"spec", {{"collocation", {{"allowBackground", true}}}}}},
       "spec.collocation.allowBackground",
       "only valid for a Foreground job"},
      {"BackgroundWithoutCheckpoint",
       resnet,
       {{"spec", {{"checkpoint", nullptr}}}},
       "spec.checkpoint.path",
       "required for a Background job (Background jobs are preemptible and resume from their "
       "checkpoint)"},
      {"IntervalWithoutPath",
       vgg,
       {{"spec", {{"checkpoint", {{"path", nullptr}}}}}},
       "spec.checkpoint.path",
       "required when an interval is set"},
      {"ModelNameAndLayerTable",
       vgg,
       {{"spec", {{"model", {{"layerTable", {{"configMap", "layers"}, {"key", "vgg.csv"}}}}}}}},
       "spec.model",
       "must set exactly one of name or layerTable"},
      {"ModelNeither",
       vgg,
       {{"spec", {{"model", {{"name", nullptr}}}}}},
       "spec.model",
       "must set exactly one of name or layerTable"},
      {"ConfigMapKeyDotDot",
       vgg,
       {{"spec",
         {{"model", {{"name", nullptr}, {"layerTable", {{"configMap", "l"}, {"key", ".."}}}}}}}},
       "spec.model.layerTable.key",
       "must be a ConfigMap key other than \".\" and \"..\""},
  };
}

// The {field, message} of every cause of a 422 answer.
std::vector<std::pair<std::string, std::string>> Causes(const absl::Status& status) {
  std::vector<std::pair<std::string, std::string>> causes;
  const json body = apiserver::StatusBodyOf(status);
  for (const json& cause : body["details"].value("causes", json::array())) {
    causes.emplace_back(cause.value("field", ""), cause.value("message", ""));
  }
  return causes;
}

// A rule's cause as kube-apiserver words it for a rule on an object node.
std::pair<std::string, std::string> RuleCause(const std::string& field,
                                              const std::string& message) {
  return {field, "Invalid value: \"object\": " + message};
}

class TrainingJobCrossFieldTest : public CrdStoreTest,
                                  public ::testing::WithParamInterface<CrossFieldCase> {};

TEST_P(TrainingJobCrossFieldTest, ApiAndServerRefuseItNamingTheSameField) {
  const CrossFieldCase& c = GetParam();
  ASSERT_OK_AND_ASSIGN(json manifest, LoadSourceYaml(c.base));
  ASSERT_EQ(ApiErrorPath(manifest), std::nullopt) << c.base;
  manifest.merge_patch(c.patch);
  EXPECT_EQ(ApiErrorPath(manifest), c.field) << manifest["spec"].dump();
  const std::vector<CelRule> rules = RulesOf(kTrainingJobCrdPath);
  EXPECT_NE(FindRule(rules, c.field, c.message), nullptr)
      << "no rule on " << c.field << " with message \"" << c.message << "\"";

  // The server evaluates the rule, after its defaults, and refuses the job with that cause only.
  const absl::StatusOr<WriteResult> made = CreateJob(manifest);
  ASSERT_EQ(apiserver::HttpCodeOf(made.status()), 422) << made.status();
  EXPECT_THAT(Causes(made.status()), ElementsAre(RuleCause(c.field, c.message)));
  EXPECT_THAT(std::string(made.status().message()),
              ::testing::HasSubstr(c.field + ": Invalid value: \"object\": " + c.message));
}

INSTANTIATE_TEST_SUITE_P(Rules, TrainingJobCrossFieldTest,
                         ::testing::ValuesIn(TrainingJobCrossFieldCases()),
                         [](const ::testing::TestParamInfo<CrossFieldCase>& param) {
                           return param.param.name;
                         });

TEST(GpuNodeCel, MemoryWaveRulesMatchApi) {
  const json base = json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "GPUNode",
    "metadata": {"name": "node-a"}, "spec": {"nodeName": "node-a"},
    "status": {"gpus": [{"index": 0, "uuid": "GPU-1",
      "memoryWave": {"peakBytes": 10, "troughBytes": 5, "periodSeconds": 1.0,
                     "phaseOffsetSeconds": 0.5, "headroomBytes": 0}}]}})");
  ASSERT_EQ(ApiGpuNodeErrorPath(base), std::nullopt);
  json trough = base;
  trough["status"]["gpus"][0]["memoryWave"]["troughBytes"] = 11;
  EXPECT_EQ(ApiGpuNodeErrorPath(trough), "status.gpus[0].memoryWave.troughBytes");
  // The tick-tock offset is on the waves' own period, which may be longer than the GPU's wave
  // (their sum can repeat every half iteration): neither side bounds it by periodSeconds.
  json offset = base;
  offset["status"]["gpus"][0]["memoryWave"]["phaseOffsetSeconds"] = 1.5;
  EXPECT_EQ(ApiGpuNodeErrorPath(offset), std::nullopt);

  const std::vector<CelRule> rules = RulesOf(kGpuNodeCrdPath);
  EXPECT_NE(FindRule(rules, "status.gpus[].memoryWave.troughBytes", "must be <= peakBytes"),
            nullptr);
  EXPECT_EQ(FindRule(rules, "status.gpus[].memoryWave.phaseOffsetSeconds",
                     "must be in [0, periodSeconds]"),
            nullptr);
}

// The server evaluates the memory-wave rule on status writes (after the defaults of peakBytes
// and troughBytes), on each GPU of the list, as api does.
TEST_F(CrdStoreTest, GpuNodeStatusWithTroughAbovePeakIsRefusedByTheServer) {
  const json node = json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "GPUNode",
    "metadata": {"name": "node-a"}, "spec": {"nodeName": "node-a"}})");
  ASSERT_OK(CreateNode(node).status());
  json status = json::parse(R"({"gpus": [
    {"index": 0, "uuid": "GPU-0", "memoryWave": {"peakBytes": 10, "troughBytes": 5}},
    {"index": 1, "uuid": "GPU-1", "memoryWave": {"troughBytes": 1}}]})");
  const absl::StatusOr<WriteResult> written = WriteStatus(nodes_, "", "node-a", status);
  ASSERT_EQ(apiserver::HttpCodeOf(written.status()), 422) << written.status();
  json with_node = node;
  with_node["status"] = status;
  EXPECT_EQ(ApiGpuNodeErrorPath(with_node), "status.gpus[1].memoryWave.troughBytes");
  EXPECT_THAT(
      Causes(written.status()),
      ElementsAre(RuleCause("status.gpus[1].memoryWave.troughBytes", "must be <= peakBytes")));
  status["gpus"][1]["memoryWave"]["peakBytes"] = 1;
  EXPECT_OK(WriteStatus(nodes_, "", "node-a", status).status());
}

// Every rule has a message, names an existing field when it has a fieldPath, and guards
// optional fields with has() (the rule sees the object before the controller's defaults).
TEST(Cel, EveryRuleHasAMessageAndAFieldThatExists) {
  for (const char* path : {kTrainingJobCrdPath, kGpuNodeCrdPath}) {
    const std::vector<CelRule> rules = RulesOf(path);
    EXPECT_FALSE(rules.empty()) << path;
    for (const CelRule& rule : rules) {
      EXPECT_FALSE(rule.rule.empty()) << path << " " << rule.at;
      EXPECT_FALSE(rule.message.empty()) << path << " " << rule.at << ": " << rule.rule;
      if (!rule.field_path.empty()) {
        EXPECT_EQ(rule.field_path[0], '.') << rule.field_path;
      }
    }
  }
}

// ---- YAML 1.1: kubectl reads manifests as YAML 1.1, where a plain On/Off/True/yes is a bool ----

void CheckNoYaml11Booleans(const YAML::Node& node, const std::string& at,
                           std::vector<std::string>* found) {
  static const std::vector<std::string> kYaml11Booleans = {
      "y",  "Y",  "yes", "Yes", "YES", "n",   "N",    "no",   "No",    "NO",
      "on", "On", "ON",  "off", "Off", "OFF", "True", "TRUE", "False", "FALSE"};
  if (node.IsScalar()) {
    // A plain scalar has the non-specific tag "?"; a quoted one "!".
    if (node.Tag() == "?" && std::find(kYaml11Booleans.begin(), kYaml11Booleans.end(),
                                       node.Scalar()) != kYaml11Booleans.end()) {
      found->push_back(at + ": " + node.Scalar());
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      CheckNoYaml11Booleans(node[i], at + "[" + std::to_string(i) + "]", found);
    }
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      CheckNoYaml11Booleans(entry.second, at + "." + entry.first.Scalar(), found);
    }
  }
}

TEST(CrdYaml, NoPlainScalarThatYaml11ReadsAsABoolean) {
  for (const char* path : {kTrainingJobCrdPath, kGpuNodeCrdPath}) {
    std::vector<std::string> found;
    try {
      CheckNoYaml11Booleans(YAML::Load(ReadSourceFile(path)), "", &found);
    } catch (const YAML::Exception& e) {
      ADD_FAILURE() << path << ": " << e.what();
    }
    EXPECT_THAT(found, IsEmpty()) << path;
  }
}

// The enums of the schema are api's enums, spelled as api spells them.
TEST(CrdEnums, AreApisEnums) {
  ASSERT_OK_AND_ASSIGN(json crd, LoadSourceYaml(kTrainingJobCrdPath));
  const json& schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
  const json& spec = schema["spec"]["properties"];
  const auto names = [](const json& enums) {
    std::string joined;
    for (const json& value : enums)
      joined += (joined.empty() ? "" : ", ") + value.get<std::string>();
    return joined;
  };
  EXPECT_EQ(names(spec["role"]["enum"]), api::EnumNames<api::Role>());
  EXPECT_EQ(names(spec["optimizer"]["enum"]), api::EnumNames<api::Optimizer>());
  const json& parallelism = spec["parallelism"]["properties"];
  EXPECT_EQ(names(parallelism["strategy"]["enum"]), api::EnumNames<api::Strategy>());
  EXPECT_EQ(names(parallelism["gpuCounts"]["enum"]), api::EnumNames<api::GpuCounts>());
  EXPECT_EQ(names(parallelism["tickTock"]["enum"]), api::EnumNames<api::Toggle>());
  for (const char* toggle : {"cpuSplit", "preload", "weightCompression"}) {
    EXPECT_EQ(names(spec["dataMovement"]["properties"][toggle]["enum"]),
              api::EnumNames<api::Toggle>());
  }
  const json& status = schema["status"]["properties"];
  EXPECT_EQ(names(status["phase"]["enum"]), api::EnumNames<api::JobPhase>());
  EXPECT_EQ(names(status["conditions"]["items"]["properties"]["status"]["enum"]),
            api::EnumNames<api::ConditionStatus>());
  // The plan's strategy is what the planner chose: never Auto.
  EXPECT_EQ("Auto, " + names(status["plan"]["properties"]["strategy"]["enum"]),
            api::EnumNames<api::Strategy>());
}

}  // namespace
}  // namespace wavepool::testing::crds
