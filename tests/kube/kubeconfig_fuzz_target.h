// The kubeconfig parser's fuzz check, callable from a libFuzzer entry point
// (kubeconfig_fuzz_target.cpp) and from the bounded driver in the normal test run
// (kubeconfig_fuzz_test.cpp).
#ifndef WAVEPOOL_TESTS_KUBE_KUBECONFIG_FUZZ_TARGET_H_
#define WAVEPOOL_TESTS_KUBE_KUBECONFIG_FUZZ_TARGET_H_

#include <string>
#include <string_view>

namespace wavepool::kube::testing {

// Parses `text` as a kubeconfig (ParseKubeconfig, relative paths resolved against `base_dir`),
// with its current context and with the context "dev". Whatever the bytes, it must return, not
// crash, hang or throw, refusing them with InvalidArgument, NotFound, DataLoss or
// FailedPrecondition (no context); a config it accepts must name a server. Returns "" when all of
// this holds, else what went wrong; sets *accepted when some context parsed.
std::string CheckKubeconfigInput(std::string_view text, const std::string& base_dir,
                                 bool* accepted);

}  // namespace wavepool::kube::testing

#endif  // WAVEPOOL_TESTS_KUBE_KUBECONFIG_FUZZ_TARGET_H_
