#include "wavepool/simulate/trace.h"

#include <algorithm>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::simulate {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

TraceOptions Small(std::uint64_t seed) {
  TraceOptions o;
  o.jobs = 200;
  o.seed = seed;
  return o;
}

TEST(GenerateTrace, IsTheSameForASeedAndDiffersAcrossSeeds) {
  ASSERT_OK_AND_ASSIGN(Trace a, GenerateTrace(Small(7)));
  ASSERT_OK_AND_ASSIGN(Trace b, GenerateTrace(Small(7)));
  ASSERT_OK_AND_ASSIGN(Trace c, GenerateTrace(Small(8)));
  EXPECT_EQ(FormatTraceCsv(a), FormatTraceCsv(b));
  EXPECT_NE(FormatTraceCsv(a), FormatTraceCsv(c));
}

constexpr char kPinnedSeedOne[] =
    "name,role,arrival_seconds,model,gpus,global_batch,steps\n"
    "bg-0,Background,4.1800276738517956,bert_base,1,16,66695\n"
    "bg-1,Background,5.8609498548292063,wide_resnet101_2,1,8,29380\n"
    "bg-2,Background,11.043852767753608,inception_v3,1,8,26554\n";

// The generator's own random numbers and distributions make a seed's trace independent of the
// standard library's distributions; these lines pin it (a change to the draws must change this
// test on purpose).
TEST(GenerateTrace, FirstJobsOfSeedOneArePinned) {
  TraceOptions o;
  o.jobs = 3;
  ASSERT_OK_AND_ASSIGN(Trace trace, GenerateTrace(o));
  ASSERT_EQ(trace.jobs.size(), 3u);
  const std::string csv = FormatTraceCsv(trace);
  ASSERT_OK_AND_ASSIGN(Trace again, ParseTraceCsv("pinned", csv));
  EXPECT_EQ(FormatTraceCsv(again), csv);
  EXPECT_EQ(trace.jobs[0].name.substr(3), "0");
  EXPECT_EQ(trace.jobs[2].name.substr(3), "2");
  EXPECT_EQ(csv, kPinnedSeedOne);
}

TEST(GenerateTrace, DrawsOnlyWhatTheOptionsAllow) {
  TraceOptions o = Small(3);
  o.models = {{"vgg16", 1}, {"bert_base", 3}};
  o.foreground_gpus = {4, 8};
  o.foreground_batches = {4, 64};
  o.foreground_steps_min = 10;
  o.foreground_steps_max = 20;
  o.background_batches = {8};
  o.background_steps_min = 100;
  o.background_steps_max = 100;
  o.foreground_share = 0.3;
  ASSERT_OK_AND_ASSIGN(Trace trace, GenerateTrace(o));
  ASSERT_EQ(trace.jobs.size(), 200u);
  std::set<std::string> names, models;
  double previous = 0;
  int foreground = 0, bert = 0;
  for (const TraceJob& j : trace.jobs) {
    EXPECT_TRUE(names.insert(j.name).second) << j.name;
    EXPECT_GE(j.arrival_seconds, previous);
    previous = j.arrival_seconds;
    models.insert(j.model);
    bert += j.model == "bert_base";
    if (j.role == api::Role::kForeground) {
      ++foreground;
      EXPECT_EQ(j.name.rfind("fg-", 0), 0u);
      EXPECT_TRUE(j.gpus == 4 || j.gpus == 8) << j.gpus;
      EXPECT_GE(j.global_batch, j.gpus);  // 4 only for 4 GPUs
      EXPECT_GE(j.steps, 10);
      EXPECT_LE(j.steps, 20);
    } else {
      EXPECT_EQ(j.name.rfind("bg-", 0), 0u);
      EXPECT_EQ(j.gpus, 1);
      EXPECT_EQ(j.global_batch, 8);
      EXPECT_EQ(j.steps, 100);
    }
  }
  EXPECT_EQ(models, (std::set<std::string>{"vgg16", "bert_base"}));
  // Binomial(200, 0.3) and (200, 0.75): far inside these bounds for any seed worth using.
  EXPECT_GT(foreground, 30);
  EXPECT_LT(foreground, 90);
  EXPECT_GT(bert, 120);
  // Mean gap 1 / arrival_rate: 200 jobs at 0.2/s arrive over about 1,000 s.
  EXPECT_GT(trace.jobs.back().arrival_seconds, 600);
  EXPECT_LT(trace.jobs.back().arrival_seconds, 1500);
}

TEST(TraceOptions, ErrorsNameTheOption) {
  auto check = [](auto mutate, const std::string& field) {
    TraceOptions o;
    mutate(o);
    EXPECT_THAT(GenerateTrace(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field)))
        << field;
  };
  check([](TraceOptions& o) { o.jobs = 0; }, "jobs: must be >= 1");
  check([](TraceOptions& o) { o.foreground_share = 1.5; }, "foreground_share");
  check([](TraceOptions& o) { o.arrival_rate = 0; }, "arrival_rate");
  check([](TraceOptions& o) { o.models = {}; }, "models: must list");
  check([](TraceOptions& o) { o.models = {{"vgg17", 1}}; }, "models: unknown model \"vgg17\"");
  check([](TraceOptions& o) { o.models = {{"vgg16", 0}}; }, "the weight of vgg16 must be > 0");
  check([](TraceOptions& o) { o.foreground_gpus = {2, 0}; }, "foreground_gpus: every value");
  check([](TraceOptions& o) { o.background_batches = {}; }, "background_batches");
  check([](TraceOptions& o) { o.foreground_steps_min = 5, o.foreground_steps_max = 4; },
        "foreground_steps: must be 1 <= min <= max");
  check([](TraceOptions& o) { o.foreground_gpus = {256}; }, "no batch is >= 256 GPUs");
}

