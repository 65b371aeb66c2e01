// Runs the protocol fuzz target (protocol_fuzz_target.h) in the normal test run, for a bounded
// budget (3 s or 200,000 inputs, whichever comes first), on inputs made by mutating valid frames
// from a fixed seed: bit flips, truncations, length and count fields set to extremes, random
// splices of two inputs, inserted and repeated bytes. The budget bounds the run; nothing is timed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/agent/protocol_fuzz_target.h"
#include "tests/support/mutator.h"
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
  ReportWaveMemory waves{{{0, 1, 10}, {1, 1, 30}, {0, 2, 5}, {1, 3, 2}}};
  const std::vector<Message> messages = {
      reg,
      registered,
      ops,
      memory,
      ReportIteration{9, 0.125, 64},
      Goodbye{},
      ErrorReply{absl::StatusCode::kFailedPrecondition, "first message must be Register"},
      Policy{1, StreamPriority::kLow, 16, "bg kernels too long"},
      waves};
  std::vector<std::string> seeds;
  std::string conversation;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    absl::StatusOr<std::string> frame = EncodeFrame(messages[i], static_cast<std::uint32_t>(i + 1));
    if (!frame.ok()) continue;
    seeds.push_back(*frame);
    conversation += *frame;
  }
  // A worker of the previous release.
  absl::StatusOr<std::string> old = EncodeFrame(memory, 1, kOldestProtocolVersion);
  if (old.ok()) seeds.push_back(*old);
  seeds.push_back(conversation);
  return seeds;
}

// Mutator whose format mutation sets a length, count or sequence field to an extreme.
class ProtocolMutator : public ::wavepool::testing::Mutator {
 public:
  explicit ProtocolMutator(std::uint64_t seed) : Mutator(seed) {}

 private:
  void MutateForFormat(std::string& s) override {
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
    const std::uint64_t value = kExtremes[Below(std::size(kExtremes))];
    // The frame header's length (offset 8) and sequence (offset 12) fields most often.
    const std::size_t at = Below(3) == 0 ? 12 : (Below(2) == 0 ? 8 : Below(s.size() + 1));
    const int width = Below(2) == 0 ? 4 : 2;
    for (int i = 0; i < width && at + i < s.size(); ++i) {
      s[at + i] = static_cast<char>(value >> (8 * i));
    }
  }
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
  ProtocolMutator mutator(0x5eed'f00d);
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
