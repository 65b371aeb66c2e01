#include "wavepool/api/manifest.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/yaml.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::ReadFileOrEmpty;
using ::wavepool::testing::StatusIs;

std::string Example(const std::string& name) {
  return ReadFileOrEmpty((std::filesystem::path(WAVEPOOL_SOURCE_DIR) / "examples" / name).string());
}

constexpr char kTwoJobs[] = R"(# two jobs and an empty document
apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata:
  name: vgg
spec:
  role: Foreground
  model: {name: vgg16}
  globalBatchSize: 32
  gpus: 8
  steps: 10
---
---
apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata:
  name: rn
  namespace: team-b
spec:
  role: Background
  model:
    name: resnet50
  globalBatchSize: 64
  gpus: 1
  steps: 100
  checkpoint:
    path: /ckpt/rn
)";

TEST(Manifest, EveryExampleParsesAndValidates) {
  int examples = 0;
  const std::filesystem::path directory = std::filesystem::path(WAVEPOOL_SOURCE_DIR) / "examples";
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string extension = entry.path().extension().string();
    if (extension != ".yaml" && extension != ".yml" && extension != ".json") continue;
    ++examples;
    absl::StatusOr<std::vector<TrainingJob>> jobs =
        LoadTrainingJobs(ReadFileOrEmpty(entry.path().string()));
    EXPECT_TRUE(jobs.ok()) << entry.path() << ": " << jobs.status();
  }
  EXPECT_GE(examples, 3);
}

TEST(Manifest, ExamplesSayWhatTheyPromise) {
  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> vgg,
                       LoadTrainingJobs(Example("vgg16-foreground.yaml")));
  ASSERT_EQ(vgg.size(), 1u);
  EXPECT_EQ(vgg[0].spec.role, Role::kForeground);
  EXPECT_EQ(vgg[0].spec.model.name, "vgg16");
  EXPECT_EQ(vgg[0].spec.gpus, 8);
  EXPECT_EQ(vgg[0].spec.global_batch_size, 32);
  EXPECT_EQ(vgg[0].spec.parallelism.strategy, Strategy::kBurstParallel);
  EXPECT_EQ(vgg[0].spec.parallelism.amplification_limit, 2.0);

  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> rn,
                       LoadTrainingJobs(Example("resnet50-background.yaml")));
  EXPECT_EQ(rn[0].spec.role, Role::kBackground);
  EXPECT_EQ(rn[0].spec.model.name, "resnet50");
  EXPECT_EQ(rn[0].spec.gpus, 1);
  EXPECT_TRUE(rn[0].spec.checkpoint.path.has_value());
  EXPECT_TRUE(rn[0].spec.pod_template.is_object());

  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> tiny, LoadTrainingJobs(Example("tiny-cpu.yaml")));
  EXPECT_EQ(tiny[0].spec.role, Role::kForeground);
  EXPECT_EQ(tiny[0].spec.model.name, "mlp_tiny");
  EXPECT_EQ(tiny[0].spec.gpus, 2);
  EXPECT_EQ(tiny[0].spec.steps, 20000);
  EXPECT_EQ(tiny[0].spec.data_movement.preload, Toggle::kOff);
}

TEST(Manifest, SeveralDocumentsSkippingEmptyOnes) {
  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> parsed, ParseTrainingJobs(kTwoJobs));
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].metadata.namespace_, "");  // Parsing does not default.
  EXPECT_FALSE(parsed[0].spec.optimizer.has_value());

  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> loaded, LoadTrainingJobs(kTwoJobs));
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].metadata.namespace_, "default");
  EXPECT_EQ(loaded[0].spec.optimizer, Optimizer::kSgd);
  EXPECT_EQ(NamespacedName(loaded[1].metadata), "team-b/rn");
}

TEST(Manifest, DecodingErrorsNameTheDocumentAndLine) {
  std::string text = kTwoJobs;
  text.replace(text.find("gpus: 1"), 7, "gpus: one");
  EXPECT_THAT(ParseTrainingJobs(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 3 (line 24): spec.gpus: must be an integer, got string "
                                 "\"one\"")));
  text = kTwoJobs;
  text.replace(text.find("  steps: 10"), 11, "  step: 10");
  EXPECT_THAT(ParseTrainingJobs(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 1 (line 11): spec.step: unknown field (did you mean "
                                 "\"steps\"?)")));
}

