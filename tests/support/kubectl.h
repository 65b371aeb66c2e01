// The real kubectl, run by tests against a test API server: each runner has its own directory
// holding the kubeconfig (`<dir>/kubeconfig`, written by the test), kubectl's cache and its home,
// so runs never share state with the user's or with each other. Header-only test support.
#ifndef WAVEPOOL_TESTS_SUPPORT_KUBECTL_H_
#define WAVEPOOL_TESTS_SUPPORT_KUBECTL_H_

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tests/support/files.h"

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
    std::vector<std::string> argv = {binary_, "--kubeconfig=" + dir_ + "/kubeconfig",
                                     "--cache-dir=" + dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {"HOME=" + dir_, "EDITOR=" + dir_ + "/editor",
                                    "KUBE_EDITOR=" + dir_ + "/editor", "PATH=/usr/bin:/bin"};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, input_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    pid_t pid = -1;
    const int error = ::posix_spawn(&pid, binary_.c_str(), &actions, nullptr, Pointers(argv).data(),
                                    Pointers(env).data());
    posix_spawn_file_actions_destroy(&actions);
    return error == 0 ? pid : -1;
  }

  // Runs kubectl `args` to completion with `input` on its stdin.
  KubectlResult Run(const std::vector<std::string>& args, const std::string& input = "") const {
    const std::string in = dir_ + "/stdin", out = dir_ + "/stdout", err = dir_ + "/stderr";
    KubectlResult result;
    if (absl::Status written = WriteFile(in, input); !written.ok()) {
      result.err = std::string(written.message());
      return result;
    }
    const pid_t pid = Spawn(args, in, out, err);
    if (pid < 0) return result;
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = ReadFileOrEmpty(out);
    result.err = ReadFileOrEmpty(err);
    return result;
  }

 private:
  // argv/envp for posix_spawn: pointers into `strings`, null-terminated.
  static std::vector<char*> Pointers(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
  }

  std::string binary_;
  std::string dir_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_KUBECTL_H_
