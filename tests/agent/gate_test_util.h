// Shared set-up of the gate tests: a fresh directory per test, a GateSegment in it, and the
// Registered a worker would get for an allocated slot.
#ifndef WAVEPOOL_TESTS_AGENT_GATE_TEST_UTIL_H_
#define WAVEPOOL_TESTS_AGENT_GATE_TEST_UTIL_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"

namespace wavepool::agent {

inline constexpr std::uint64_t kTestEpoch = 0x5eed;

// A worker's own segment, as AgentConnection creates it before Register; fails the test (and
// returns an empty one) when it cannot be created.
inline OwnSegment NewWorkerSegment() {
  absl::StatusOr<OwnSegment> own = LaunchGate::CreateWorkerSegment();
  EXPECT_TRUE(own.ok()) << own.status();
  return own.ok() ? *std::move(own) : OwnSegment{};
}

// What the agent answers a Register with, for slot `grant` of `segment`, with the worker's own
// segment filled in as AgentConnection does.
inline Registered RegisteredFor(const GateSegment& segment, SlotGrant grant,
                                std::int32_t credit_limit, Role role, const OwnSegment& own) {
  Registered registered;
  registered.slot = grant.slot;
  registered.gate_path = segment.path();
  registered.gate_epoch = segment.epoch();
  registered.gate_generation = grant.generation;
  registered.credit_limit = static_cast<std::uint32_t>(credit_limit);
  registered.gate = segment.descriptor();
  if (role == Role::kBackground) registered.foregrounds = segment.Foregrounds();
  registered.own_segment = own.mapping;
  return registered;
}

// Allocates a slot the way the agent does on Register (the worker's pid is `pid`).
inline absl::StatusOr<Registered> Register(GateSegment& segment, Role role,
                                           std::int32_t credit_limit, std::int32_t pid = getpid()) {
  const OwnSegment own = NewWorkerSegment();
  absl::StatusOr<SlotGrant> grant = segment.Allocate(role, pid, credit_limit, own.fd);
  if (!grant.ok()) return grant.status();
  return RegisteredFor(segment, *grant, credit_limit, role, own);
}

// A test with its own directory (removed afterwards) and one GPU's gate in it.
class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(temp_dir_, ::wavepool::testing::TempDir::Create("wavepool-gate"));
    directory_ = temp_dir_.path();
    ASSERT_OK_AND_ASSIGN(segment_, GateSegment::Create(directory_, 0, kSlots, kTestEpoch));
  }
  void TearDown() override { segment_.reset(); }

  // A worker's gate on a new slot; fails the test (and returns null) when either step fails.
  std::unique_ptr<LaunchGate> NewGate(Role role, std::int32_t credit_limit) {
    absl::StatusOr<Registered> registered = Register(*segment_, role, credit_limit);
    EXPECT_TRUE(registered.ok()) << registered.status();
    if (!registered.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<LaunchGate>> gate = LaunchGate::Attach(*registered, role);
    EXPECT_TRUE(gate.ok()) << gate.status();
    return gate.ok() ? std::move(gate).value() : nullptr;
  }

  static constexpr std::uint32_t kSlots = 8;
  ::wavepool::testing::TempDir temp_dir_;
  std::string directory_;  // temp_dir_.path()
  std::unique_ptr<GateSegment> segment_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_TESTS_AGENT_GATE_TEST_UTIL_H_
