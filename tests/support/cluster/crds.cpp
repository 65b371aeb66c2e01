#include "tests/support/cluster/crds.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/api/yaml.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {
namespace {

struct CrdNames {
  const char* name;
  const char* kind;
  const char* plural;
  const char* singular;
  const char* scope;
};

constexpr CrdNames kCrds[] = {
    {"trainingjobs.wavepool.dev", "TrainingJob", "trainingjobs", "trainingjob", "Namespaced"},
    {"gpunodes.wavepool.dev", "GPUNode", "gpunodes", "gpunode", "Cluster"},
};

const CrdNames* FindNames(std::string_view name) {
  for (const CrdNames& names : kCrds) {
    if (name == names.name) return &names;
  }
  return nullptr;
}

// Keeps every field under spec and status: the test server prunes what a schema does not declare.
nlohmann::json MinimalCrd(const CrdNames& names) {
  const nlohmann::json open = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  return {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", names.name}}},
      {"spec",
       {{"group", "wavepool.dev"},
        {"scope", names.scope},
        {"names",
         {{"kind", names.kind},
          {"listKind", absl::StrCat(names.kind, "List")},
          {"plural", names.plural},
          {"singular", names.singular}}},
        {"versions",
         {{{"name", "v1alpha1"},
           {"served", true},
           {"storage", true},
           {"subresources", {{"status", nlohmann::json::object()}}},
           {"schema",
            {{"openAPIV3Schema",
              {{"type", "object"}, {"properties", {{"spec", open}, {"status", open}}}}}}}}}}}},
  };
}

absl::StatusOr<nlohmann::json> CrdFromFile(const std::string& path, std::string_view name) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<api::YamlDocument>> documents = api::ParseDocuments(text.str());
  if (!documents.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", documents.status().message()));
  }
  for (const api::YamlDocument& document : *documents) {
    const nlohmann::json& crd = document.value;
    if (crd.is_object() && crd.value("kind", "") == "CustomResourceDefinition" &&
        crd.contains("metadata") && crd["metadata"].is_object() &&
        crd["metadata"].value("name", "") == name) {
      return crd;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": no CustomResourceDefinition named \"",
                                                 std::string(name), "\" in the file"));
}

}  // namespace

std::string DefaultCrdDir() { return std::string(WAVEPOOL_SOURCE_DIR) + "/crds"; }

absl::StatusOr<nlohmann::json> WavepoolCrd(std::string_view name, std::string_view crd_dir) {
  const CrdNames* names = FindNames(name);
  if (names == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("CRD \"", std::string(name),
                     "\": must be trainingjobs.wavepool.dev or gpunodes.wavepool.dev"));
  }
  const std::string path = absl::StrCat(std::string(crd_dir), "/", names->name, ".yaml");
  if (std::ifstream(path).good()) return CrdFromFile(path, name);
  return MinimalCrd(*names);
}

absl::Status RegisterWavepoolCrds(kube::Client& client, std::string_view crd_dir) {
  for (const CrdNames& names : kCrds) {
    absl::StatusOr<nlohmann::json> crd = WavepoolCrd(names.name, crd_dir);
    if (!crd.ok()) return crd.status();
    absl::StatusOr<nlohmann::json> created = client.Create(kube::kCustomResourceDefinitions, *crd);
    if (!created.ok() && !kube::IsAlreadyExists(created.status())) return created.status();
  }
  return absl::OkStatus();
}

}  // namespace wavepool::testing
