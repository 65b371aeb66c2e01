// Placement decisions of several workers at once (reconciler.h, reconcile_context.h
// PlacementLedger): a gang's claim on its GPUs must stay visible to every other decision from
// its intent record until the cache shows its pods, whatever the workers interleave.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/metrics.h"
#include "wavepool/controller/reconciler.h"

namespace wavepool::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr std::string_view kNs = FakeScene::kNamespace;

// A hook a test arms and the next call of a read runs once, after that read took its snapshot.
class OnceHook {
 public:
  void Arm(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    hook_ = std::move(hook);
  }
  void RunIfArmed() {
    std::function<void()> hook;
    {
      absl::MutexLock lock(&mu_);
      hook = std::exchange(hook_, nullptr);
    }
    if (hook) hook();
  }

 private:
  absl::Mutex mu_;
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
};

// FakeCluster's reads, with two informer-cache effects a test switches on: jobs shown as an
// earlier copy (the job cache behind the API server), and a hook that runs right after
// Assignments() took its snapshot of the pods (another worker acting in between).
class InterleavingReader : public ForwardingReader {
 public:
  using ForwardingReader::ForwardingReader;

  // GetJob and ListJobs show `job` for its name. REQUIRES: no reconcile running.
  void ShowStale(const api::TrainingJob& job) {
    absl::MutexLock lock(&mu_);
    stale_[std::string(kNs) + "/" + job.metadata.name] = job;
  }
  // The job `key` ("ns/name") as it is again: the cache caught up.
  void ShowCurrent(const std::string& key) {
    absl::MutexLock lock(&mu_);
    stale_.erase(key);
  }
  // Assignments() leaves out the pods of job `key` ("ns/name"): a controller that cannot see them.
  void HidePodsOf(const std::string& key) {
    absl::MutexLock lock(&mu_);
    hidden_jobs_.insert(key);
  }
  // The next Assignments() call runs `hook` after taking its snapshot.
  void AfterNextAssignments(std::function<void()> hook) { after_assignments_.Arm(std::move(hook)); }

  std::optional<api::TrainingJob> GetJob(std::string_view ns,
                                         std::string_view name) const override {
    absl::MutexLock lock(&mu_);
    const auto it = stale_.find(std::string(ns) + "/" + std::string(name));
    if (it != stale_.end()) return it->second;
    return source_.GetJob(ns, name);
  }
  std::vector<api::TrainingJob> ListJobs() const override {
    std::vector<api::TrainingJob> jobs = source_.ListJobs();
    absl::MutexLock lock(&mu_);
    for (api::TrainingJob& job : jobs) {
      const auto it = stale_.find(api::NamespacedName(job.metadata));
      if (it != stale_.end()) job = it->second;
    }
    return jobs;
  }
  // The next JobChangesSince call runs `hook` after taking its snapshot.
  void AfterNextJobChanges(std::function<void()> hook) { after_job_changes_.Arm(std::move(hook)); }
  JobChanges JobChangesSince(std::uint64_t version) const override {
    JobChanges changes = ClusterReader::JobChangesSince(version);  // every job, as ListJobs
    after_job_changes_.RunIfArmed();
    return changes;
  }
  std::vector<GpuAssignment> Assignments() const override {
    std::vector<GpuAssignment> snapshot = source_.Assignments();
    {
      absl::MutexLock lock(&mu_);
      std::vector<GpuAssignment> shown;
      for (GpuAssignment& a : snapshot) {
        if (hidden_jobs_.count(a.job) == 0) shown.push_back(std::move(a));
      }
      snapshot = std::move(shown);
    }
    after_assignments_.RunIfArmed();
    return snapshot;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, api::TrainingJob> stale_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> hidden_jobs_ ABSL_GUARDED_BY(mu_);
  mutable OnceHook after_assignments_;
  mutable OnceHook after_job_changes_;
};

// FakeCluster's writes, where a pod's creation can be held until the test lets it go.
class GatedWriter : public ClusterWriter {
 public:
  explicit GatedWriter(FakeCluster& target) : target_(target) {}

  // The next CreatePod announces itself on `entered` and waits for `proceed`.
  void GateNextPod(absl::Notification* entered, absl::Notification* proceed) {
    absl::MutexLock lock(&mu_);
    entered_ = entered;
    proceed_ = proceed;
  }

