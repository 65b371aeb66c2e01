// `wavepool profile`: layer times measured with the runtime's modules, written as the planner's
// profile CSV, bind back to the model and drive the plan; bad flags exit 2 naming the flag.
#include "wavepool/planner/profile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models_test_graphs.h"
#include "tests/support/status_matchers.h"
#include "wavepool/cli/plan_command.h"
#include "wavepool/cli/profile_command.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/layer_profiler.h"

namespace wavepool::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::wavepool::testing::StatusIs;

ProfileOptions Quick(std::vector<std::int64_t> batches) {
  ProfileOptions options;
  options.batch_sizes = std::move(batches);
  options.warmup = 1;
  options.repeats = 3;
  return options;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LayerProfiler, CnnTinyProfileBindsEveryLayerAndThePlanUsesIt) {
  ASSERT_OK_AND_ASSIGN(const planner::ModelGraph model, planner::BuiltinModel("cnn_tiny"));
  ASSERT_OK_AND_ASSIGN(const std::vector<MeasuredLayer> measured,
                       ProfileLayers(model, Quick({1, 2, 4})));
  ASSERT_THAT(measured, SizeIs(model.size()));
  for (const MeasuredLayer& layer : measured) {
    ASSERT_THAT(layer.by_batch, SizeIs(3)) << model.layer(layer.layer).name;
    for (const auto& [batch, time] : layer.by_batch) {
      EXPECT_GT(time.forward.count(), 0) << model.layer(layer.layer).name << " at " << batch;
      EXPECT_GT(time.backward.count(), 0) << model.layer(layer.layer).name << " at " << batch;
    }
  }
  // Through a file, as `wavepool plan --profile FILE` reads it.
  const std::string path = TempPath("cnn_tiny_profile.csv");
  std::ofstream(path) << FormatProfileCsv(model, measured);
  ASSERT_OK_AND_ASSIGN(const std::vector<planner::LayerProfile> profiles,
                       planner::ParseProfileCsv(ReadText(path)));
  ASSERT_THAT(profiles, SizeIs(1));
  EXPECT_EQ(profiles[0].model, "cnn_tiny");
  EXPECT_THAT(profiles[0].layers, SizeIs(8));  // conv, relu, pool (x2), flatten, fc: every layer
  EXPECT_EQ(ProfiledLayerCount(model), 8);

  ASSERT_OK_AND_ASSIGN(const planner::DeviceSpec device, planner::FindDevice("a100"));
  ASSERT_OK_AND_ASSIGN(
      const planner::ComputeCostModelPtr compute,
      planner::MakeProfiledCostModel(profiles[0], model, planner::MakeAnalyticCostModel(device)));
  EXPECT_THAT(compute->Description(), HasSubstr("measured profile of cnn_tiny (8 layers"));
  // Every layer costs what was measured (written to the nanosecond), at every measured batch.
  for (const MeasuredLayer& layer : measured) {
    for (const auto& [batch, time] : layer.by_batch) {
      const planner::LayerTime bound = compute->Time(model.layer(layer.layer), batch);
      EXPECT_NEAR(planner::ToMicros(bound.forward), planner::ToMicros(time.forward), 1e-3);
      EXPECT_NEAR(planner::ToMicros(bound.backward), planner::ToMicros(time.backward), 1e-3);
    }
  }
  const planner::CommModel comm(planner::DefaultNetworkModel(device));
  planner::PlanRequest request;
  request.gpus = 2;
  request.global_batch = 8;
  ASSERT_OK_AND_ASSIGN(const planner::PlanReport report,
                       planner::MakePlan({model, device, *compute, comm}, request));
  EXPECT_THAT(report.compute_source, HasSubstr("measured profile of cnn_tiny"));
  std::remove(path.c_str());
}

