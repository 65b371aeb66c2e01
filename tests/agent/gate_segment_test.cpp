// The agent's side of the launch gate (GateSegment): creating the sealed control segment,
// allocating and reclaiming slots, checking workers' segments; and LaunchGate::Attach's checks of
// the segment it maps (seals, size, epoch, generation, role, corrupt contents).
#include "wavepool/agent/gate_segment.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/gate_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/client/launch_gate.h"

namespace wavepool::agent {
namespace {

class GateSegmentTest : public GateTest {};

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

std::vector<std::string> Entries(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// A sealed segment holding `bytes`, as a hostile or broken agent could hand out.
SharedFd SealedCopy(const std::string& bytes, bool seal = true) {
  absl::StatusOr<ScopedFd> fd = CreateSealableSegment("copy.gate", bytes.size());
  EXPECT_TRUE(fd.ok()) << fd.status();
  if (!fd.ok()) return nullptr;
  EXPECT_EQ(pwrite(fd->get(), bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  if (seal) {
    EXPECT_OK(SealAgainstNewWriters(fd->get(), "copy.gate"));
  }
  return ShareFd(*std::move(fd));
}

// The control segment's bytes, through a read-only mapping.
std::string Contents(const GateSegment& segment) {
  absl::StatusOr<std::unique_ptr<Mapping>> mapping =
      Mapping::Map(segment.descriptor()->get(), sizeof(GateFile), false, "gate");
  EXPECT_TRUE(mapping.ok()) << mapping.status();
  if (!mapping.ok()) return "";
  return std::string(static_cast<const char*>((*mapping)->data()), sizeof(GateFile));
}

TEST_F(GateSegmentTest, CreateSealsAControlSegmentAndWritesNoFile) {
  EXPECT_EQ(segment_->path(), directory_ + "/gpu-0.gate");
  EXPECT_EQ(segment_->epoch(), kTestEpoch);
  EXPECT_EQ(segment_->gpu_index(), 0u);
  EXPECT_EQ(segment_->slot_count(), kSlots);
  // Nothing in the directory: there is no file a worker could open read-write.
  EXPECT_THAT(Entries(directory_), ::testing::IsEmpty());
  EXPECT_OK(CheckSealed(segment_->descriptor()->get(), sizeof(GateFile), "gate"));
  const std::string bytes = Contents(*segment_);
  std::uint64_t magic = 0;
  std::memcpy(&magic, bytes.data(), sizeof(magic));
  EXPECT_EQ(magic, kGateMagic);
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    EXPECT_EQ(segment_->Read(i).state, SlotState::kFree);
  }
}

TEST_F(GateSegmentTest, CreateRejectsBadArguments) {
  EXPECT_THAT(GateSegment::Create(directory_, 1, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("gpu-1.gate"), HasSubstr("1..32, got 0"))));
  EXPECT_THAT(GateSegment::Create(directory_, 1, kMaxSlotsPerGpu + 1, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 33")));
  EXPECT_THAT(GateSegment::Create("", 1, 4, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory")));
}

TEST_F(GateSegmentTest, ANewAgentsSegmentIsIndependentOfTheOldOne) {
  ASSERT_OK_AND_ASSIGN(auto successor, GateSegment::Create(directory_, 0, 4, kTestEpoch + 1));
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*successor, Role::kForeground, 2));
  segment_.reset();
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground), IsOk());
}

TEST_F(GateSegmentTest, AllocateRefusesWorkerSegmentsThatAreNotSealedOrNotTheWorkers) {
  EXPECT_THAT(segment_->Allocate(Role::kBackground, 1, 1, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no descriptor")));
  // Not sealed against new writers: someone else could map it writable.
  EXPECT_THAT(segment_->Allocate(Role::kBackground, 1, 1,
                                 SealedCopy(std::string(sizeof(WorkerSegment), '\0'), false)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seals")));
  // Sealed, but the wrong size.
  EXPECT_THAT(segment_->Allocate(Role::kBackground, 1, 1, SealedCopy(std::string(64, '\0'))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size 64")));
  // The gate's own segment, or another worker's.
  EXPECT_THAT(segment_->Allocate(Role::kBackground, 1, 1, segment_->descriptor()),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  const OwnSegment foreground = NewWorkerSegment();
  ASSERT_OK(segment_->Allocate(Role::kForeground, 1, 2, foreground.fd).status());
  EXPECT_THAT(segment_->Allocate(Role::kBackground, 1, 1, foreground.fd),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("segment of slot 0")));
  EXPECT_EQ(segment_->Read(1).state, SlotState::kFree);
}

TEST_F(GateSegmentTest, AllocateHandsOutEverySlotOnceThenIsExhausted) {
  std::set<std::uint32_t> slots;
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    ASSERT_OK_AND_ASSIGN(SlotGrant grant,
                         segment_->Allocate(Role::kBackground, 100 + i, 1, NewWorkerSegment().fd));
    slots.insert(grant.slot);
    const SlotSnapshot slot = segment_->Read(grant.slot);
    EXPECT_EQ(slot.state, SlotState::kActive);
    EXPECT_EQ(slot.generation, grant.generation);
    EXPECT_EQ(slot.role, Role::kBackground);
    EXPECT_EQ(slot.pid, static_cast<std::int32_t>(100 + i));
    EXPECT_EQ(slot.credit_limit, 1);
  }
  EXPECT_EQ(slots.size(), kSlots);
  EXPECT_THAT(segment_->Allocate(Role::kForeground, 1, 2, NewWorkerSegment().fd),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr(segment_->path()), HasSubstr("all 8 slots"))));
}

TEST_F(GateSegmentTest, AllocateRejectsBadInput) {
  EXPECT_THAT(segment_->Allocate(Role::kForeground, 1, -1, NewWorkerSegment().fd),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got -1")));
  EXPECT_THAT(segment_->Allocate(static_cast<Role>(7), 1, 1, NewWorkerSegment().fd),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown role 7")));
  EXPECT_EQ(segment_->Read(0).state, SlotState::kFree);
}

TEST_F(GateSegmentTest, ReclaimDropsCreditsPauseAndSensitiveSetAndIsIdempotent) {
  auto foreground = NewGate(Role::kForeground, 2);
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(foreground, nullptr);
  ASSERT_NE(background, nullptr);
  const std::uint32_t slot = foreground->slot();
  ASSERT_TRUE(foreground->TryAcquire());
  ASSERT_TRUE(foreground->TryAcquire());
  foreground->RaisePause();
  segment_->SetSensitive(slot, 17, true);
  ASSERT_EQ(segment_->ForegroundHold(), 1u);
  ASSERT_TRUE(background->Paused());
  const std::uint32_t generation = foreground->generation();

  segment_->Reclaim(slot);
  SlotSnapshot after = segment_->Read(slot);
  EXPECT_EQ(after.state, SlotState::kFree);
  EXPECT_EQ(after.in_flight, 0);
  EXPECT_FALSE(after.pause);
  EXPECT_NE(after.generation, generation);
  EXPECT_EQ(after.acquired_total, 2u);  // statistics stay readable until reallocation
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
  EXPECT_FALSE(background->Paused());
  EXPECT_FALSE(foreground->IsSensitive(17));

  segment_->Reclaim(slot);  // again: nothing changes
  EXPECT_EQ(segment_->Read(slot).generation, after.generation);
  EXPECT_EQ(segment_->Read(slot).state, SlotState::kFree);

  ASSERT_OK_AND_ASSIGN(SlotGrant grant,
                       segment_->Allocate(Role::kForeground, 9, 2, NewWorkerSegment().fd));
  EXPECT_EQ(grant.slot, slot);
  EXPECT_NE(grant.generation, generation);
  EXPECT_NE(grant.generation, after.generation);
  EXPECT_EQ(segment_->Read(slot).acquired_total, 0u);
}

TEST_F(GateSegmentTest, ReclaimOfABackgroundSlotClearsTheAgentsPause) {
  auto background = NewGate(Role::kBackground, 1);
  ASSERT_NE(background, nullptr);
  segment_->SetPaused(background->slot(), true);
  segment_->Reclaim(background->slot());
  ASSERT_OK_AND_ASSIGN(SlotGrant grant,
                       segment_->Allocate(Role::kBackground, 1, 1, NewWorkerSegment().fd));
  EXPECT_FALSE(segment_->Read(grant.slot).pause);
}

TEST_F(GateSegmentTest, UnknownSlotsAreIgnored) {
  const std::uint32_t bad = kSlots;  // slot indices are < slot_count
  segment_->Reclaim(bad);
  segment_->SetCreditLimit(bad, 5);
  segment_->SetPaused(bad, true);
  segment_->SetSensitive(bad, 1, true);
  EXPECT_EQ(segment_->Read(bad).state, SlotState::kFree);
  EXPECT_EQ(segment_->Read(1'000'000).credit_limit, 0);
  EXPECT_EQ(segment_->ForegroundHold(), 0u);
}

TEST_F(GateSegmentTest, SetCreditLimitClampsNegativeLimits) {
  auto gate = NewGate(Role::kForeground, 2);
  ASSERT_NE(gate, nullptr);
  segment_->SetCreditLimit(gate->slot(), -3);
  EXPECT_EQ(gate->credit_limit(), 0);
  EXPECT_FALSE(gate->TryAcquire());
}

// --- Attach ---------------------------------------------------------------------------------

TEST_F(GateSegmentTest, AttachBindsToTheRegisteredSlot) {
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
  ASSERT_OK_AND_ASSIGN(auto gate, LaunchGate::Attach(registered, Role::kForeground));
  EXPECT_EQ(gate->slot(), registered.slot);
  EXPECT_EQ(gate->generation(), registered.gate_generation);
  EXPECT_EQ(gate->path(), segment_->path());
  EXPECT_EQ(gate->role(), Role::kForeground);
  EXPECT_FALSE(gate->Revoked());
}

TEST_F(GateSegmentTest, AttachRejectsAnotherEpoch) {
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
  registered.gate_epoch = kTestEpoch + 1;
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(segment_->path()), HasSubstr("epoch"))));
}

TEST_F(GateSegmentTest, AttachRejectsAStaleGeneration) {
  ASSERT_OK_AND_ASSIGN(Registered old, Register(*segment_, Role::kForeground, 2));
  segment_->Reclaim(old.slot);
  // Reclaimed and free: not active.
  EXPECT_THAT(LaunchGate::Attach(old, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not active")));
  ASSERT_OK_AND_ASSIGN(Registered fresh, Register(*segment_, Role::kForeground, 2));
  ASSERT_EQ(fresh.slot, old.slot);
  EXPECT_THAT(LaunchGate::Attach(old, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(segment_->path()), HasSubstr("generation"))));
  EXPECT_THAT(LaunchGate::Attach(fresh, Role::kForeground), IsOk());
}

TEST_F(GateSegmentTest, AttachRejectsTheWrongRoleAndUnknownSlots) {
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kBackground, 1));
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("other role")));
  registered.slot = kSlots;
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kBackground),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("out of range")));
  registered.slot = 5;  // never allocated
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kBackground),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("slot 5 is not active")));
}