  absl::StatusOr<nlohmann::json> CreatePod(const nlohmann::json& pod) override {
    absl::Notification* entered = nullptr;
    absl::Notification* proceed = nullptr;
    {
      absl::MutexLock lock(&mu_);
      std::swap(entered, entered_);
      std::swap(proceed, proceed_);
    }
    if (entered != nullptr) entered->Notify();
    if (proceed != nullptr) proceed->WaitForNotification();
    return target_.CreatePod(pod);
  }
  absl::Status DeletePod(std::string_view ns, std::string_view name, std::string_view uid,
                         std::optional<std::int64_t> grace_period_seconds) override {
    return target_.DeletePod(ns, name, uid, grace_period_seconds);
  }
  absl::Status AnnotatePod(std::string_view ns, std::string_view name,
                           const std::map<std::string, std::string>& annotations) override {
    return target_.AnnotatePod(ns, name, annotations);
  }
  absl::StatusOr<nlohmann::json> CreateService(const nlohmann::json& service) override {
    return target_.CreateService(service);
  }
  absl::Status DeleteService(std::string_view ns, std::string_view name,
                             std::string_view uid) override {
    return target_.DeleteService(ns, name, uid);
  }
  absl::StatusOr<nlohmann::json> CreateConfigMap(const nlohmann::json& config_map) override {
    return target_.CreateConfigMap(config_map);
  }
  absl::StatusOr<nlohmann::json> UpdateConfigMap(const nlohmann::json& config_map) override {
    return target_.UpdateConfigMap(config_map);
  }
  absl::StatusOr<api::TrainingJob> UpdateJobStatus(const api::TrainingJob& job) override {
    return target_.UpdateJobStatus(job);
  }
  void RecordEvent(const api::TrainingJob& job, bool warning, std::string_view reason,
                   std::string_view message) override {
    target_.RecordEvent(job, warning, reason, message);
  }
  absl::Status UpdateGpuNodeStatus(const api::GpuNode& node) override {
    return target_.UpdateGpuNodeStatus(node);
  }
  void RecordGpuNodeEvent(const api::GpuNode& node, bool warning, std::string_view reason,
                          std::string_view message) override {
    target_.RecordGpuNodeEvent(node, warning, reason, message);
  }

 private:
  FakeCluster& target_;
  absl::Mutex mu_;
  absl::Notification* entered_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Notification* proceed_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// Gangs "first" and "second" each want the only GPU, and the job cache shows "first" as before
// any of its writes (reservation intact, placement unseen). Worker 1 reconciles "first" on its
// own thread; worker 2 reconciles "second" on the test's.
class ReconcilerRace : public ::testing::Test {
 protected:
  ReconcilerRace() {
    scene_.AddNode("node-a", 1);
    const api::TrainingJob first_before = scene_.AddForeground("first", 1);
    scene_.AddForeground("second", 1);
    reader_.ShowStale(first_before);
  }
  ~ReconcilerRace() override { FinishFirst(); }

  // Starts worker 1 and returns once it has written its intent and waits to create its pod (the
  // ledger free, no pod yet). first_done_ is notified when its reconcile returns.
  void StartFirstUpToItsPod() {
    writer_.GateNextPod(&first_creating_, &let_first_create_);
    worker1_ = std::thread([this] {
      // Reads "first" through the stale view too: that is the version its reservation names.
      EXPECT_OK(reconciler_.Reconcile(kNs, "first").status());
      first_done_.Notify();
    });
    first_creating_.WaitForNotification();
  }
  // Lets worker 1 create its pod and waits for it to finish.
  void FinishFirst() {
    if (!let_first_create_.HasBeenNotified()) let_first_create_.Notify();
    if (worker1_.joinable()) worker1_.join();
  }
  // "second" found no free GPU, and "first" alone holds one.
  void ExpectOnlyFirstPlaced(const ReconcileResult& second) {
    EXPECT_TRUE(second.waiting_for_gpus);
    EXPECT_TRUE(scene_.cluster.StoredJob(kNs, "second").status.placement.empty());
    EXPECT_THAT(PodNames(scene_.cluster.AllPods()), ElementsAre("first-g0-0"));
  }

