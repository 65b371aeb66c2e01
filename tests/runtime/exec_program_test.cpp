// Stage programs compiled from plans (the sample blocks, edges, sync groups and the two wave
// placements), store addresses and the rendezvous' errors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/exec_test_support.h"
#include "tests/support/files.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/stage_program.h"

namespace wavepool::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

planner::ModelGraph Mlp() {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel("mlp_tiny");
  EXPECT_TRUE(graph.ok());
  return *std::move(graph);
}

// mlp_tiny (fc1, relu1, fc2, relu2, fc3) in two stages: fc1..relu1 on ranks 0-2, the rest on 1.
api::Plan TwoStagePlan() {
  api::Plan plan;
  plan.strategy = api::Strategy::kBurstParallel;
  plan.global_batch_size = 10;
  plan.gpus = 3;
  plan.stages.resize(2);
  plan.stages[0] = {0, {"fc1", "relu1"}, 3, {0, 1, 2}, 4, {}, {}, 0};
  plan.stages[1] = {1, {"fc2", "relu2", "fc3"}, 1, {1}, 10, {0}, {}, 0};
  return plan;
}

TEST(StageProgram, SplitsEachStagesSamplesIntoContiguousBlocksInRankOrder) {
  ASSERT_OK_AND_ASSIGN(StageProgram program, StageProgram::Compile(TwoStagePlan(), Mlp()));
  ASSERT_EQ(program.forward_order().size(), 2u);
  const StageInstance& first = program.instance(0, 0);
  EXPECT_EQ(first.Block(0).begin, 0);
  EXPECT_EQ(first.Block(0).end, 4);
  EXPECT_EQ(first.Block(1).begin, 4);
  EXPECT_EQ(first.Block(2).begin, 8);
  EXPECT_EQ(first.Block(2).end, 10);  // the last block is shorter
  EXPECT_TRUE(first.BlockOf(7).empty());
  EXPECT_EQ(program.instance(1, 0).BlockOf(1).size(), 10);
  // One edge: relu1's output moves from stage 0's ranks to stage 1's.
  ASSERT_EQ(program.edges().size(), 1u);
  EXPECT_EQ(program.edges()[0].from_stage, 0);
  EXPECT_EQ(program.edges()[0].to_stage, 1);
  EXPECT_TRUE(program.reads_input(0));
  EXPECT_TRUE(program.holds_sink(1));
  EXPECT_THAT(program.sync_group(0), ElementsAre(0, 1, 2));
  EXPECT_THAT(program.DistinctSyncGroups(), ElementsAre(ElementsAre(0, 1, 2)));
  EXPECT_THAT(program.LayersOn(0), ElementsAre(0, 1));
  EXPECT_THAT(program.LayersOn(1), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(program.InstancesOn(2), ElementsAre(0));
}

TEST(StageProgram, PlacesModelParallelWavesStationaryOrRoundRobin) {
  api::Plan plan;
  plan.strategy = api::Strategy::kModelParallelWaves;
  plan.global_batch_size = 4;
  plan.gpus = 3;
  plan.waves = 3;
  plan.stages.resize(3);
  plan.stages[0] = {0, {"fc1", "relu1"}, 1, {0}, 4, {}, {}, 0};
  plan.stages[1] = {1, {"fc2", "relu2"}, 1, {1}, 4, {0}, {}, 0};
  plan.stages[2] = {2, {"fc3"}, 1, {2}, 4, {1}, {}, 0};
  ASSERT_OK_AND_ASSIGN(StageProgram stationary, StageProgram::Compile(plan, Mlp()));
  EXPECT_EQ(stationary.samples_per_step(), 12);  // one batch per wave
  EXPECT_THAT(stationary.instance(1, 2).ranks, ElementsAre(1));
  EXPECT_EQ(stationary.instance(1, 2).samples.begin, 8);
  EXPECT_THAT(stationary.sync_group(1), ElementsAre(1));
  plan.wave_placement = api::WavePlacement::kRoundRobin;
  ASSERT_OK_AND_ASSIGN(StageProgram round_robin, StageProgram::Compile(plan, Mlp()));
  // Wavelet §3.3.2: wave w runs stage s on GPU (s + w) mod N; every GPU holds every partition.
  EXPECT_THAT(round_robin.instance(1, 2).ranks, ElementsAre(0));
  EXPECT_THAT(round_robin.instance(2, 1).ranks, ElementsAre(0));
  EXPECT_THAT(round_robin.sync_group(0), ElementsAre(0, 1, 2));
  EXPECT_THAT(round_robin.LayersOn(2), ElementsAre(0, 1, 2, 3, 4));
}

TEST(StageProgram, RefusesPlansThatDoNotFitTheModelNamingTheField) {
  api::Plan plan = TwoStagePlan();
  plan.stages[1].layers = {"fc2", "relu2"};
  EXPECT_THAT(StageProgram::Compile(plan, Mlp()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no stage runs layer 'fc3' of model mlp_tiny")));
  plan = TwoStagePlan();
  plan.stages[1].layers[0] = "fc9";
  EXPECT_THAT(StageProgram::Compile(plan, Mlp()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stages[1].layers[0]: model mlp_tiny has no layer 'fc9'")));
  plan = TwoStagePlan();
  std::swap(plan.stages[0].layers, plan.stages[1].layers);
  EXPECT_THAT(StageProgram::Compile(plan, Mlp()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("reads 'relu1', which runs in the later stage 1")));
  plan = TwoStagePlan();
  plan.stages[0].per_gpu_batch = 3;
  EXPECT_THAT(StageProgram::Compile(plan, Mlp()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stages[0].perGpuBatch: 3 samples on 3 GPUs do not cover the "
                                 "global batch of 10")));
  plan = TwoStagePlan();
  plan.strategy = api::Strategy::kModelParallelWaves;
  EXPECT_THAT(StageProgram::Compile(plan, Mlp()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stages[0].ranks: a ModelParallelWaves stage runs on exactly "
                                 "one rank")));
}

TEST(StoreAddress, ParsesTcpAndFileAndNamesWhatIsWrong) {
  ASSERT_OK_AND_ASSIGN(StoreAddress tcp, ParseStoreAddress("tcp://job-g0-0.job-g0.ns.svc:29500"));
  EXPECT_EQ(tcp.host, "job-g0-0.job-g0.ns.svc");
  EXPECT_EQ(tcp.port, 29500);
  ASSERT_OK_AND_ASSIGN(StoreAddress v6, ParseStoreAddress("tcp://[::1]:80"));
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.ToString(), "tcp://[::1]:80");
  ASSERT_OK_AND_ASSIGN(StoreAddress file, ParseStoreAddress("file:///tmp/store"));
  EXPECT_EQ(file.path, "/tmp/store");
  EXPECT_THAT(ParseStoreAddress("tcp://host"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'tcp://host' has no port")));
  EXPECT_THAT(ParseStoreAddress("tcp://host:70000"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not in [1, 65535]")));
  EXPECT_THAT(ParseStoreAddress("file://relative"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absolute path")));
  EXPECT_THAT(
      ParseStoreAddress("http://x:1"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(tcp://HOST:PORT or file://PATH)")));
}

TEST(Rendezvous, NamesEveryRankThatDidNotArrive) {
  ASSERT_OK_AND_ASSIGN(const ::wavepool::testing::TempDir dir,
                       ::wavepool::testing::TempDir::Create("wavepool-rendezvous"));
  StoreAddress address;
  address.kind = StoreAddress::Kind::kFile;
  address.path = dir.File("store");
  absl::StatusOr<StorePtr> one, two;
  std::thread rank1([&] { one = Rendezvous(address, 1, 4, std::chrono::milliseconds(300)); });
  two = Rendezvous(address, 2, 4, std::chrono::milliseconds(300));
  rank1.join();
  EXPECT_THAT(one, StatusIs(absl::StatusCode::kDeadlineExceeded,
                            HasSubstr("ranks 0, 3 of 4 did not arrive within 0.3 s")));
  EXPECT_THAT(two, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("ranks 0, 3 of 4")));
  EXPECT_THAT(Rendezvous(address, 4, 4, std::chrono::milliseconds(10)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("rank 4 is not in [0, world size 4)")));
}

TEST(Rendezvous, WaitsOnTheInjectedClockNotInRealTime) {
  ASSERT_OK_AND_ASSIGN(const ::wavepool::testing::TempDir dir,
                       ::wavepool::testing::TempDir::Create("wavepool-rendezvous"));
  StoreAddress address;
  address.kind = StoreAddress::Kind::kFile;
  address.path = dir.File("store");
  ::wavepool::testing::SimulatedClock clock;
  absl::StatusOr<StorePtr> one;
  // Five minutes of waiting for rank 0, which never comes, pass in simulated time.
  std::thread rank1(
      [&] { one = Rendezvous(address, 1, 2, std::chrono::minutes(5), /*stopped=*/{}, clock); });
  clock.WaitForSleepers(1);  // rank 1 is between two reads of the store
  clock.Advance(std::chrono::minutes(6));
  rank1.join();
  EXPECT_THAT(one, StatusIs(absl::StatusCode::kDeadlineExceeded,
                            HasSubstr("rank 0 of 2 did not arrive within 300 s")));
}

// Rendezvous on a thread of its own, given `limit` to return; nullopt when it did not (that thread
// is left behind, detached: c10d spins forever on a store file it misreads, deaf to everything).
std::optional<absl::StatusOr<StorePtr>> RendezvousWithin(const StoreAddress& address, int rank,
                                                         int world_size,
                                                         std::chrono::milliseconds timeout,
                                                         std::chrono::seconds limit) {
  auto result = std::make_shared<std::promise<absl::StatusOr<StorePtr>>>();
  std::future<absl::StatusOr<StorePtr>> done = result->get_future();
  std::thread([result, address, rank, world_size, timeout] {
    result->set_value(Rendezvous(address, rank, world_size, timeout));
  }).detach();
  if (done.wait_for(limit) != std::future_status::ready) return std::nullopt;
  return done.get();
}

TEST(Rendezvous, AFileStoreOverAFileOfAnotherFormatIsRefusedNamingTheOffset) {
  ASSERT_OK_AND_ASSIGN(const ::wavepool::testing::TempDir dir,
                       ::wavepool::testing::TempDir::Create("wavepool-rendezvous"));
  StoreAddress address;
  address.kind = StoreAddress::Kind::kFile;
  address.path = dir.File("store");
  // One whole record (key "k", value "v"), then a key whose length (4096) runs past the end.
  ASSERT_OK(::wavepool::testing::WriteFile(address.path,
                                           std::string("\x01\0\0\0k\x01\0\0\0v\0\x10\0\0", 14)));
  std::optional<absl::StatusOr<StorePtr>> result =
      RendezvousWithin(address, 1, 2, std::chrono::seconds(2), std::chrono::seconds(10));
  ASSERT_TRUE(result.has_value()) << "the rendezvous never returned from a foreign store file";
  EXPECT_THAT(*result, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("not a c10d FileStore file: the key at byte offset 10 "
                                          "claims 4096 bytes, 0 follow")));
  // A key without its value.
  ASSERT_OK(::wavepool::testing::WriteFile(address.path, std::string("\x01\0\0\0k", 5)));
  result = RendezvousWithin(address, 1, 2, std::chrono::seconds(2), std::chrono::seconds(10));
  ASSERT_TRUE(result.has_value()) << "the rendezvous never returned from a record cut short";
  EXPECT_THAT(*result,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the value length at byte offset 5 needs 4 bytes, 0 remain")));
}

// A loopback TCP listener that never accepts: the kernel completes connections into its backlog,
// so a client connects and sends, and its reads wait for an answer that never comes. Closing it
// resets those connections.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~SilentListener() { Close(); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  std::uint16_t port() const { return port_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

TEST(Rendezvous, AStoreThatNeverAnswersFailsWithinTheTimeout) {
  SilentListener listener;
  ASSERT_NE(listener.port(), 0);
  StoreAddress address;
  address.kind = StoreAddress::Kind::kTcp;
  address.host = "127.0.0.1";
  address.port = listener.port();
  std::promise<absl::StatusOr<StorePtr>> result;
  std::future<absl::StatusOr<StorePtr>> done = result.get_future();
  std::thread rank1([&] { result.set_value(Rendezvous(address, 1, 2, std::chrono::seconds(2))); });
  const bool returned = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  listener.Close();  // a rank still waiting reads a reset connection and returns
  rank1.join();
  ASSERT_TRUE(returned) << "the rendezvous waited on a silent store past its 2 s timeout";
  EXPECT_THAT(done.get(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                   HasSubstr("the store did not answer within 2 s")));
}

}  // namespace
}  // namespace wavepool::runtime