TEST_F(GateSegmentTest, AttachNeedsTheGateAndTheWorkersOwnSegment) {
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
  Registered no_gate = registered;
  no_gate.gate = nullptr;
  EXPECT_THAT(LaunchGate::Attach(no_gate, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(registered.gate_path), HasSubstr("no gate descriptor"))));
  Registered no_segment = registered;
  no_segment.own_segment = nullptr;
  EXPECT_THAT(LaunchGate::Attach(no_segment, Role::kForeground),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no worker segment")));
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground), IsOk());
}

// Attach to a copy of the control segment (with a foreground slot registered), changed by the
// test.
class CorruptGateTest : public GateTest {
 protected:
  void SetUp() override {
    GateTest::SetUp();
    ASSERT_OK_AND_ASSIGN(registered_, Register(*segment_, Role::kForeground, 2));
  }
  absl::Status AttachToCopy(const std::string& bytes, bool seal = true) {
    Registered copy = registered_;
    copy.gate_path = "copy.gate";
    copy.gate = SealedCopy(bytes, seal);
    return LaunchGate::Attach(copy, Role::kForeground).status();
  }
  std::string Original() { return Contents(*segment_); }
  Registered registered_;
};

TEST_F(CorruptGateTest, AnIntactSealedCopyAttaches) { EXPECT_OK(AttachToCopy(Original())); }