TEST(Manifest, ValidationErrorsNameTheDocumentLineAndObject) {
  std::string text = kTwoJobs;
  text.replace(text.find("globalBatchSize: 32"), 19, "globalBatchSize: 4");
  EXPECT_THAT(LoadTrainingJobs(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 1 (line 9): TrainingJob default/vgg: "
                                 "spec.globalBatchSize: must be >= spec.gpus (8), got 4")));
  // A field that was never written points at its parent.
  text = kTwoJobs;
  text.replace(text.find("    path: /ckpt/rn\n"), 19, "    intervalSteps: 5\n");
  EXPECT_THAT(LoadTrainingJobs(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 3 (line 26): TrainingJob team-b/rn: "
                                 "spec.checkpoint.path: required for a Background job")));
}

TEST(Manifest, OtherKindsAndVersionsAreRejected) {
  const std::string text =
      std::string(kTwoJobs) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
  EXPECT_THAT(ParseTrainingJobs(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 4 (line 29): apiVersion: must be "
                                 "\"wavepool.dev/v1alpha1\", got \"v1\"")));
  EXPECT_THAT(ParseTrainingJobs("apiVersion: wavepool.dev/v1alpha1\nkind: GPUNode\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 1 (line 2): kind: must be \"TrainingJob\", got "
                                 "\"GPUNode\"")));
}

TEST(Manifest, DuplicateJobsAreRejected) {
  const std::string text =
      std::string(kTwoJobs) + "---\n" +
      std::string(kTwoJobs).substr(
          std::string(kTwoJobs).find("apiVersion"),
          std::string(kTwoJobs).find("---") - std::string(kTwoJobs).find("apiVersion"));
  EXPECT_THAT(LoadTrainingJobs(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("document 4 (line 32): TrainingJob default/vgg: metadata.name: "
                                 "duplicates the TrainingJob in document 1")));
}

TEST(Manifest, JsonManifestsWork) {
  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> yaml_jobs, ParseTrainingJobs(kTwoJobs));
  const std::string json = ToJson(yaml_jobs[1]).dump(2);
  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> json_jobs, LoadTrainingJobs(json));
  ASSERT_EQ(json_jobs.size(), 1u);
  EXPECT_EQ(json_jobs[0].metadata.name, "rn");
  std::string bad = json;
  bad.replace(bad.find("\"gpus\": 1"), 9, "\"gpus\": \"1\"");
  EXPECT_THAT(LoadTrainingJobs(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("document 1 (line ")));
  EXPECT_THAT(LoadTrainingJobs(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.gpus: must be an integer, got string \"1\"")));
}

TEST(Manifest, EmptyManifestsAndSyntaxErrors) {
  EXPECT_THAT(ParseTrainingJobs(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("manifest holds no TrainingJob")));
  EXPECT_THAT(ParseTrainingJobs("---\n---\n# nothing\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no TrainingJob")));
  EXPECT_THAT(ParseTrainingJobs("apiVersion: wavepool.dev/v1alpha1\nkind: TrainingJob\nspec:\n"
                                "  gpus: [1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 5")));
}

TEST(Manifest, KubectlOutputSurvivesAReadModifyWrite) {
  const std::string from_server = R"(apiVersion: wavepool.dev/v1alpha1
kind: TrainingJob
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"wavepool.dev/v1alpha1","kind":"TrainingJob"}
  creationTimestamp: "2026-05-01T10:00:00Z"
  generation: 1
  managedFields:
  - apiVersion: wavepool.dev/v1alpha1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:gpus: {}
    manager: kubectl-client-side-apply
    operation: Update
    time: "2026-05-01T10:00:00Z"
  name: vgg
  namespace: default
  resourceVersion: "1234"
  uid: 0b5d4c0e-8f0a-4d53-9d3e-5f3c2a1b0c9d
spec:
  role: Foreground
  model:
    name: vgg16
  globalBatchSize: 32
  gpus: 8
  steps: 10
)";
  ASSERT_OK_AND_ASSIGN(std::vector<TrainingJob> jobs, ParseTrainingJobs(from_server));
  jobs[0].spec.gpus = 4;
  const std::string written = ToYaml(jobs[0]);
  ASSERT_OK_AND_ASSIGN(nlohmann::json original, YamlToJson(from_server));
  ASSERT_OK_AND_ASSIGN(nlohmann::json rewritten, YamlToJson(written));
  EXPECT_EQ(rewritten["metadata"], original["metadata"]) << written;
  EXPECT_EQ(rewritten["spec"]["gpus"], 4);
}

