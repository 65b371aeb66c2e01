// The agent's side of the launch gate (GateSegment): creating the file, allocating and reclaiming
// slots; and LaunchGate::Attach's checks of the file it maps (epoch, generation, role, corrupt or
// truncated files).
#include "wavepool/agent/gate_segment.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<std::string> Entries(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

TEST_F(GateSegmentTest, CreateWritesTheFileUnderItsFinalNameOnly) {
  EXPECT_EQ(segment_->path(), directory_ + "/gpu-0.gate");
  EXPECT_EQ(segment_->epoch(), kTestEpoch);
  EXPECT_EQ(segment_->gpu_index(), 0u);
  EXPECT_EQ(segment_->slot_count(), kSlots);
  // No temporary file is left behind.
  EXPECT_THAT(Entries(directory_), ::testing::ElementsAre("gpu-0.gate"));
  struct stat st;
  ASSERT_EQ(stat(segment_->path().c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), sizeof(GateFile));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  const std::string bytes = ReadFile(segment_->path());
  std::uint64_t magic = 0;
  std::memcpy(&magic, bytes.data(), sizeof(magic));
  EXPECT_EQ(magic, kGateMagic);
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    EXPECT_EQ(segment_->Read(i).state, SlotState::kFree);
  }
}

TEST_F(GateSegmentTest, CreateAppliesModeAndGroup) {
  ASSERT_OK_AND_ASSIGN(auto segment, GateSegment::Create(directory_, 3, 4, 7, 0640, getgid()));
  struct stat st;
  ASSERT_EQ(stat(segment->path().c_str(), &st), 0);
  EXPECT_EQ(segment->path(), directory_ + "/gpu-3.gate");
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_gid, getgid());
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

TEST_F(GateSegmentTest, CreateNamesThePathAndTheSyscallOnFailure) {
  const std::string missing = directory_ + "/no-such-directory";
  EXPECT_THAT(GateSegment::Create(missing, 2, 4, 1),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("create gate " + missing + "/gpu-2.gate"),
                             HasSubstr("mkostemp"), HasSubstr("No such file or directory"))));
}

TEST_F(GateSegmentTest, ANewAgentReplacesAStaleFileAndTheOldOneLeavesItAlone) {
  ASSERT_OK_AND_ASSIGN(auto successor, GateSegment::Create(directory_, 0, 4, kTestEpoch + 1));
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*successor, Role::kForeground, 2));
  // The old segment's destructor must not unlink its successor's file.
  segment_.reset();
  EXPECT_TRUE(std::filesystem::exists(successor->path()));
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground), IsOk());
  const std::string path = successor->path();
  successor.reset();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(GateSegmentTest, KeepFileOnDestructionKeepsIt) {
  const std::string path = segment_->path();
  segment_->KeepFileOnDestruction();
  segment_.reset();
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST_F(GateSegmentTest, AllocateHandsOutEverySlotOnceThenIsExhausted) {
  std::set<std::uint32_t> slots;
  for (std::uint32_t i = 0; i < kSlots; ++i) {
    ASSERT_OK_AND_ASSIGN(SlotGrant grant, segment_->Allocate(Role::kBackground, 100 + i, 1));
    slots.insert(grant.slot);
    const SlotSnapshot slot = segment_->Read(grant.slot);
    EXPECT_EQ(slot.state, SlotState::kActive);
    EXPECT_EQ(slot.generation, grant.generation);
    EXPECT_EQ(slot.role, Role::kBackground);
    EXPECT_EQ(slot.pid, static_cast<std::int32_t>(100 + i));
    EXPECT_EQ(slot.credit_limit, 1);
  }
  EXPECT_EQ(slots.size(), kSlots);
  EXPECT_THAT(segment_->Allocate(Role::kForeground, 1, 2),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr(segment_->path()), HasSubstr("all 8 slots"))));
}

TEST_F(GateSegmentTest, AllocateRejectsBadInput) {
  EXPECT_THAT(segment_->Allocate(Role::kForeground, 1, -1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got -1")));
  EXPECT_THAT(segment_->Allocate(static_cast<Role>(7), 1, 1),
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

  ASSERT_OK_AND_ASSIGN(SlotGrant grant, segment_->Allocate(Role::kForeground, 9, 2));
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
  ASSERT_OK_AND_ASSIGN(SlotGrant grant, segment_->Allocate(Role::kBackground, 1, 1));
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

TEST_F(GateSegmentTest, AttachReportsAMissingFile) {
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
  registered.gate_path = directory_ + "/gpu-9.gate";
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(registered.gate_path), HasSubstr("open"))));
}

// Attach to a copy of the gate file, changed by `edit`.
class CorruptGateTest : public GateTest {
 protected:
  absl::Status AttachToCopy(const std::string& bytes) {
    absl::StatusOr<Registered> registered = Register(*segment_, Role::kForeground, 2);
    if (!registered.ok()) return registered.status();
    registered->gate_path = directory_ + "/copy.gate";
    WriteFile(registered->gate_path, bytes);
    return LaunchGate::Attach(*registered, Role::kForeground).status();
  }
  std::string Original() { return ReadFile(segment_->path()); }
};

TEST_F(CorruptGateTest, AnIntactCopyAttaches) {
  ASSERT_OK_AND_ASSIGN(Registered registered, Register(*segment_, Role::kForeground, 2));
  registered.gate_path = directory_ + "/copy.gate";
  WriteFile(registered.gate_path, Original());
  EXPECT_THAT(LaunchGate::Attach(registered, Role::kForeground), IsOk());
}

TEST_F(CorruptGateTest, TruncatedFilesAreRejected) {
  const std::string original = Original();
  for (std::size_t size : {std::size_t{0}, std::size_t{10}, sizeof(GateHeader) - 1}) {
    EXPECT_THAT(AttachToCopy(original.substr(0, size)),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("copy.gate"), HasSubstr("truncated"))))
        << size;
  }
  // The header is intact but the slots are cut off.
  EXPECT_THAT(AttachToCopy(original.substr(0, sizeof(GateHeader) + 100)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("copy.gate"), HasSubstr("size"))));
  // A longer file is not a version 1 gate either.
  EXPECT_THAT(AttachToCopy(original + std::string(64, '\0')),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("size")));
}

TEST_F(CorruptGateTest, GarbageAndOtherVersionsAreRejected) {
  const std::string original = Original();
  EXPECT_THAT(AttachToCopy(std::string(original.size(), '\x5a')),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("copy.gate"), HasSubstr("magic"))));
  std::string other_version = original;
  other_version[8] = 2;  // layout_version follows the 8-byte magic
  EXPECT_THAT(AttachToCopy(other_version),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("layout version 2")));
  std::string too_many_slots = original;
  too_many_slots[12] = 40;  // slot_count
  EXPECT_THAT(AttachToCopy(too_many_slots),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("has 40 slots")));
}

}  // namespace
}  // namespace wavepool::agent
