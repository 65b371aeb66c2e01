// Conflicting writers: while the controller places and reconciles jobs, another client keeps
// rewriting each TrainingJob's labels and annotations and, through the status subresource, a
// condition of its own, every write conditional on the resourceVersion it read (as a
// well-behaved client does). The controller's status writes then meet 409 Conflict from a cache
// that lags; it must retry them from a fresher read and converge, losing neither the other
// writer's metadata nor its own status. Seeds are printed (WAVEPOOL_FAULT_SEED reproduces).
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/fault_support.h"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller::fault {
namespace {

using ::testing::IsEmpty;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::TestCluster;

constexpr char kSeqAnnotation[] = "fault.wavepool.dev/seq";
constexpr char kSeqLabel[] = "fault.wavepool.dev/seq";
constexpr char kForeignCondition[] = "ExternalAudit";

// The other writer: round-robin over the jobs, metadata then status, with small random pauses.
class OtherWriter {
 public:
  OtherWriter(kube::Client& client, std::vector<std::string> jobs, unsigned seed)
      : client_(client), jobs_(std::move(jobs)), rng_(seed) {}

  void Run() {
    std::uniform_int_distribution<int> pause_ms(1, 8);
    for (std::int64_t seq = 1; !stop_; ++seq) {
      const std::string& name = jobs_[static_cast<std::size_t>(seq) % jobs_.size()];
      WriteMetadata(name, seq);
      WriteStatus(name, seq);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng_)));
    }
  }
  void Stop() { stop_ = true; }

  // The last sequence number each job's metadata write succeeded with.
  std::map<std::string, std::int64_t> LastMetadata() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_metadata_;
  }
  std::map<std::string, std::int64_t> LastStatus() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_status_;
  }
  int conflicts() const { return conflicts_; }
  int writes() const { return writes_; }

 private:
  void WriteMetadata(const std::string& name, std::int64_t seq) {
    absl::StatusOr<nlohmann::json> job = client_.Get(api::kTrainingJobs, kNamespace, name);
    if (!job.ok()) return;
    (*job)["metadata"]["labels"][kSeqLabel] = std::to_string(seq);
    (*job)["metadata"]["annotations"][kSeqAnnotation] = std::to_string(seq);
    absl::StatusOr<nlohmann::json> updated = client_.Update(api::kTrainingJobs, *job);
    Count(updated.status());
    if (updated.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      last_metadata_[name] = seq;
    }
  }

  void WriteStatus(const std::string& name, std::int64_t seq) {
    absl::StatusOr<nlohmann::json> job = client_.Get(api::kTrainingJobs, kNamespace, name);
    if (!job.ok()) return;
    nlohmann::json& status = (*job)["status"];
    if (!status.is_object()) status = nlohmann::json::object();
    nlohmann::json conditions = nlohmann::json::array();
    for (const nlohmann::json& condition : status.value("conditions", nlohmann::json::array())) {
      if (condition.value("type", "") != kForeignCondition) conditions.push_back(condition);
    }
    conditions.push_back({{"type", kForeignCondition},
                          {"status", "True"},
                          {"reason", "Audited"},
                          {"message", "audit " + std::to_string(seq)},
                          {"lastTransitionTime", "2026-01-01T00:00:00Z"}});
    status["conditions"] = conditions;
    absl::StatusOr<nlohmann::json> updated = client_.UpdateStatus(api::kTrainingJobs, *job);
    Count(updated.status());
    if (updated.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      last_status_[name] = seq;
    }
  }

  void Count(const absl::Status& status) {
    if (status.ok()) ++writes_;
    if (kube::IsConflict(status)) ++conflicts_;
  }

  kube::Client& client_;
  const std::vector<std::string> jobs_;
  std::mt19937 rng_;
  std::atomic<bool> stop_{false};
  std::atomic<int> conflicts_{0};
  std::atomic<int> writes_{0};
  mutable std::mutex mu_;
  std::map<std::string, std::int64_t> last_metadata_;  // guarded by mu_
  std::map<std::string, std::int64_t> last_status_;    // guarded by mu_
};

