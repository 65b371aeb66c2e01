// Who a worker is: the pod UID in /proc/<pid>/cgroup for every cgroup layout the kubelet
// writes, the identity the controller's labels and annotations give a pod, the resolver over a
// fake /proc and a fake pod source, local mode's registry, and the checks of Register strings
// and of a request against the resolved identity.
#include "wavepool/agent/peer_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "identity/registration_check.h"
#include "identity/worker_strings.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/placement_records.h"

namespace wavepool::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

constexpr char kUid[] = "8a4f5c1e-3b2d-4e6f-9a1b-2c3d4e5f6a7b";

// --- The cgroup file -----------------------------------------------------------------------------

TEST(PodUidFromCgroup, ReadsCgroupV1WithTheCgroupfsDriver) {
  const std::string file =
      absl::StrCat("12:memory:/kubepods/burstable/pod", kUid, "/0123456789abcdef\n",
                   "11:cpu,cpuacct:/kubepods/burstable/pod", kUid, "/0123456789abcdef\n",
                   "1:name=systemd:/kubepods/burstable/pod", kUid, "/0123456789abcdef\n");
  ASSERT_OK_AND_ASSIGN(std::string uid, PodUidFromCgroup(file));
  EXPECT_EQ(uid, kUid);
}

TEST(PodUidFromCgroup, ReadsAGuaranteedPodWithoutAQosClass) {
  ASSERT_OK_AND_ASSIGN(std::string uid,
                       PodUidFromCgroup(absl::StrCat("4:devices:/kubepods/pod", kUid, "/abc\n")));
  EXPECT_EQ(uid, kUid);
}

TEST(PodUidFromCgroup, ReadsCgroupV1WithTheSystemdDriver) {
  std::string underscored = kUid;
  for (char& c : underscored) c = c == '-' ? '_' : c;
  const std::string file =
      absl::StrCat("10:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod",
                   underscored, ".slice/cri-containerd-0123.scope\n");
  ASSERT_OK_AND_ASSIGN(std::string uid, PodUidFromCgroup(file));
  EXPECT_EQ(uid, kUid);
}

TEST(PodUidFromCgroup, ReadsCgroupV2WithTheSystemdDriver) {
  std::string underscored = kUid;
  for (char& c : underscored) c = c == '-' ? '_' : c;
  ASSERT_OK_AND_ASSIGN(std::string uid,
                       PodUidFromCgroup(absl::StrCat("0::/kubepods.slice/kubepods-pod", underscored,
                                                     ".slice/cri-containerd-0123.scope\n")));
  EXPECT_EQ(uid, kUid);
}

TEST(PodUidFromCgroup, ReadsCgroupV2WithTheCgroupfsDriverAndANestedNodeCgroup) {
  // kind and other nested nodes put the kubelet's tree under their own.
  ASSERT_OK_AND_ASSIGN(std::string uid,
                       PodUidFromCgroup(absl::StrCat(
                           "0::/kubelet.slice/kubelet-kubepods.slice/"
                           "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod",
                           std::string(kUid), ".slice/cri-containerd-1.scope")));
  EXPECT_EQ(uid, kUid);
  ASSERT_OK_AND_ASSIGN(uid, PodUidFromCgroup(absl::StrCat("0::/kubepods/besteffort/pod", kUid,
                                                          "/0123456789abcdef\n")));
  EXPECT_EQ(uid, kUid);
}