TEST(LayerProfiler, EveryExecutableKindIsTimedAndItsRowsBind) {
  for (auto graph : {testing::ImageGraph(), testing::TokenGraph()}) {
    ASSERT_OK(graph.status());
    SCOPED_TRACE(graph->name());
    ASSERT_OK_AND_ASSIGN(const std::vector<MeasuredLayer> measured,
                         ProfileLayers(*graph, Quick({1, 3})));
    const std::string csv = FormatProfileCsv(*graph, measured);
    ASSERT_OK_AND_ASSIGN(const std::vector<planner::LayerProfile> profiles,
                         planner::ParseProfileCsv(csv));
    ASSERT_THAT(profiles, SizeIs(1));
    EXPECT_THAT(profiles[0].layers, SizeIs(ProfiledLayerCount(*graph)));
    ASSERT_OK_AND_ASSIGN(const planner::DeviceSpec device, planner::FindDevice("h100"));
    EXPECT_OK(
        planner::MakeProfiledCostModel(profiles[0], *graph, planner::MakeAnalyticCostModel(device))
            .status());
  }
  // DeepPool's names and settings: a grouped conv, a padded average pool, a bottleneck.
  ASSERT_OK_AND_ASSIGN(const planner::ModelGraph image, testing::ImageGraph());
  ASSERT_OK_AND_ASSIGN(const std::vector<MeasuredLayer> measured, ProfileLayers(image, Quick({2})));
  const std::string csv = FormatProfileCsv(image, measured);
  EXPECT_THAT(csv, HasSubstr("image,2,1,conv2d,\"{\"\"groups\"\":2,\"\"in_channels\"\":8,"));
  EXPECT_THAT(csv,
              HasSubstr(",avgPool2d,\"{\"\"kernel_size\"\":3,\"\"padding\"\":1,\"\"stride\"\":1}\","
                        "\"[8,12,12]\","));
  EXPECT_THAT(csv, HasSubstr(",ResnetBottleneck,"));
}

