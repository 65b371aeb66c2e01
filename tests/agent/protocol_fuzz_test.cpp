// Runs the protocol fuzz target (protocol_fuzz_target.h) in the normal test run, for a bounded
// budget (3 s or 200,000 inputs, whichever comes first), on inputs made by mutating valid frames
// from a fixed seed: bit flips, truncations, length and count fields set to extremes, random
// splices of two inputs, inserted and repeated bytes. The budget bounds the run; nothing is timed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/agent/protocol_fuzz_target.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent::testing {
namespace {

constexpr std::size_t kMaxInputs = 200'000;
constexpr auto kBudget = std::chrono::seconds(3);

std::vector<std::string> Seeds() {
  RegisterRequest reg;
  reg.namespace_name = "default";
  reg.job = "vgg16";
  reg.pod = "vgg16-0";
  reg.role = Role::kBackground;
  reg.max_foreground_slowdown = 1.1;
  Registered registered;
  registered.slot = 3;
  registered.gate_path = "/run/wavepool/gpu-0.gate";
  registered.gate_epoch = 42;
  ReportOps ops;
  for (std::uint32_t i = 0; i < 9; ++i) ops.groups.push_back({i * 400, OpKind::kCopy, i});
  ReportMemory memory{{{1, 10, 20}, {2, 30, 40}, {3, 5, 40}}};
  const std::vector<Message> messages = {
      reg,
      registered,
      ops,
      memory,
      ReportIteration{9, 0.125, 64},
      Goodbye{},
      ErrorReply{absl::StatusCode::kFailedPrecondition, "first message must be Register"},
      Policy{1, StreamPriority::kLow, 16, "bg kernels too long"}};
  std::vector<std::string> seeds;
  std::string conversation;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    absl::StatusOr<std::string> frame = EncodeFrame(messages[i], static_cast<std::uint32_t>(i + 1));
    if (!frame.ok()) continue;
    seeds.push_back(*frame);
    conversation += *frame;
  }
  seeds.push_back(conversation);
  return seeds;
}

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

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

  void SetLe(std::string& s, std::size_t at, std::uint64_t value, int width) {
    for (int i = 0; i < width && at + i < s.size(); ++i) {
      s[at + i] = static_cast<char>(value >> (8 * i));
    }
  }

  void MutateOnce(std::string& s, const std::vector<std::string>& seeds) {
    static const std::uint64_t kExtremes[] = {0,
                                              1,
                                              2,
                                              252,
                                              253,
                                              254,
                                              0xFFFF,
                                              4095,
                                              4096,
                                              32768,
                                              32769,
                                              kMaxBodyBytes,
                                              kMaxBodyBytes + 1,
                                              0x7FFFFFFF,
                                              0xFFFFFFFF};
    switch (Below(6)) {
      case 0:  // bit flip
        if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1 << Below(8));
        break;
      case 1:  // truncation
        s.resize(Below(s.size() + 1));
        break;
      case 2: {  // a length, count or sequence field set to an extreme
        const std::uint64_t value = kExtremes[Below(std::size(kExtremes))];
        const std::size_t at = Below(3) == 0 ? 12 : (Below(2) == 0 ? 8 : Below(s.size() + 1));
        SetLe(s, at, value, Below(2) == 0 ? 4 : 2);
        break;
      }
      case 3: {  // splice: a prefix of this one, a suffix of another
        const std::string& other = Pick(seeds);
        s = s.substr(0, Below(s.size() + 1)) + other.substr(Below(other.size() + 1));
        break;
      }
      case 4: {  // random bytes inserted
        std::string bytes(1 + Below(8), '\0');
        for (char& c : bytes) c = static_cast<char>(Below(256));
        s.insert(Below(s.size() + 1), bytes);
        break;
      }
      default: {  // a chunk repeated
        if (s.empty()) break;
        const std::size_t at = Below(s.size());
        s.insert(at, s.substr(at, 1 + Below(32)));
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

TEST(ProtocolFuzz, EverySeedDecodesAndRoundTrips) {
  for (const std::string& seed : Seeds()) {
    const FuzzOutcome outcome =
        CheckProtocolInput(reinterpret_cast<const std::uint8_t*>(seed.data()), seed.size());
    EXPECT_TRUE(outcome.ok) << outcome.failure;
    EXPECT_GE(outcome.frames, 1u);
  }
}

TEST(ProtocolFuzz, MutatedFramesNeverCrashAndDecodedOnesRoundTrip) {
  const std::vector<std::string> seeds = Seeds();
  Mutator mutator(0x5eed'f00d);
  const auto stop = std::chrono::steady_clock::now() + kBudget;
  std::size_t inputs = 0;
  std::size_t with_frames = 0;
  while (inputs < kMaxInputs && (inputs % 256 != 0 || std::chrono::steady_clock::now() < stop)) {
    const std::string input = mutator.Mutate(seeds);
    const FuzzOutcome outcome =
        CheckProtocolInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    ASSERT_TRUE(outcome.ok) << outcome.failure << "\ninput: " << absl::BytesToHexString(input);
    ++inputs;
    if (outcome.frames > 0) ++with_frames;
  }
  // The mutations keep some inputs valid and break others: both paths ran.
  EXPECT_GT(with_frames, 0u);
  EXPECT_LT(with_frames, inputs);
  RecordProperty("inputs", static_cast<int>(inputs));
}

}  // namespace
}  // namespace wavepool::agent::testing
