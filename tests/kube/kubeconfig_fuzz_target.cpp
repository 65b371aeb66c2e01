#include "tests/kube/kubeconfig_fuzz_target.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>

#include "absl/strings/str_cat.h"
#include "wavepool/kube/kubeconfig.h"

namespace wavepool::kube::testing {

std::string CheckKubeconfigInput(std::string_view text, const std::string& base_dir,
                                 bool* accepted) {
  for (std::string_view context : {std::string_view(), std::string_view("dev")}) {
    try {
      absl::StatusOr<ClientConfig> config = ParseKubeconfig(text, "fuzz", base_dir, context);
      if (!config.ok()) {
        const absl::StatusCode code = config.status().code();
        if (code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kNotFound ||
            code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kFailedPrecondition) {
          continue;
        }
        return absl::StrCat("refused with an unexpected code: ", config.status().ToString());
      }
      *accepted = true;
      if (config->server.empty()) return "accepted a context without a server";
    } catch (const std::exception& e) {
      return absl::StrCat("threw: ", e.what());
    }
  }
  return "";
}

}  // namespace wavepool::kube::testing

// The libFuzzer entry point, for a build with -fsanitize=fuzzer; in the test binary it is unused.
// Relative paths resolve against a directory that holds nothing.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bool accepted = false;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!wavepool::kube::testing::CheckKubeconfigInput(text, "/nonexistent", &accepted).empty()) {
    std::abort();
  }
  return 0;
}
