// Helpers for the Helm chart's tests (helm/wavepool): running helm and kubectl as child
// processes with a private home, rendering the chart and indexing the rendered objects, and a copy
// of the chart whose dashboards/ folder a test chooses.
#ifndef WAVEPOOL_TESTS_HELM_HELM_FIXTURE_H_
#define WAVEPOOL_TESTS_HELM_HELM_FIXTURE_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/temp_dir.h"

namespace wavepool::testing::helm {

// helm v4 and kubectl 1.33 from scripts/install-kube-tools; kubectl 1.32 from the system.
std::string HelmBinary();
std::string ToolsKubectl();
inline constexpr char kSystemKubectl[] = "/usr/bin/kubectl";

// <source>/helm/wavepool, <source>/<relative>.
std::string ChartDir();
std::string SourcePath(const std::string& relative);

struct CommandResult {
  int exit_code = -1;  // -1: it did not start or did not exit normally
  std::string out;
  std::string err;  // without helm's INFO lines about the chart's symbolic links
};
std::ostream& operator<<(std::ostream& os, const CommandResult& r);

// A scratch directory, removed by the destructor; `path()` holds HOME, helm's cache/config/data
// and kubectl's cache of every command run through it.
class Scratch {
 public:
  Scratch();  // a failure of the test when the directory cannot be made

  const std::string& path() const { return dir_.path(); }
  // Writes `text` to <path>/<name> and returns that path.
  std::string Write(const std::string& name, const std::string& text) const;

  // Runs `argv` (argv[0] an absolute path) with HOME, the helm directories and, when not empty,
  // KUBECONFIG pointing into this directory, stdin empty.
  CommandResult Run(const std::vector<std::string>& argv, const std::string& kubeconfig = "") const;

 private:
  TempDir dir_;
};

// A rendered manifest: every non-empty document, in order.
struct Rendered {
  std::vector<nlohmann::json> objects;

  // The objects of `kind`; the one of `kind` and `name` (null json when absent).
  std::vector<nlohmann::json> OfKind(const std::string& kind) const;
  nlohmann::json Find(const std::string& kind, const std::string& name) const;
};

// `helm template <release> <chart> -n <namespace> <extra...>`: the objects, or the command's
// failure as FailedPrecondition carrying its stderr.
absl::StatusOr<Rendered> Render(const Scratch& scratch, const std::string& chart,
                                const std::vector<std::string>& extra,
                                std::string* manifest_text = nullptr);

// The release and namespace the rendering tests use.
inline constexpr char kRelease[] = "wp";
inline constexpr char kNamespace[] = "wavepool-system";

// A copy of the chart under <scratch>/chart with its symbolic links resolved, files/dashboards
// replaced by <source>/tests/helm/testdata/dashboards (a dashboard and alerts.yaml), so that the
// dashboard and alert templates are tested whatever the repository's dashboards/ holds.
absl::StatusOr<std::string> ChartWithTestDashboards(const Scratch& scratch);

// The strings of a container's args (empty when absent).
std::vector<std::string> Args(const nlohmann::json& container);
// The value of `--flag=` in `args`, every value when repeated.
std::vector<std::string> FlagValues(const std::vector<std::string>& args, const std::string& flag);

}  // namespace wavepool::testing::helm

#endif  // WAVEPOOL_TESTS_HELM_HELM_FIXTURE_H_