// Malformed input of every kind: each call returns an error (or, for a few, a value) and never
// crashes, hangs or throws.
std::vector<std::string> Garbage() {
  const std::string header = "apiVersion: wavepool.dev/v1alpha1\nkind: TrainingJob\n";
  std::vector<std::string> garbage = {
      "",
      "   \n\t\n",
      "---",
      "---\n...\n",
      "42",
      "-7",
      "3.5",
      "hello",
      "true",
      "null",
      "~",
      "[]",
      "[1, 2]",
      "{}",
      "- a\n- b\n",
      "{{{{",
      "]]]]",
      "}",
      ":",
      "? ",
      "- - - -",
      "'unterminated",
      "\"unterminated",
      "a: b: c",
      "a:\n- b\n c: d",
      "\t- tab",
      "\xEF\xBB\xBF",
      std::string("a: \0b", 5),
      "\xFF\xFE\xFD",
      "%YAML 9.9\n---\na: 1",
      "*undefined",
      "a: &x\nb: *x\nc: *y",
      "!!binary aGVsbG8=",
      "a: !!int 1.5",
      "a: !!float x",
      "x: .nan",
      "gpus: .inf",
      "[" + std::string(100000, '[') + "]",
      std::string(3000, '-') + " x",
      header + "spec: [1]",
      header + "metadata: 5",
      header + "metadata:\n  name: [a]",
      header + "spec:\n  gpus: 99999999999999999999999999",
      header + "spec:\n  gpus: 1e400",
      header + "spec:\n  gpus: -8",
      header + "spec:\n  globalBatchSize: -9223372036854775808\n  gpus: 1",
      header + "spec:\n  learningRate: .nan",
      header + "spec:\n  learningRate: -.inf",
      header + "spec:\n  role: Foreground\n  role: Background",
      header + "spec:\n  ? [role]\n  : Foreground",
      header + "spec:\n  template: [1, 2]",
      header + "spec:\n  model: {name: {a: b}}",
      header + "status:\n  conditions: {type: Planned}",
      header + "status:\n  placement: [[]]",
      header + "metadata:\n  name: " + std::string(1 << 20, 'a'),
      "{\"apiVersion\": \"wavepool.dev/v1alpha1\", \"kind\": \"TrainingJob\", \"spec\": {\"gpus\": "
      "1e999}}",
      "{\"a\": " + std::string(5000, '[') + std::string(5000, ']') + "}",
      "{\"a\": 1,}",
      "[1, 2",
      "{\"a\": \"\\ud800\"}",
  };
  // Alias bomb.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    const std::string prev(1, static_cast<char>(level - 1));
    bomb += std::string(1, level) + ": &" + std::string(1, level) + " [*" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" +
            prev + ", *" + prev + ", *" + prev + "]\n";
  }
  garbage.push_back(bomb);
  return garbage;
}

TEST(Manifest, NeverCrashesOnGarbage) {
  for (const std::string& text : Garbage()) {
    const std::string shown = text.substr(0, 60);
    EXPECT_FALSE(LoadTrainingJobs(text).ok()) << shown;
    EXPECT_FALSE(ParseGpuNode(text).ok()) << shown;
    EXPECT_FALSE(LoadPlan(text).ok()) << shown;
    (void)YamlToJson(text);  // Some garbage is valid YAML; it only must not crash.
  }
}

TEST(Manifest, NeverCrashesOnTruncatedOrCorruptedExamples) {
  const std::string text = Example("resnet50-background.yaml");
  for (std::size_t cut = 0; cut < text.size(); ++cut) {
    (void)LoadTrainingJobs(text.substr(0, cut));
    std::string corrupted = text;
    corrupted[cut] = "\0:-[{'\"\n#&*!|>%@`"[cut % 18];
    (void)LoadTrainingJobs(corrupted);
  }
  EXPECT_TRUE(LoadTrainingJobs(text).ok());
}

}  // namespace
}  // namespace wavepool::api
