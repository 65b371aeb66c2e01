// The controller's own pod options (owned_objects.h: ValidateOwnedObjectOptions): every job's
// pods carry them, so one the API server would refuse is refused at start-up, naming the flag.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

absl::Status ValidateWith(const std::function<void(OwnedObjectOptions&)>& change) {
  OwnedObjectOptions options;
  change(options);
  return ValidateOwnedObjectOptions(options);
}

// InvalidArgument starting with `flag` and saying `why`.
::testing::Matcher<absl::Status> RefusedNaming(const std::string& flag, const std::string& why) {
  return StatusIs(absl::StatusCode::kInvalidArgument,
                  AllOf(::testing::StartsWith(flag + ": "), HasSubstr(why)));
}

TEST(OwnedObjectOptions, TheDefaultsAndATypicalInstallationAreValid) {
  EXPECT_OK(ValidateOwnedObjectOptions({}));
  EXPECT_OK(ValidateWith([](OwnedObjectOptions& o) {
    o.agent_directory = "/run/wavepool";
    o.mps_directory = "/run/wavepool/mps-pipes";  // Under the agent's directory: nested mounts.
    o.background_priority_class = "wavepool-background";
    o.background_termination_grace_seconds = 0;
    o.default_image = "registry.example:5000/team/worker:1.2";
    o.checkpoint_host_root = "/data/checkpoints";
    o.agent_socket_gid = kMaxPodGroupId;
  }));
}

TEST(OwnedObjectOptions, HostDirectoriesMustBeCleanAbsolutePathsOtherThanTheRoot) {
  for (const char* bad : {"", "var/run/wavepool", "/var/run/../etc", "/var/run/wavepool/",
                          "/var//run", "/var/./run"}) {
    EXPECT_THAT(ValidateWith([&](OwnedObjectOptions& o) { o.agent_directory = bad; }),
                RefusedNaming("--agent-dir", "must be an absolute path"))
        << bad;
    EXPECT_THAT(ValidateWith([&](OwnedObjectOptions& o) { o.checkpoint_host_root = bad; }),
                RefusedNaming("--checkpoint-host-root", "must be an absolute path"))
        << bad;
  }
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.mps_directory = "mps"; }),
              RefusedNaming("--mps-dir", "must be an absolute path"));
  // The node's root would be every training pod's, and a job named after a host directory
  // (namespace etc, job cron.d) would get that directory as its checkpoints.
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.checkpoint_host_root = "/"; }),
              RefusedNaming("--checkpoint-host-root", "must not be \"/\""));
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.agent_directory = "/"; }),
              RefusedNaming("--agent-dir", "must not be \"/\""));
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.mps_directory = "/"; }),
              RefusedNaming("--mps-dir", "must not be \"/\""));
}

TEST(OwnedObjectOptions, MountedDirectoriesMustNotCollideWithTheWorkersOtherMounts) {
  // Two mounts at one path: the API server refuses every pod ("must be unique").
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.mps_directory = o.agent_directory; }),
              RefusedNaming("--mps-dir", "must differ from --agent-dir"));
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.agent_directory = "/dev/shm"; }),
              RefusedNaming("--agent-dir", "must not be /dev/shm or under it"));
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.mps_directory = "/dev/shm/mps"; }),
              RefusedNaming("--mps-dir", "must not be /dev/shm or under it"));
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.agent_directory = "/etc/wavepool"; }),
              RefusedNaming("--agent-dir", "must not be /etc/wavepool or under it"));
  EXPECT_OK(ValidateWith([](OwnedObjectOptions& o) { o.agent_directory = "/etc/wavepool-agent"; }));
}

TEST(OwnedObjectOptions, APriorityClassMustBeADns1123Subdomain) {
  EXPECT_OK(ValidateWith([](OwnedObjectOptions& o) { o.background_priority_class = ""; }));
  for (const std::string& bad :
       std::vector<std::string>{"Low", "low_priority", "-low", "low.", std::string(254, 'a')}) {
    EXPECT_THAT(ValidateWith([&](OwnedObjectOptions& o) { o.background_priority_class = bad; }),
                RefusedNaming("--background-priority-class", "DNS-1123 subdomain"))
        << bad;
  }
}

TEST(OwnedObjectOptions, GraceImageAndSocketGroupAreCheckedAsTheApiServerWould) {
  EXPECT_THAT(
      ValidateWith([](OwnedObjectOptions& o) { o.background_termination_grace_seconds = -1; }),
      RefusedNaming("--background-grace-seconds", "must be >= 0, got -1"));
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.default_image = "Registry/Worker:1"; }),
              RefusedNaming("--default-image", "Registry/Worker:1"));
  // supplementalGroups are 31-bit to the API server (IsValidGroupID).
  EXPECT_THAT(ValidateWith([](OwnedObjectOptions& o) { o.agent_socket_gid = kMaxPodGroupId + 1; }),
              RefusedNaming("--agent-socket-gid", "got 2147483648"));
  EXPECT_OK(ValidateWith([](OwnedObjectOptions& o) { o.agent_socket_gid = -1; }));
  EXPECT_OK(ValidateWith([](OwnedObjectOptions& o) { o.agent_socket_gid = 0; }));
}

// A job's checkpoint directory is mounted beside the worker's own mounts (pod_builder.cpp).
TEST(CheckpointMountPath, MustNotSitOnOrUnderAMountEveryWorkerHas) {
  OwnedObjectOptions options;
  options.agent_directory = "/run/wavepool";
  options.mps_directory = "/run/mps";
  for (const char* good : {"/checkpoints", "/run/wavepool-checkpoints", "/dev/shmem",
                           "s3://bucket/ckpt", "gs://bucket"}) {
    EXPECT_OK(CheckCheckpointMountPath(good, options)) << good;
  }
  const std::pair<const char*, const char*> bad[] = {
      {"/dev/shm", "must not be /dev/shm or under it"},
      {"/etc/wavepool/ckpt", "must not be /etc/wavepool or under it: worker pods mount the plan"},
      {"/run/wavepool", "the node agent's directory"},
      {"/run/wavepool/x", "the node agent's directory"},
      {"/run/mps", "the MPS pipe directory"},
      {"/", "must not be \"/\""},
      {"/ckpt/../etc", "must be an absolute path without empty"},
      {"/ckpt/", "must be an absolute path without empty"},
  };
  for (const auto& [path, why] : bad) {
    EXPECT_THAT(CheckCheckpointMountPath(path, options), RefusedNaming("spec.checkpoint.path", why))
        << path;
  }
}

}  // namespace
}  // namespace wavepool::controller