  FakeScene scene_;
  InterleavingReader reader_{scene_.cluster};
  GatedWriter writer_{scene_.cluster};
  Reconciler reconciler_{reader_, writer_, scene_.Options()};
  absl::Notification first_creating_;
  absl::Notification let_first_create_;
  absl::Notification first_done_;
  std::thread worker1_;
};

// Worker 2 reads the pods before first's pod exists; worker 1 then creates it and releases its
// reservation before worker 2 reads the reservations. Neither the pod nor the reservation may be
// missed.
TEST_F(ReconcilerRace, AReservationReleasedDuringAnotherDecisionStillCountsItsGpu) {
  StartFirstUpToItsPod();
  ASSERT_EQ(scene_.cluster.StoredJob(kNs, "first").status.placement.size(), 1u);

  reader_.AfterNextAssignments([&] {
    // Worker 1 creates its pod and finishes while worker 2 is between its reads. Where the
    // ledger keeps worker 1 from releasing mid-decision, it waits for worker 2 instead.
    let_first_create_.Notify();
    first_done_.WaitForNotificationWithTimeout(absl::Seconds(1));
  });
  ASSERT_OK_AND_ASSIGN(ReconcileResult second, reconciler_.Reconcile(kNs, "second"));
  FinishFirst();
  ExpectOnlyFirstPlaced(second);
}

// Worker 2 reads the job cache twice: the gangs being created while the cache still shows
// "first" as before its intent write, then the reservations after the cache caught up. "first"
// must count through one or the other.
TEST_F(ReconcilerRace, AnIntentWriteSeenBetweenADecisionsReadsOfTheJobsStillCountsItsGpu) {
  StartFirstUpToItsPod();

  reader_.AfterNextJobChanges([&] { reader_.ShowCurrent(std::string(kNs) + "/first"); });
  ASSERT_OK_AND_ASSIGN(ReconcileResult second, reconciler_.Reconcile(kNs, "second"));
  FinishFirst();
  ExpectOnlyFirstPlaced(second);
}

// Two fg gangs on one GPU (a controller that could not see the first pod placed the second):
// the inventory counts the GPU as taken by both instead of refusing every decision, and the
// younger gang alone yields, with a Warning, and is placed afresh.
TEST(ReconcilerGpuClash, TwoForegroundPodsOnOneGpuStopNoPlacementAndTheYoungerGangYields) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  scene.AddNode("node-b", 2);
  scene.AddForeground("first", 1);
  scene.AddForeground("second", 1);
  ControllerMetrics metrics;
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options(), &metrics);
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  const std::string gpu = scene.Job("first").status.placement.at(0).gpu_uuids.at(0);
  scene.SetGangPhase("first", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  {
    // Blind to first's pod and status; node-b not schedulable, so "second" goes where first is.
    InterleavingReader blind(scene.cluster);
    blind.HidePodsOf(std::string(kNs) + "/first");
    api::TrainingJob unplaced = scene.Job("first");
    unplaced.status.placement.clear();
    blind.ShowStale(unplaced);
    scene.cluster.SetNodeState("node-b", NodeState{true, false, false});
    Reconciler unaware(blind, scene.cluster, scene.Options());
    ASSERT_OK(unaware.Reconcile(kNs, "second").status());
    scene.cluster.SetNodeState("node-b", NodeState{true, true, false});
  }
  ASSERT_EQ(scene.Job("second").status.placement.at(0).gpu_uuids.at(0), gpu);
  scene.SetGangPhase("second", "Running");

  // Other jobs are still placed: the clash is counted, not refused.
  scene.AddBackground("bg");
  ASSERT_OK(reconciler.Reconcile(kNs, "bg").status());
  ASSERT_THAT(scene.Job("bg").status.placement, SizeIs(1));

  // Created in the same second: "second" (the later name) yields; "first" keeps running.
  ASSERT_OK(reconciler.Reconcile(kNs, "first").status());
  EXPECT_EQ(scene.Job("first").status.gang_generation, 0);
  EXPECT_EQ(scene.Job("first").status.placement.at(0).gpu_uuids.at(0), gpu);
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  const api::TrainingJob second = scene.Job("second");
  EXPECT_EQ(second.status.gang_generation, 1);
  EXPECT_THAT(ConditionOf(second, api::kConditionPlaced).message,
              HasSubstr("also runs foreground pod team/first-g0-0"));
  ASSERT_THAT(scene.cluster.EventsWithReason("GpuConflict"), SizeIs(1));
  EXPECT_TRUE(scene.cluster.EventsWithReason("GpuConflict")[0].warning);
  EXPECT_THAT(metrics.Serialize(),
              HasSubstr("wavepool_controller_placement_conflicts_total{reason=\"foreground_"
                        "clash\"} 1"));
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "second-g0-0"));
  scene.cluster.FinishTerminatingPods();
  ASSERT_OK(reconciler.Reconcile(kNs, "second").status());
  ASSERT_THAT(scene.Job("second").status.placement, SizeIs(1));
  EXPECT_NE(scene.Job("second").status.placement[0].gpu_uuids.at(0), gpu);
}

}  // namespace
}  // namespace wavepool::controller