TEST(PodUidFromCgroup, AProcessOutsideAnyPodIsNotFound) {
  EXPECT_THAT(PodUidFromCgroup("0::/user.slice/user-1000.slice/session-2.scope\n"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not in a pod")));
  EXPECT_THAT(PodUidFromCgroup(""), StatusIs(absl::StatusCode::kNotFound, HasSubstr("kubepods")));
}

TEST(PodUidFromCgroup, GarbageIsRefusedNamingTheLine) {
  EXPECT_THAT(PodUidFromCgroup("no colons here\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no colons here")));
  EXPECT_THAT(PodUidFromCgroup("0::/kubepods/burstable/podNOT-A-UID/abc\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("podNOT-A-UID")));
  EXPECT_THAT(
      PodUidFromCgroup(absl::StrCat("0::/kubepods/pod", std::string(kUid).substr(0, 35), "/abc\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no pod UID")));
  // Upper-case hex is not what the kubelet writes.
  std::string upper = kUid;
  upper[0] = 'A';
  EXPECT_THAT(PodUidFromCgroup(absl::StrCat("0::/kubepods/pod", upper, "/abc\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(PodUidFromCgroup, TwoLinesNamingDifferentPodsAreRefused) {
  std::string other = kUid;
  other[0] = '9';
  EXPECT_THAT(PodUidFromCgroup(absl::StrCat("3:memory:/kubepods/pod", kUid, "/a\n",
                                            "2:cpu:/kubepods/pod", other, "/a\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("two pods")));
}

// --- The pod's identity
// ----------------------------------------------------------------------------

PodRecord TrainPod() {
  PodRecord pod;
  pod.uid = kUid;
  pod.namespace_name = "team-a";
  pod.name = "train-0";
  pod.labels = {{"wavepool.dev/role", "Foreground"}, {"wavepool.dev/job", "train"}};
  pod.annotations = {{"wavepool.dev/job-name", "train"},
                     {"wavepool.dev/gpu-uuids", "GPU-a, GPU-b"}};
  return pod;
}

TEST(IdentityOfPod, ComesFromTheControllersLabelsAndAnnotations) {
  ASSERT_OK_AND_ASSIGN(WorkerIdentity identity, IdentityOfPod(TrainPod()));
  EXPECT_EQ(identity.namespace_name, "team-a");
  EXPECT_EQ(identity.pod, "train-0");
  EXPECT_EQ(identity.job, "train");
  EXPECT_EQ(identity.role, Role::kForeground);
  EXPECT_EQ(identity.pod_uid, kUid);
  EXPECT_THAT(identity.gpu_uuids, ElementsAre("GPU-a", "GPU-b"));
}

TEST(IdentityOfPod, TheFullJobNameWinsOverTheShortenedLabel) {
  PodRecord pod = TrainPod();
  pod.labels["wavepool.dev/job"] = "a-very-long-job-name-shortened-1234";
  pod.annotations["wavepool.dev/job-name"] = "a-very-long-job-name";
  ASSERT_OK_AND_ASSIGN(WorkerIdentity identity, IdentityOfPod(pod));
  EXPECT_EQ(identity.job, "a-very-long-job-name");
  pod.annotations.erase("wavepool.dev/job-name");
  ASSERT_OK_AND_ASSIGN(identity, IdentityOfPod(pod));
  EXPECT_EQ(identity.job, "a-very-long-job-name-shortened-1234");
}

TEST(IdentityOfPod, MissingOrBadMetadataIsRefusedNamingIt) {
  PodRecord pod = TrainPod();
  pod.labels["wavepool.dev/role"] = "foreground";
  EXPECT_THAT(IdentityOfPod(pod),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label wavepool.dev/role")));
  pod = TrainPod();
  pod.annotations.erase("wavepool.dev/gpu-uuids");
  EXPECT_THAT(IdentityOfPod(pod),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wavepool.dev/gpu-uuids")));
  pod = TrainPod();
  pod.annotations["wavepool.dev/gpu-uuids"] = "GPU-a,,GPU-b";
  EXPECT_THAT(IdentityOfPod(pod),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty UUID")));
  pod = TrainPod();
  pod.labels.erase("wavepool.dev/job");
  pod.annotations.erase("wavepool.dev/job-name");
  EXPECT_THAT(IdentityOfPod(pod),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names its job")));
}

// --- The resolvers -------------------------------------------------------------------------------

class FakePodSource final : public PodSource {
 public:
  std::map<std::string, PodRecord> pods;
  int lookups = 0;
  absl::StatusOr<PodRecord> FindByUid(const std::string& uid) override {
    ++lookups;
    auto it = pods.find(uid);
    if (it == pods.end()) return absl::NotFoundError("no pod with uid " + uid);
    return it->second;
  }
};

class FakeProc {
 public:
  FakeProc() {
    absl::StatusOr<TempDir> dir = TempDir::Create("proc");
    EXPECT_OK(dir.status());
    if (dir.ok()) dir_ = *std::move(dir);
  }
  void SetCgroup(pid_t pid, const std::string& text) {
    std::filesystem::create_directories(absl::StrCat(root(), "/", pid));
    EXPECT_OK(WriteFile(absl::StrCat(root(), "/", pid, "/cgroup"), text));
  }
  const std::string& root() const { return dir_.path(); }

 private:
  TempDir dir_;
};

TEST(KubernetesPeerIdentity, ResolvesAProcessThroughItsCgroupAndItsPod) {
  FakeProc proc;
  FakePodSource pods;
  pods.pods[kUid] = TrainPod();
  proc.SetCgroup(4242, absl::StrCat("0::/kubepods/burstable/pod", kUid, "/c0ffee\n"));
  proc.SetCgroup(4343, "0::/system.slice/sshd.service\n");
  KubernetesPeerIdentity identity(&pods, /*placements=*/nullptr, proc.root());
  ASSERT_OK_AND_ASSIGN(WorkerIdentity worker, identity.Resolve(4242));
  EXPECT_EQ(worker.pod, "train-0");
  EXPECT_EQ(identity.ConnectionGroup(4242), absl::StrCat("pod:", kUid));
  EXPECT_THAT(identity.Resolve(4343),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("process 4343")));
  EXPECT_EQ(identity.ConnectionGroup(4343), "pid:4343");
  EXPECT_THAT(identity.Resolve(4444), StatusIs(absl::StatusCode::kNotFound, HasSubstr("4444")));
  pods.pods.clear();  // the pod is gone (or the controller does not manage it)
  EXPECT_THAT(identity.Resolve(4242),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no pod with uid")));
}

TEST(KubernetesPeerIdentity, ASymlinkedCgroupFileIsNotFollowed) {
  FakeProc proc;
  FakePodSource pods;
  pods.pods[kUid] = TrainPod();
  proc.SetCgroup(1, absl::StrCat("0::/kubepods/pod", kUid, "/c\n"));
  std::filesystem::create_directories(proc.root() + "/2");
  std::filesystem::create_symlink(proc.root() + "/1/cgroup", proc.root() + "/2/cgroup");
  KubernetesPeerIdentity identity(&pods, /*placements=*/nullptr, proc.root());
  EXPECT_OK(identity.Resolve(1).status());
  EXPECT_THAT(identity.Resolve(2), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

// The TrainingJob that owns TrainPod() and places it on node-a, GPUs GPU-a and GPU-b.
api::TrainingJob TrainJob() {
  api::TrainingJob job;
  job.metadata.namespace_ = "team-a";
  job.metadata.name = "train";
  job.metadata.uid = "job-uid-1";
  job.spec.role = api::Role::kForeground;
  job.status.placement = {{"train-1", "node-a", {"GPU-c"}},
                          {"train-0", "node-a", {"GPU-b", "GPU-a"}}};
  return job;
}

PodRecord OwnedTrainPod() {
  PodRecord pod = TrainPod();
  api::OwnerReference owner;
  owner.api_version = "wavepool.dev/v1alpha1";
  owner.kind = "TrainingJob";
  owner.name = "train";
  owner.uid = "job-uid-1";
  owner.controller = true;
  pod.controller_owner = owner;
  return pod;
}

TEST(CheckPlacement, AdmitsOnlyAPodItsTrainingJobPlacesHereAsItsLabelsSay) {
  const PodRecord pod = OwnedTrainPod();
  ASSERT_OK_AND_ASSIGN(WorkerIdentity identity, IdentityOfPod(pod));
  EXPECT_OK(CheckPlacement(TrainJob(), pod, identity, "node-a"));

  auto denied = [](const std::string& what) {
    return StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr(what));
  };
  EXPECT_THAT(CheckPlacement(TrainJob(), pod, identity, "node-b"),
              denied("team-a/train places it on node node-a, not on node-b"));
  api::TrainingJob job = TrainJob();
  job.status.placement[1].gpu_uuids = {"GPU-a"};
  EXPECT_THAT(CheckPlacement(job, pod, identity, "node-a"),
              denied("places it on GPUs GPU-a, not on GPU-a,GPU-b"));
  job = TrainJob();
  job.status.placement.clear();  // restarted, or never placed by the controller
  EXPECT_THAT(CheckPlacement(job, pod, identity, "node-a"),
              denied("team-a/train places no such pod"));
  job = TrainJob();
  job.spec.role = api::Role::kBackground;  // the pod's label claims Foreground
  EXPECT_THAT(CheckPlacement(job, pod, identity, "node-a"),
              denied("role Foreground but team-a/train is Background"));
  job = TrainJob();
  job.metadata.uid = "job-uid-2";  // a job re-created under the name
  EXPECT_THAT(CheckPlacement(job, pod, identity, "node-a"), denied("of uid job-uid-1, not"));

  PodRecord unowned = TrainPod();  // the controller's labels copied onto a tenant's own pod
  EXPECT_THAT(CheckPlacement(TrainJob(), unowned, identity, "node-a"),
              denied("not controlled by a TrainingJob"));
  PodRecord other_kind = OwnedTrainPod();
  other_kind.controller_owner->kind = "Job";
  EXPECT_THAT(CheckPlacement(TrainJob(), other_kind, identity, "node-a"),
              denied("not controlled by a TrainingJob"));
  WorkerIdentity other_job = identity;
  other_job.job = "sweep";
  EXPECT_THAT(CheckPlacement(TrainJob(), pod, other_job, "node-a"),
              denied("names job sweep but is owned by team-a/train"));
}

class FakePlacementRecords : public PlacementRecords {
 public:
  absl::Status Confirm(const PodRecord& pod, const WorkerIdentity& identity) override {
    return CheckPlacement(job, pod, identity, "node-a");
  }
  api::TrainingJob job = TrainJob();
};

TEST(KubernetesPeerIdentity, RefusesAPodThatNoTrainingJobPlaces) {
  FakeProc proc;
  FakePodSource pods;
  pods.pods[kUid] = OwnedTrainPod();
  proc.SetCgroup(4242, absl::StrCat("0::/kubepods/burstable/pod", kUid, "/c0ffee\n"));
  FakePlacementRecords placements;
  KubernetesPeerIdentity identity(&pods, &placements, proc.root());
  EXPECT_OK(identity.Resolve(4242).status());
  placements.job.status.placement.clear();
  EXPECT_THAT(identity.Resolve(4242),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("process 4242: pod team-a/train-0: team-a/train places no such "
                                 "pod")));
}

TEST(LocalPeerIdentity, KnowsOnlyTheProcessesItWasToldAbout) {
  LocalPeerIdentity identity;
  WorkerIdentity worker;
  worker.namespace_name = "default";
  worker.job = "mlp";
  worker.pod = "mlp-local-0";
  worker.gpu_indices = {1};
  identity.Add(100, worker);
  ASSERT_OK_AND_ASSIGN(WorkerIdentity resolved, identity.Resolve(100));
  EXPECT_EQ(resolved.pod, "mlp-local-0");
  EXPECT_THAT(identity.Resolve(101),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no worker this run started")));
  identity.Remove(100);  // exited: its pid may be anyone's now
  EXPECT_THAT(identity.Resolve(100), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

// --- Register's strings
// ----------------------------------------------------------------------------

TEST(WorkerStrings, Utf8ValidityFollowsTheStandard) {
  using internal::IsValidUtf8;
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("gr\xC3\xBC\xC3\x9F"));  // grüß
  EXPECT_TRUE(IsValidUtf8("\xE2\x82\xAC"));        // €
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));    // U+1F600
  EXPECT_FALSE(IsValidUtf8("\xFF"));               // never a lead byte
  EXPECT_FALSE(IsValidUtf8("\x80"));               // a lone continuation
  EXPECT_FALSE(IsValidUtf8("\xC3"));               // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));           // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));       // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));   // beyond U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));           // truncated 3-byte
}

TEST(WorkerStrings, KubernetesNamesFollowDns1123) {
  using internal::IsDns1123Label;
  using internal::IsDns1123Subdomain;
  EXPECT_TRUE(IsDns1123Label("team-a"));
  EXPECT_TRUE(IsDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a-"));
  EXPECT_FALSE(IsDns1123Label("Team"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_TRUE(IsDns1123Subdomain("train-0.x"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(IsDns1123Subdomain("a/b"));
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
}

RegisterRequest Request() {
  RegisterRequest request;
  request.namespace_name = "team-a";
  request.job = "train";
  request.pod = "train-0";
  request.role = Role::kForeground;
  return request;
}

TEST(WorkerStrings, EachBadRegisterStringIsRefusedNamingItsField) {
  EXPECT_OK(internal::ValidateRegisterStrings(Request()));
  RegisterRequest r = Request();
  r.namespace_name = "Team_A";
  EXPECT_THAT(internal::ValidateRegisterStrings(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Register.namespace: must be a Kubernetes namespace")));
  r = Request();
  r.job = "tr\xFFin";
  EXPECT_THAT(internal::ValidateRegisterStrings(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Register.job: not valid UTF-8: \"tr\\xffin\"")));
  r = Request();
  r.pod = "";
  EXPECT_THAT(internal::ValidateRegisterStrings(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Register.pod")));
}

// --- A request against the identity
// ----------------------------------------------------------------

class FixedIdentity final : public PeerIdentity {
 public:
  std::map<pid_t, WorkerIdentity> workers;
  absl::StatusOr<WorkerIdentity> Resolve(pid_t pid) override {
    auto it = workers.find(pid);
    if (it == workers.end()) return absl::NotFoundError("unknown process");
    return it->second;
  }
};

TEST(RegistrationCheck, EveryFieldMustBeThePeersOwn) {
  FixedIdentity identity;
  ASSERT_OK_AND_ASSIGN(identity.workers[7], IdentityOfPod(TrainPod()));
  const PeerCredentials peer{7, 0, 0};
  ASSERT_OK_AND_ASSIGN(std::optional<WorkerIdentity> ok,
                       internal::CheckRegister(&identity, peer, Request()));
  EXPECT_TRUE(ok.has_value());
  RegisterRequest r = Request();
  r.role = Role::kBackground;
  EXPECT_THAT(internal::CheckRegister(&identity, peer, r),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.role")));
  r = Request();
  r.namespace_name = "team-b";
  EXPECT_THAT(internal::CheckRegister(&identity, peer, r),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.namespace")));
  r = Request();
  r.job = "other";
  EXPECT_THAT(internal::CheckRegister(&identity, peer, r),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.job")));
  r = Request();
  r.pod = "train-1";
  EXPECT_THAT(internal::CheckRegister(&identity, peer, r),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("Register.pod")));
  EXPECT_THAT(internal::CheckRegister(&identity, PeerCredentials{8, 0, 0}, Request()),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("unknown process")));
  EXPECT_THAT(internal::CheckRegister(&identity, PeerCredentials{0, 0, 0}, Request()),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("pid namespace")));
  // Without an identity source (trust_register) only the strings are checked.
  ASSERT_OK_AND_ASSIGN(std::optional<WorkerIdentity> trusted,
                       internal::CheckRegister(nullptr, PeerCredentials{8, 0, 0}, r));
  EXPECT_FALSE(trusted.has_value());
}

TEST(RegistrationCheck, APodHoldsOneSlotPerAssignedGpu) {
  ASSERT_OK_AND_ASSIGN(WorkerIdentity identity, IdentityOfPod(TrainPod()));  // GPU-a, GPU-b
  GpuInfo a, b, c;
  a.index = 0, a.uuid = "GPU-a";
  b.index = 1, b.uuid = "GPU-b";
  c.index = 2, c.uuid = "GPU-c";
  EXPECT_OK(internal::CheckPodSlots(identity, a, 0, false));
  EXPECT_OK(internal::CheckPodSlots(identity, b, 1, false));
  EXPECT_THAT(internal::CheckPodSlots(identity, a, 1, true),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("one of them on GPU 0")));
  EXPECT_THAT(internal::CheckPodSlots(identity, b, 2, false),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("holds 2 slot(s)")));
  EXPECT_THAT(internal::CheckPodSlots(identity, c, 0, false),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("GPU 2 (GPU-c) is not assigned to pod team-a/train-0")));
}

}  // namespace
}  // namespace wavepool::agent
