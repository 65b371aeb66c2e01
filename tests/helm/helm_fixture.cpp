#include "tests/helm/helm_fixture.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
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

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

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
  CommandResult result;
  std::vector<std::string> argv = args;
  std::vector<std::string> env = {"HOME=" + path(),
                                  "PATH=/usr/bin:/bin",
                                  "HELM_CACHE_HOME=" + path() + "/helm-cache",
                                  "HELM_CONFIG_HOME=" + path() + "/helm-config",
                                  "HELM_DATA_HOME=" + path() + "/helm-data",
                                  "KUBECACHEDIR=" + path() + "/kube-cache"};
  if (!kubeconfig.empty()) env.push_back("KUBECONFIG=" + kubeconfig);
  const std::string out = path() + "/.stdout", err = path() + "/.stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, Pointers(argv).data(),
                                  Pointers(env).data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return result;
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadFileOrEmpty(out);
  result.err = WithoutLinkNotices(ReadFileOrEmpty(err));
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