constexpr char kHeader[] = "name,role,arrival_seconds,model,gpus,global_batch,steps\n";

TEST(ParseTraceCsv, ReadsCommentsBlankLinesAndCrlf) {
  const std::string text = std::string("# a trace\r\n") + kHeader +
                           "a,Foreground,0,vgg16,8,32,100\r\n"
                           "\n"
                           "  b , Background , 1.5 , resnet50 , 1 , 16 , 2000\n"
                           "# the end\n";
  ASSERT_OK_AND_ASSIGN(Trace trace, ParseTraceCsv("t.csv", text));
  ASSERT_EQ(trace.jobs.size(), 2u);
  EXPECT_EQ(trace.jobs[0].name, "a");
  EXPECT_EQ(trace.jobs[0].gpus, 8);
  EXPECT_EQ(trace.jobs[1].name, "b");
  EXPECT_EQ(trace.jobs[1].role, api::Role::kBackground);
  EXPECT_DOUBLE_EQ(trace.jobs[1].arrival_seconds, 1.5);
  EXPECT_EQ(trace.jobs[1].model, "resnet50");
  EXPECT_EQ(trace.jobs[1].steps, 2000);
}

TEST(ParseTraceCsv, RoundTripsAGeneratedTraceExactly) {
  ASSERT_OK_AND_ASSIGN(Trace trace, GenerateTrace(Small(11)));
  ASSERT_OK_AND_ASSIGN(Trace read, ParseTraceCsv("g.csv", FormatTraceCsv(trace)));
  ASSERT_EQ(read.jobs.size(), trace.jobs.size());
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    EXPECT_EQ(read.jobs[i].arrival_seconds, trace.jobs[i].arrival_seconds);  // bit for bit
    EXPECT_EQ(read.jobs[i].name, trace.jobs[i].name);
    EXPECT_EQ(read.jobs[i].steps, trace.jobs[i].steps);
  }
}

// Each bad line is the third line of its file (after the header and one good job).
struct BadLine {
  std::string line;
  std::string expected;  // a substring of the message
};

class ParseTraceCsvRejects : public ::testing::TestWithParam<BadLine> {};

TEST_P(ParseTraceCsvRejects, NamingTheLineColumnAndField) {
  const std::string text =
      std::string(kHeader) + "first,Foreground,10,vgg16,2,32,100\n" + GetParam().line + "\n";
  EXPECT_THAT(ParseTraceCsv("jobs.csv", text),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().expected)));
}

INSTANTIATE_TEST_SUITE_P(
    BadLines, ParseTraceCsvRejects,
    ::testing::Values(
        BadLine{"x,Foreground,10,vgg16,2,32", "jobs.csv:3: expected 7 fields"},
        BadLine{"x,Middle,10,vgg16,2,32,100",
                "jobs.csv:3:3: role: must be Foreground or Background, got \"Middle\""},
        BadLine{"x,Foreground,ten,vgg16,2,32,100",
                "jobs.csv:3:14: arrival_seconds: must be a "
                "finite number"},
        BadLine{"x,Foreground,inf,vgg16,2,32,100", "arrival_seconds: must be a finite number"},
        BadLine{"x,Foreground,9,vgg16,2,32,100",
                "jobs.csv:3:14: arrival_seconds: jobs must be in arrival order"},
        BadLine{"x,Foreground,10,vgg17,2,32,100", "jobs.csv:3:17: model: unknown model \"vgg17\""},
        BadLine{"x,Foreground,10,vgg16,two,32,100", "jobs.csv:3:23: gpus: must be an integer"},
        BadLine{"x,Foreground,10,vgg16,0,32,100", "jobs.csv:3:23: gpus: must be >= 1, got 0"},
        BadLine{"x,Foreground,10,vgg16,2,32,99999999999999999999", "steps: must be an integer"},
        BadLine{"x,Foreground,10,vgg16,8,4,100",
                "jobs.csv:3:25: global_batch: must be >= the job's 8 GPUs"},
        BadLine{"x,Background,10,vgg16,2,32,100",
                "jobs.csv:3:23: gpus: a Background job trains on 1 GPU, got 2"},
        BadLine{"first,Background,10,vgg16,1,32,100",
                "jobs.csv:3:1: name: \"first\" names an earlier job"},
        BadLine{"\"x\",Background,10,vgg16,1,32,100", "name: quoted fields are not supported"},
        BadLine{",Background,10,vgg16,1,32,100", "jobs.csv:3:1: name: must not be empty"}));

TEST(ParseTraceCsv, RejectsAWrongHeaderAndATraceWithoutJobs) {
  EXPECT_THAT(ParseTraceCsv("h.csv", "name,role,arrival,model,gpus,global_batch,steps\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("h.csv:1: the header must")));
  EXPECT_THAT(ParseTraceCsv("e.csv", kHeader), StatusIs(absl::StatusCode::kInvalidArgument,
                                                        HasSubstr("e.csv: the trace has no job")));
  EXPECT_THAT(ParseTraceCsv("n.csv", "# nothing\n\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n.csv: no header line")));
}

}  // namespace
}  // namespace wavepool::simulate