// The controller's reconciles that ended in Conflict, from its metrics.
std::string ConflictLines(ControllerManager& manager) {
  std::istringstream in(manager.metrics().Serialize());
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("wavepool_controller_reconciles_total", 0) == 0) out += line + "; ";
  }
  return out;
}

TEST(FaultConflicts, ConcurrentMetadataAndStatusWritersAreRetriedAndNothingIsLost) {
  std::mt19937 rng = SeededRng();
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(FixtureOptions(3, 8, true)));
  ASSERT_OK(CreateNamespace(cluster->client()));
  ASSERT_OK_AND_ASSIGN(auto log, PodCreationLog::Start(cluster->server().store()));
  const std::vector<nlohmann::json> jobs = MixedJobs(rng, 6, 8, 4, 20);
  std::vector<std::string> names;
  for (const nlohmann::json& job : jobs) names.push_back(job["metadata"]["name"]);
  ASSERT_OK_AND_ASSIGN(auto writer_client, ConnectTo(cluster->server()));
  OtherWriter writer(*writer_client, names, rng());  // its own stream, still from the seed
  std::thread writer_thread([&] { writer.Run(); });
  ASSERT_OK(CreateJobs(cluster->client(), jobs));

  // The writer keeps going while the jobs are placed and a while after, then stops; a writer
  // that never stops could starve any optimistic-concurrency client, the controller included.
  Snapshot last;
  Eventually(
      [&] {
        absl::StatusOr<Snapshot> snapshot = TakeSnapshot(cluster->client());
        if (snapshot.ok()) last = *std::move(snapshot);
        return CountRunning(last) == static_cast<int>(jobs.size());
      },
      std::chrono::seconds(20), kSnapshotPoll);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  writer.Stop();
  writer_thread.join();
  std::cout << "other writer: " << writer.writes() << " writes, " << writer.conflicts()
            << " conflicts; controller: " << ConflictLines(*cluster->controller()) << "\n";

  const bool converged = Eventually(
      [&] {
        absl::StatusOr<Snapshot> snapshot = TakeSnapshot(cluster->client());
        if (!snapshot.ok()) return false;
        last = *std::move(snapshot);
        if (CountRunning(last) != static_cast<int>(jobs.size())) return false;
        for (const api::TrainingJob& job : last.jobs) {
          if (job.status.observed_generation != job.metadata.generation) return false;
        }
        return true;
      },
      std::chrono::seconds(120), kSnapshotPoll);
  ASSERT_TRUE(converged) << CountRunning(last) << " of " << jobs.size() << " Running";
  EXPECT_THAT(CheckInvariants(last, {}), IsEmpty());
  EXPECT_THAT(log->Duplicates(), IsEmpty());

  // Nothing the other writer wrote is lost: its last successful label, annotation and condition.
  const std::map<std::string, std::int64_t> metadata = writer.LastMetadata();
  const std::map<std::string, std::int64_t> status = writer.LastStatus();
  for (const api::TrainingJob& job : last.jobs) {
    const std::string& name = job.metadata.name;
    if (auto it = metadata.find(name); it != metadata.end()) {
      EXPECT_EQ(job.metadata.labels.at(kSeqLabel), std::to_string(it->second)) << name;
      EXPECT_EQ(job.metadata.annotations.at(kSeqAnnotation), std::to_string(it->second)) << name;
    }
    if (auto it = status.find(name); it != status.end()) {
      const api::Condition* condition =
          api::FindCondition(job.status.conditions, kForeignCondition);
      EXPECT_TRUE(condition != nullptr &&
                  condition->message == "audit " + std::to_string(it->second))
          << name << ": the other writer's condition " << kForeignCondition << " (audit "
          << it->second << ") was dropped by a status write";
    }
  }
  log->Stop();
}

}  // namespace
}  // namespace wavepool::controller::fault
