#include "tests/helm/helm_fixture.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/spawn.h"
#include "wavepool/api/yaml.h"

namespace wavepool::testing::helm {
namespace fs = std::filesystem;
using nlohmann::json;

std::string SourcePath(const std::string& relative) {
  return std::string(WAVEPOOL_SOURCE_DIR) + "/" + relative;
}
std::string HelmBinary() { return SourcePath(".tools/bin/helm"); }
std::string ToolsKubectl() { return SourcePath(".tools/bin/kubectl"); }
std::string ChartDir() { return SourcePath("helm/wavepool"); }

std::ostream& operator<<(std::ostream& os, const CommandResult& r) {
  return os << "exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
}

Scratch::Scratch() {
  absl::StatusOr<TempDir> dir = TempDir::Create("wavepool-helm");
  if (dir.ok()) {
    dir_ = *std::move(dir);
  } else {
    ADD_FAILURE() << dir.status();
  }
}

std::string Scratch::Write(const std::string& name, const std::string& text) const {
  const std::string file = dir_.File(name);
  if (absl::Status written = WriteFile(file, text); !written.ok()) ADD_FAILURE() << written;
  return file;
}

namespace {

// A safety net for one helm or kubectl command, never a statement about speed.
constexpr std::chrono::seconds kCommandLimit(120);

// helm logs each symbolic link of the chart (files/crds, files/dashboards) at INFO level.
std::string WithoutLinkNotices(const std::string& err) {
  std::string kept;
  for (absl::string_view line : absl::StrSplit(err, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "found symbolic link in path")) continue;
    kept.append(line.data(), line.size()).push_back('\n');
  }
  return kept;
}

}  // namespace

CommandResult Scratch::Run(const std::vector<std::string>& args,
                           const std::string& kubeconfig) const {
  SpawnOptions options;
  options.in = ChildStream::File("/dev/null");
  options.env = {{"HOME", path()},
                 {"PATH", "/usr/bin:/bin"},
                 {"HELM_CACHE_HOME", path() + "/helm-cache"},
                 {"HELM_CONFIG_HOME", path() + "/helm-config"},
                 {"HELM_DATA_HOME", path() + "/helm-data"},
                 {"KUBECACHEDIR", path() + "/kube-cache"}};
  if (!kubeconfig.empty()) options.env["KUBECONFIG"] = kubeconfig;
  options.inherit_environment = false;
  const ProcessResult run = RunProcess(args, options, kCommandLimit);
  CommandResult result;
  result.exit_code = run.exited ? run.exit_status : -1;
  result.out = run.out;
  result.err = WithoutLinkNotices(run.started ? run.err : run.error);
  if (run.timed_out) result.err += "killed after " + std::to_string(kCommandLimit.count()) + " s\n";
  return result;
}

std::vector<json> Rendered::OfKind(const std::string& kind) const {
  std::vector<json> found;
  for (const json& o : objects) {
    if (o.value("kind", "") == kind) found.push_back(o);
  }
  return found;
}

json Rendered::Find(const std::string& kind, const std::string& name) const {
  for (const json& o : objects) {
    if (o.value("kind", "") == kind && o["metadata"].value("name", "") == name) return o;
  }
  return json();
}

absl::StatusOr<Rendered> Render(const Scratch& scratch, const std::string& chart,
                                const std::vector<std::string>& extra, std::string* manifest_text) {
  std::vector<std::string> argv = {HelmBinary(), "template", kRelease, chart, "-n", kNamespace};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const CommandResult result = scratch.Run(argv);
  if (result.exit_code != 0) {
    return absl::FailedPreconditionError("helm template failed (exit " +
                                         std::to_string(result.exit_code) + "): " + result.err);
  }
  if (manifest_text != nullptr) *manifest_text = result.out;
  absl::StatusOr<std::vector<api::YamlDocument>> docs = api::ParseDocuments(result.out);
  if (!docs.ok()) return docs.status();
  Rendered rendered;
  for (api::YamlDocument& doc : *docs) {
    if (!doc.value.is_null()) rendered.objects.push_back(std::move(doc.value));
  }
  return rendered;
}

absl::StatusOr<std::string> ChartWithTestDashboards(const Scratch& scratch) {
  const std::string chart = scratch.path() + "/chart/wavepool";
  std::error_code ec;
  fs::create_directories(chart, ec);
  fs::copy(ChartDir(), chart, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) return absl::InternalError("copying the chart to " + chart + ": " + ec.message());
  fs::remove(chart + "/files/crds", ec);
  fs::remove(chart + "/files/dashboards", ec);
  fs::copy(SourcePath("crds"), chart + "/files/crds", fs::copy_options::recursive, ec);
  if (ec) return absl::InternalError("copying crds/: " + ec.message());
  fs::copy(SourcePath("tests/helm/testdata/dashboards"), chart + "/files/dashboards",
           fs::copy_options::recursive, ec);
  if (ec) return absl::InternalError("copying the test dashboards: " + ec.message());
  return chart;
}

std::vector<std::string> Args(const json& container) {
  std::vector<std::string> args;
  for (const json& a : container.value("args", json::array())) args.push_back(a.get<std::string>());
  return args;
}

std::vector<std::string> FlagValues(const std::vector<std::string>& args, const std::string& flag) {
  std::vector<std::string> values;
  const std::string prefix = flag + "=";
  for (const std::string& a : args) {
    if (absl::StartsWith(a, prefix)) values.push_back(a.substr(prefix.size()));
  }
  return values;
}

}  // namespace wavepool::testing::helm