TEST_F(CorruptGateTest, AnUnsealedSegmentIsRejected) {
  // A segment someone else could still write or resize is not the agent's.
  EXPECT_THAT(AttachToCopy(Original(), /*seal=*/false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("copy.gate"), HasSubstr("seals"))));
}

TEST_F(CorruptGateTest, SegmentsOfTheWrongSizeAreRejected) {
  const std::string original = Original();
  for (std::size_t size : {std::size_t{10}, sizeof(GateHeader) - 1, sizeof(GateHeader) + 100}) {
    EXPECT_THAT(AttachToCopy(original.substr(0, size)),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("copy.gate"), HasSubstr("size"))))
        << size;
  }
  EXPECT_THAT(AttachToCopy(original + std::string(64, '\0')),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("size")));
}

TEST_F(CorruptGateTest, GarbageAndOtherVersionsAreRejected) {
  const std::string original = Original();
  EXPECT_THAT(AttachToCopy(std::string(original.size(), '\x5a')),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("copy.gate"), HasSubstr("magic"))));
  std::string other_version = original;
  other_version[8] = 1;  // layout_version follows the 8-byte magic
  EXPECT_THAT(AttachToCopy(other_version),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("layout version 1")));
  std::string too_many_slots = original;
  too_many_slots[12] = 40;  // slot_count
  EXPECT_THAT(AttachToCopy(too_many_slots),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("has 40 slots")));
}

}  // namespace
}  // namespace wavepool::agent
