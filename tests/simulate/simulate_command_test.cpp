#include "wavepool/cli/simulate_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "wavepool/simulate/trace.h"

namespace wavepool::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Outcome {
  int status = 0;
  std::string out;
  std::string err;
};

// A small cluster and trace, so that each run takes milliseconds.
SimulateFlags Small() {
  SimulateFlags flags;
  flags.generate.jobs = 40;
  flags.generate.arrival_rate = 0.1;
  flags.foreground_gpus = "2,4";
  flags.foreground_steps = "100:500";
  flags.background_steps = "1000:5000";
  flags.options.nodes = 2;
  return flags;
}

Outcome RunCommand(const SimulateFlags& flags) {
  std::ostringstream out, err;
  Outcome o;
  o.status = RunSimulate(flags, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/simulate_command_test_" + name;
}

TEST(SimulateCommand, PrintsEveryPolicyAndTheRatios) {
  const Outcome o = RunCommand(Small());
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_THAT(o.out, HasSubstr("cluster: 2 nodes x 8 a100 GPUs; trace: 40 jobs"));
  EXPECT_THAT(o.out, HasSubstr("offered foreground load"));
  for (const char* row : {"policy", "cluster samples/s", "GPU utilisation (busy)",
                          "fg completion s p50/p90/p99", "fg slowdown p50/p90/p99",
                          "bg progress (steps)", "wavepool / exclusive-dp cluster samples/s"}) {
    EXPECT_THAT(o.out, HasSubstr(row)) << row;
  }
  EXPECT_THAT(o.out, HasSubstr("exclusive-dp"));
  EXPECT_THAT(o.out, HasSubstr("burst"));
}

TEST(SimulateCommand, JsonHasEveryPolicyAndTheWrittenTraceReadsBack) {
  SimulateFlags flags = Small();
  flags.json = true;
  flags.policies = "wavepool,exclusive-dp";
  flags.write_trace = TempPath("trace.csv");
  const Outcome o = RunCommand(flags);
  ASSERT_EQ(o.status, 0) << o.err;
  const nlohmann::json doc = nlohmann::json::parse(o.out);
  ASSERT_EQ(doc.at("policies").size(), 2u);
  EXPECT_EQ(doc.at("policies")[0].at("policy"), "wavepool");
  EXPECT_EQ(doc.at("policies")[1].at("policy"), "exclusive-dp");
  EXPECT_EQ(doc.at("trace").at("jobs"), 40);
  EXPECT_TRUE(doc.at("ratios").at("burstOverExclusiveDp").is_null());
  EXPECT_TRUE(doc.at("ratios").at("wavepoolOverExclusiveDp").is_number());

  std::ifstream in(flags.write_trace);
  std::stringstream text;
  text << in.rdbuf();
  auto trace = simulate::ParseTraceCsv(flags.write_trace, text.str());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->jobs.size(), 40u);

  // The same trace read back simulates to the same report.
  SimulateFlags again = flags;
  again.trace = flags.write_trace;
  again.write_trace.clear();
  const Outcome replay = RunCommand(again);
  ASSERT_EQ(replay.status, 0) << replay.err;
  EXPECT_EQ(replay.out, o.out);
  std::remove(flags.write_trace.c_str());
}

// Each bad flag value is an error that names the flag and what would be valid.
TEST(SimulateCommand, BadFlagsNameTheFlag) {
  struct Case {
    void (*mutate)(SimulateFlags&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](SimulateFlags& f) { f.models = "vgg16:x"; },
       "wavepool simulate: --models: \"vgg16:x\" must be MODEL or MODEL:WEIGHT"},
      {[](SimulateFlags& f) { f.models = "vgg16,vgg19"; },
       "wavepool simulate: generated trace: models: unknown model \"vgg19\""},
      {[](SimulateFlags& f) { f.foreground_gpus = "2,,4"; },
       "wavepool simulate: --foreground-gpus: empty item"},
      {[](SimulateFlags& f) { f.foreground_batches = "32,-1"; },
       "wavepool simulate: --foreground-batches: every value must be >= 1, got -1"},
      {[](SimulateFlags& f) { f.foreground_steps = "500:100"; },
       "wavepool simulate: --foreground-steps: MIN must be <= MAX"},
      {[](SimulateFlags& f) { f.background_steps = "1:2:3"; },
       "wavepool simulate: --background-steps: must be MIN:MAX"},
      {[](SimulateFlags& f) { f.background_batches = "eight"; },
       "wavepool simulate: --background-batches: \"eight\" is not an integer"},
      {[](SimulateFlags& f) { f.policies = "wavepool,dp"; },
       "wavepool simulate: --policies: unknown policy \"dp\""},
      {[](SimulateFlags& f) { f.policies = "burst,burst"; },
       "wavepool simulate: --policies: \"burst\" is named twice"},
      {[](SimulateFlags& f) { f.foreground_gpus = "256"; },
       "wavepool simulate: generated trace: foreground_batches: no batch is >= 256 GPUs"},
      {[](SimulateFlags& f) { f.options.device = "tpu"; }, "wavepool simulate: device:"},
  };
  for (const Case& c : cases) {
    SimulateFlags flags = Small();
    c.mutate(flags);
    const Outcome o = RunCommand(flags);
    EXPECT_EQ(o.status, 1) << c.expected;
    EXPECT_THAT(o.err, StartsWith(c.expected));
    EXPECT_EQ(o.out, "");
  }
}

TEST(SimulateCommand, ABadTraceFileIsNamedWithItsLine) {
  const std::string path = TempPath("bad.csv");
  {
    std::ofstream file(path);
    file << simulate::kTraceCsvHeader << "\n"
         << "a,Foreground,0,vgg16,2,32,100\n"
         << "b,Background,1,vgg16,4,32,100\n";
  }
  SimulateFlags flags = Small();
  flags.trace = path;
  const Outcome o = RunCommand(flags);
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.err, StartsWith("wavepool simulate: " + path +
                                ":3:22: gpus: a Background job trains on 1 GPU, got 4"));
  std::remove(path.c_str());

  flags.trace = TempPath("missing.csv");
  const Outcome missing = RunCommand(flags);
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr("missing.csv"));
}

TEST(SimulateCommand, AJobLargerThanTheClusterIsNamed) {
  SimulateFlags flags = Small();
  flags.foreground_gpus = "32";
  flags.foreground_batches = "64";
  const Outcome o = RunCommand(flags);
  EXPECT_EQ(o.status, 1);
  EXPECT_THAT(o.err, HasSubstr("needs 32 GPUs; the cluster has 16"));
}

// Ranges CLI11 checks while parsing: the message names the flag.
TEST(SimulateCommand, OutOfRangeNumbersAreRejectedWhileParsing) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"simulate", "--nodes", "0"},
                                               {"simulate", "--max-slowdown", "0.5"},
                                               {"simulate", "--foreground-share", "2"},
                                               {"simulate", "--arrival-rate", "0"}}) {
    CLI::App app;
    SimulateFlags flags;
    AddSimulateCommand(&app, &flags);
    std::vector<const char*> argv = {"wavepool"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
      ADD_FAILURE() << args[1] << " " << args[2] << " was accepted";
    } catch (const CLI::ParseError& e) {
      EXPECT_THAT(e.what(), HasSubstr(args[1])) << e.what();
    }
  }
}

}  // namespace
}  // namespace wavepool::cli
