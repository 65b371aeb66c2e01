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
// A Mutator is not thread-safe; the same seed gives the same inputs.
#ifndef WAVEPOOL_TESTS_SUPPORT_TEXT_FUZZ_H_
#define WAVEPOOL_TESTS_SUPPORT_TEXT_FUZZ_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wavepool::testing {

class TextMutator {
 public:
  // `dictionary`: tokens of the format worth inserting whole ("&a ", "*a", "4611686018427387904").
  TextMutator(std::uint64_t seed, std::vector<std::string> dictionary)
      : rng_(seed), dictionary_(std::move(dictionary)) {}

  std::string Mutate(const std::vector<std::string>& seeds) {
    std::string input = Pick(seeds);
    const int rounds = 1 + static_cast<int>(Below(4));
    for (int i = 0; i < rounds; ++i) MutateOnce(input, seeds);
    return input;
  }

 private:
  std::size_t Below(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  const std::string& Pick(const std::vector<std::string>& v) { return v[Below(v.size())]; }

  void MutateOnce(std::string& s, const std::vector<std::string>& seeds) {
    switch (Below(7)) {
      case 0:  // bit flip
        if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1 << Below(8));
        break;
      case 1:  // truncation
        s.resize(Below(s.size() + 1));
        break;
      case 2: {  // splice: a prefix of this one, a suffix of another
        const std::string& other = Pick(seeds);
        s = s.substr(0, Below(s.size() + 1)) + other.substr(Below(other.size() + 1));
        break;
      }
      case 3: {  // random bytes inserted
        std::string bytes(1 + Below(8), '\0');
        for (char& c : bytes) c = static_cast<char>(Below(256));
        s.insert(Below(s.size() + 1), bytes);
        break;
      }
      case 4: {  // a chunk repeated
        if (s.empty()) break;
        const std::size_t at = Below(s.size());
        s.insert(at, s.substr(at, 1 + Below(32)));
        break;
      }
      default: {  // a token of the format, inserted or written over what was there
        if (dictionary_.empty()) break;
        const std::string& token = Pick(dictionary_);
        const std::size_t at = Below(s.size() + 1);
        if (Below(2) == 0) {
          s.insert(at, token);
        } else {
          s.replace(at, std::min(token.size(), s.size() - at), token);
        }
        break;
      }
    }
  }

  std::mt19937_64 rng_;
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
