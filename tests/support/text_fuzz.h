// Bounded fuzzing of text parsers in the normal test run, as tests/agent/protocol_fuzz_test.cpp
// does for the agent protocol: inputs made from a fixed RNG seed by mutating seed documents (bit
// flips, truncations, splices of two inputs, random bytes, repeated chunks, and tokens of the
// format's own grammar, such as YAML anchors or extreme integers), fed to a check until an input
// or time budget runs out. The budget bounds the run; nothing is timed.
//
//   const TextFuzzReport report = RunTextFuzz(seeds, dictionary, [](std::string_view input) {
//     return CheckYamlInput(input);  // "" when the input passed, else what went wrong
//   });
//   EXPECT_EQ(report.failure, "") << report.failing_input;
//
// A TextMutator is not thread-safe; the same seed gives the same inputs.
#ifndef WAVEPOOL_TESTS_SUPPORT_TEXT_FUZZ_H_
#define WAVEPOOL_TESTS_SUPPORT_TEXT_FUZZ_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/mutator.h"

namespace wavepool::testing {

// Mutator whose format mutation inserts a token of the format, or writes one over what was there.
class TextMutator : public Mutator {
 public:
  // `dictionary`: tokens of the format worth inserting whole ("&a ", "*a", "4611686018427387904").
  TextMutator(std::uint64_t seed, std::vector<std::string> dictionary)
      : Mutator(seed), dictionary_(std::move(dictionary)) {}

 private:
  void MutateForFormat(std::string& s) override {
    if (dictionary_.empty()) return;
    const std::string& token = Pick(dictionary_);
    const std::size_t at = Below(s.size() + 1);
    if (Below(2) == 0) {
      s.insert(at, token);
    } else {
      s.replace(at, std::min(token.size(), s.size() - at), token);
    }
  }

  std::vector<std::string> dictionary_;
};

struct TextFuzzReport {
  std::size_t inputs = 0;  // inputs checked, seeds included
  std::size_t passed = 0;  // inputs the parser accepted (the check said so via `accepted`)
  std::string failure;     // the first failure; empty when every input passed
  std::string failing_input;
};

// The check of one input: returns "" when it holds, else what went wrong; sets *accepted when the
// parser took the input as valid (so that a test can see both paths ran).
using TextFuzzCheck = std::function<std::string(std::string_view input, bool* accepted)>;

// Checks every seed, then mutated inputs until `max_inputs` or `budget` is reached, stopping at
// the first failure.
inline TextFuzzReport RunTextFuzz(const std::vector<std::string>& seeds,
                                  std::vector<std::string> dictionary, const TextFuzzCheck& check,
                                  std::size_t max_inputs = 100'000,
                                  std::chrono::milliseconds budget = std::chrono::seconds(2),
                                  std::uint64_t rng_seed = 0x5eed'f00d) {
  TextFuzzReport report;
  const auto run = [&](const std::string& input) {
    bool accepted = false;
    std::string failure = check(input, &accepted);
    ++report.inputs;
    if (accepted) ++report.passed;
    if (!failure.empty()) {
      report.failure = std::move(failure);
      report.failing_input = input;
    }
    return report.failure.empty();
  };
  for (const std::string& seed : seeds) {
    if (!run(seed)) return report;
  }
  TextMutator mutator(rng_seed, std::move(dictionary));
  const auto stop = std::chrono::steady_clock::now() + budget;
  while (report.inputs < max_inputs &&
         (report.inputs % 64 != 0 || std::chrono::steady_clock::now() < stop)) {
    if (!run(mutator.Mutate(seeds))) return report;
  }
  return report;
}

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_TEXT_FUZZ_H_
