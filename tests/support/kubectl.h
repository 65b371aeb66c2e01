// The real kubectl, run by tests against a test API server: each runner has its own directory
// holding the kubeconfig (`<dir>/kubeconfig`, written by the test), kubectl's cache and its home,
// so runs never share state with the user's or with each other. Header-only test support.
#ifndef WAVEPOOL_TESTS_SUPPORT_KUBECTL_H_
#define WAVEPOOL_TESTS_SUPPORT_KUBECTL_H_

#include <sys/types.h>

#include <chrono>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/support/files.h"
#include "tests/support/spawn.h"

namespace wavepool::testing {

// The words of each non-empty line of `text` (kubectl aligns table columns with spaces).
inline std::vector<std::vector<std::string>> TableWords(const std::string& text) {
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string word; words >> word;) row.push_back(word);
    if (!row.empty()) lines.push_back(std::move(row));
  }
  return lines;
}

struct KubectlResult {
  int exit_code = -1;  // -1: it did not start or did not exit normally
  std::string out;
  std::string err;
};

inline std::ostream& operator<<(std::ostream& os, const KubectlResult& r) {
  return os << "exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
}

class KubectlRunner {
 public:
  // `binary`: the kubectl to run; `dir`: an existing directory of the test's own. `kubectl edit`
  // runs `<dir>/editor` when the test writes one.
  KubectlRunner(std::string binary, std::string dir)
      : binary_(std::move(binary)), dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  // Starts kubectl `args` with stdin from `input_path` and stdout/stderr to files; returns its
  // pid (-1 when it could not start). The caller waits for it or kills it.
  pid_t Spawn(const std::vector<std::string>& args, const std::string& input_path,
              const std::string& out_path, const std::string& err_path) const {
    SpawnOptions options = Options();
    options.in = ChildStream::File(input_path);
    options.out = ChildStream::File(out_path);
    options.err = ChildStream::File(err_path);
    const absl::StatusOr<pid_t> pid = ::wavepool::testing::Spawn(Argv(args), options);
    return pid.ok() ? *pid : -1;
  }

  // Runs kubectl `args` to completion with `input` on its stdin; one still running after `limit`
  // is killed (exit_code -1, `err` saying so).
  KubectlResult Run(const std::vector<std::string>& args, const std::string& input = "",
                    std::chrono::seconds limit = std::chrono::seconds(120)) const {
    const std::string in = dir_ + "/stdin";
    KubectlResult result;
    if (absl::Status written = WriteFile(in, input); !written.ok()) {
      result.err = std::string(written.message());
      return result;
    }
    SpawnOptions options = Options();
    options.in = ChildStream::File(in);
    const ProcessResult run = RunProcess(Argv(args), options, limit);
    result.exit_code = run.exited ? run.exit_status : -1;
    result.out = run.out;
    result.err = run.started ? run.err : run.error;
    if (run.timed_out) result.err += "\nkilled after " + std::to_string(limit.count()) + " s";
    return result;
  }

 private:
  // kubectl with this runner's kubeconfig and cache, then `args`.
  std::vector<std::string> Argv(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {binary_, "--kubeconfig=" + dir_ + "/kubeconfig",
                                     "--cache-dir=" + dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // Nothing of the test process's environment: HOME, the editor and PATH of this runner only.
  SpawnOptions Options() const {
    SpawnOptions options;
    options.env = {{"HOME", dir_},
                   {"EDITOR", dir_ + "/editor"},
                   {"KUBE_EDITOR", dir_ + "/editor"},
                   {"PATH", "/usr/bin:/bin"}};
    options.inherit_environment = false;
    return options;
  }

  std::string binary_;
  std::string dir_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_KUBECTL_H_