TEST(LayerProfiler, RejectsBadOptionsNamingTheField) {
  ASSERT_OK_AND_ASSIGN(const planner::ModelGraph model, planner::BuiltinModel("mlp_tiny"));
  EXPECT_THAT(ProfileLayers(model, Quick({})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch_sizes")));
  EXPECT_THAT(ProfileLayers(model, Quick({2, 2})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("strictly ascending")));
  ProfileOptions options = Quick({1});
  options.repeats = 0;
  EXPECT_THAT(ProfileLayers(model, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("repeats: must be in [1, 1000000], got 0")));
  options = Quick({1});
  options.repeats = 2'000'000'000;
  EXPECT_THAT(ProfileLayers(model, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("repeats: must be in [1, ")));
  options = Quick({1});
  options.warmup = 1'000'001;
  EXPECT_THAT(ProfileLayers(model, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("warmup: must be in [0, ")));
  options = Quick({1});
  options.threads = 100'000;
  EXPECT_THAT(ProfileLayers(model, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("threads: must be in [0, 1024] (0: LibTorch's default), got "
                                 "100000")));
}

struct CommandResult {
  int status;
  std::string out, err;
};

CommandResult Profile(const cli::ProfileFlags& flags) {
  std::ostringstream out, err;
  const int status = cli::RunProfile(flags, out, err);
  return {status, out.str(), err.str()};
}

cli::ProfileFlags Flags(const std::string& model, const std::string& batches,
                        const std::string& out) {
  cli::ProfileFlags flags;
  flags.model = model;
  flags.batch_sizes = batches;
  flags.out = out;
  flags.warmup = 1;
  flags.repeats = 2;
  return flags;
}

TEST(ProfileCommand, WritesAProfileThatPlanReads) {
  const std::string path = TempPath("mlp_tiny.csv");
  const CommandResult run = Profile(Flags("mlp_tiny", "1,2,4", path));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.err, IsEmpty());
  EXPECT_THAT(run.out, HasSubstr("batch 4: forward"));
  EXPECT_THAT(run.out, HasSubstr("wrote " + path + ": 15 rows (5 layers x 3 batch sizes)"));
  cli::PlanFlags plan;
  plan.model = "mlp_tiny";
  plan.profile = path;
  plan.gpus = 2;
  plan.global_batch = 8;
  std::ostringstream out, err;
  ASSERT_EQ(cli::RunPlan(plan, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("compute cost: measured profile of mlp_tiny (5 layers"));
  std::remove(path.c_str());
}

TEST(ProfileCommand, SaysWhichLayersThePlannerCannotBind) {
  const std::string path = TempPath("branchy_tiny.csv");
  const CommandResult run = Profile(Flags("branchy_tiny", "2", path));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("not in the profile"));
  EXPECT_THAT(run.out, HasSubstr("block1.concat"));
  std::remove(path.c_str());
}

TEST(ProfileCommand, BadFlagsExitTwoNamingTheFlag) {
  const std::string path = TempPath("unused.csv");
  const struct {
    cli::ProfileFlags flags;
    const char* message;
  } cases[] = {
      {Flags("vgg19", "1,2", path), "--model: unknown built-in model 'vgg19'"},
      {Flags("mlp_tiny", "", path), "--batch-sizes: give at least one batch size"},
      {Flags("mlp_tiny", "1,0", path), "--batch-sizes: \"0\" in \"1,0\" is not a batch size >= 1"},
      {Flags("mlp_tiny", "4,2", path), "--batch-sizes: must be strictly ascending, got 4 then 2"},
      {Flags("mlp_tiny", "1,x", path), "--batch-sizes: \"x\""},
      {Flags("mlp_tiny", "1", "/nonexistent-dir/profile.csv"),
       "--out: cannot write /nonexistent-dir/profile.csv"},
      {Flags("", "1", path), "give exactly one of --model and --layer-table"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    const CommandResult run = Profile(c.flags);
    EXPECT_EQ(run.status, 2);
    EXPECT_THAT(run.err, HasSubstr(c.message));
    EXPECT_THAT(run.out, IsEmpty());
  }
  cli::ProfileFlags negative = Flags("mlp_tiny", "1", path);
  negative.warmup = -1;
  EXPECT_THAT(Profile(negative).err, HasSubstr("--warmup: must be in [0, 1000000], got -1"));
  cli::ProfileFlags missing = Flags("", "1", path);
  missing.layer_table = TempPath("no_such_table.csv");
  const CommandResult run = Profile(missing);
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("--layer-table: open"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

// An --out that is not a regular file is refused before profiling: a FIFO without a reader would
// otherwise hold the open forever, and a profile that replaces the file whole cannot go there.
TEST(ProfileCommand, AnOutThatIsNoRegularFileIsRefusedNotWaitedOn) {
  const std::string fifo = TempPath("profile.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::future<CommandResult> run =
      std::async(std::launch::async, [&] { return Profile(Flags("mlp_tiny", "1", fifo)); });
  const bool returned = run.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!returned) {  // a writer blocked in open(2) is let go by a reader's open
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    if (reader >= 0) ::close(reader);
  }
  ASSERT_TRUE(returned) << "profile waited on an --out FIFO for a reader";
  const CommandResult fifo_run = run.get();
  EXPECT_EQ(fifo_run.status, 2);
  EXPECT_THAT(fifo_run.err, HasSubstr("--out: cannot write " + fifo + ": "));
  std::filesystem::remove(fifo);
  const CommandResult device = Profile(Flags("mlp_tiny", "1", "/dev/null"));
  EXPECT_EQ(device.status, 2);
  EXPECT_THAT(device.err, HasSubstr("--out: cannot write /dev/null: not a regular file"));
}

TEST(ProfileCommand, ALayerTableTheRuntimeCannotRunFailsWithExitOne) {
  const std::string table = TempPath("headed.csv");
  std::ofstream(table) << "name,type,inputs,input_shape,weight_shape,output_shape,attrs\n"
                          "fc,linear,,8,4x8,4,\n"
                          "head,opaque:my_head,fc,4,,2,\n";
  cli::ProfileFlags flags = Flags("", "1", TempPath("headed_profile.csv"));
  flags.layer_table = table;
  const CommandResult run = Profile(flags);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("layer 'head' of model 'headed' has type 'my_head'"));
  EXPECT_FALSE(std::filesystem::exists(flags.out));  // not left behind
  std::remove(table.c_str());
}

}  // namespace
}  // namespace wavepool::runtime
