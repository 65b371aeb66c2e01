// The mutations every fuzz test in the normal test run shares (tests/support/text_fuzz.h for text
// formats, tests/agent/protocol_fuzz_test.cpp for the agent's frames): bit flips, truncations,
// splices of two inputs, inserted random bytes and repeated chunks, plus one mutation that knows
// the format, which a subclass supplies (a token of its grammar, a length field set to an
// extreme).
//
// Not thread-safe; the same seed gives the same inputs.
#ifndef WAVEPOOL_TESTS_SUPPORT_MUTATOR_H_
#define WAVEPOOL_TESTS_SUPPORT_MUTATOR_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace wavepool::testing {

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}
  virtual ~Mutator() = default;

  // One of `seeds` with one to four mutations applied. REQUIRES: `seeds` is not empty.
  std::string Mutate(const std::vector<std::string>& seeds) {
    std::string input = Pick(seeds);
    const int rounds = 1 + static_cast<int>(Below(4));
    for (int i = 0; i < rounds; ++i) MutateOnce(input, seeds);
    return input;
  }

 protected:
  // The format's own mutation of `s`, chosen in one round of six.
  virtual void MutateForFormat(std::string& s) = 0;

  // Uniform in [0, n); 0 when n is 0.
  std::size_t Below(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  const std::string& Pick(const std::vector<std::string>& v) { return v[Below(v.size())]; }

 private:
  void MutateOnce(std::string& s, const std::vector<std::string>& seeds) {
    switch (Below(6)) {
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
      default:
        MutateForFormat(s);
        break;
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_MUTATOR_H_
