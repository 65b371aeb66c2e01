// BatchLoader: the samples of each step's blocks, the same with or without pre-loading and
// however the batch is split over ranks; errors; pre-loading that overlaps training; a prompt stop.
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::StatusIs;

SampleSpec Features(std::vector<std::int64_t> shape, std::int64_t classes = 10) {
  SampleSpec spec;
  spec.shape = std::move(shape);
  spec.classes = classes;
  return spec;
}

SampleSourcePtr Synthetic(const SampleSpec& spec, std::int64_t size = 1000) {
  absl::StatusOr<SampleSourcePtr> source = OpenSampleSource("synthetic", spec, 17, size);
  EXPECT_OK(source.status());
  return source.ok() ? *source : nullptr;
}

// Wraps a source: counts reads, sleeps `delay` in each, and fails the read of one index.
class InstrumentedSource final : public SampleSource {
 public:
  InstrumentedSource(SampleSourcePtr inner, std::chrono::microseconds delay,
                     std::int64_t failing_index = -1)
      : inner_(std::move(inner)), delay_(delay), failing_index_(failing_index) {}

  const SampleSpec& spec() const override { return inner_->spec(); }
  std::int64_t size() const override { return inner_->size(); }
  std::string Describe() const override { return "instrumented " + inner_->Describe(); }
  absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const override {
    reads_.fetch_add(1);
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (index == failing_index_) return absl::UnavailableError("disk went away");
    return inner_->Read(index, input, label);
  }
  std::int64_t reads() const { return reads_.load(); }

 private:
  const SampleSourcePtr inner_;
  const std::chrono::microseconds delay_;
  const std::int64_t failing_index_;
  mutable std::atomic<std::int64_t> reads_{0};
};

std::vector<std::vector<Batch>> Steps(BatchLoader& loader, int steps) {
  std::vector<std::vector<Batch>> all;
  for (int s = 0; s < steps; ++s) {
    absl::StatusOr<std::vector<Batch>> batches = loader.Next();
    EXPECT_OK(batches.status());
    if (!batches.ok()) break;
    all.push_back(std::move(*batches));
  }
  return all;
}

std::unique_ptr<BatchLoader> Loader(SampleSourcePtr source, std::int64_t per_step,
                                    std::vector<BatchBlock> blocks, BatchLoader::Options options) {
  const std::int64_t size = source->size();
  absl::StatusOr<std::unique_ptr<BatchLoader>> loader = BatchLoader::Create(
      std::move(source), SampleOrder(3, size, per_step), std::move(blocks), options);
  EXPECT_OK(loader.status());
  return loader.ok() ? std::move(*loader) : nullptr;
}

BatchLoader::Options Preload(bool on) {
  BatchLoader::Options options;
  options.preload = on;
  return options;
}

TEST(BatchLoader, RowsAreTheOrderedSamplesOfEachStep) {
  const SampleSourcePtr source = Synthetic(Features({2, 3, 3}));
  auto loader = Loader(source, 8, {{0, 8}}, Preload(true));
  const SampleOrder order(3, source->size(), 8);
  const std::vector<std::vector<Batch>> steps = Steps(*loader, 3);
  ASSERT_EQ(steps.size(), 3u);
  for (std::int64_t s = 0; s < 3; ++s) {
    const Batch& batch = steps[static_cast<std::size_t>(s)].at(0);
    EXPECT_EQ(batch.step, s);
    EXPECT_EQ(batch.first_sample, 0);
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<std::int64_t>{8, 2, 3, 3}));
    ASSERT_EQ(batch.inputs.scalar_type(), torch::kFloat32);
    ASSERT_EQ(batch.labels.sizes(), (std::vector<std::int64_t>{8}));
    ASSERT_EQ(batch.labels.scalar_type(), torch::kInt64);
    for (std::int64_t row = 0; row < 8; ++row) {
      torch::Tensor expected = torch::empty({2, 3, 3});
      std::int64_t label = -1;
      ASSERT_OK(source->Read(order.Index(s, row), expected.data_ptr<float>(), &label));
      EXPECT_TRUE(torch::equal(batch.inputs[row], expected)) << "step " << s << " row " << row;
      EXPECT_EQ(batch.labels[row].item<std::int64_t>(), label);
    }
  }
}

TEST(BatchLoader, PreloadingAndSplittingNeverChangeTheSamples) {
  const SampleSourcePtr source = Synthetic(Features({16}), 50);  // 12 per step: epochs wrap
  auto whole = Loader(source, 12, {{0, 12}}, Preload(false));
  auto preloaded = Loader(source, 12, {{0, 12}}, Preload(true));
  auto rank0 = Loader(source, 12, {{0, 5}}, Preload(true));
  auto rank1 = Loader(source, 12, {{5, 7}}, Preload(false));
  auto two_blocks = Loader(source, 12, {{9, 3}, {0, 9}}, Preload(true));
  for (int s = 0; s < 10; ++s) {
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> expected, whole->Next());
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> same, preloaded->Next());
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> first, rank0->Next());
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> second, rank1->Next());
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> swapped, two_blocks->Next());
    const torch::Tensor inputs = expected[0].inputs, labels = expected[0].labels;
    EXPECT_TRUE(torch::equal(same[0].inputs, inputs));
    EXPECT_TRUE(torch::equal(same[0].labels, labels));
    EXPECT_EQ(first[0].first_sample, 0);
    EXPECT_EQ(second[0].first_sample, 5);
    EXPECT_TRUE(torch::equal(torch::cat({first[0].inputs, second[0].inputs}), inputs));
    EXPECT_TRUE(torch::equal(torch::cat({first[0].labels, second[0].labels}), labels));
    ASSERT_EQ(swapped.size(), 2u);  // in the order given, each at its own position
    EXPECT_EQ(swapped[0].first_sample, 9);
    EXPECT_TRUE(torch::equal(torch::cat({swapped[1].inputs, swapped[0].inputs}), inputs));
    for (const Batch& batch : {same[0], first[0], second[0], swapped[0], swapped[1]}) {
      EXPECT_EQ(batch.step, s);
    }
  }
}

TEST(BatchLoader, StepStrideServesEveryOtherStep) {
  const SampleSourcePtr source = Synthetic(Features({4}));
  auto all = Loader(source, 6, {{0, 6}}, Preload(false));
  BatchLoader::Options odd = Preload(true);
  odd.first_step = 1;
  odd.step_stride = 2;
  auto odd_steps = Loader(source, 6, {{0, 6}}, odd);
  const std::vector<std::vector<Batch>> every = Steps(*all, 8);
  const std::vector<std::vector<Batch>> odds = Steps(*odd_steps, 4);
  ASSERT_EQ(odds.size(), 4u);
  for (std::size_t i = 0; i < odds.size(); ++i) {
    EXPECT_EQ(odds[i][0].step, static_cast<std::int64_t>(2 * i + 1));
    EXPECT_TRUE(torch::equal(odds[i][0].inputs, every[2 * i + 1][0].inputs));
  }
}

TEST(BatchLoader, TokenSamplesAreInt64) {
  SampleSpec spec;
  spec.kind = SampleSpec::Kind::kTokens;
  spec.shape = {10};
  spec.vocabulary = 30;
  spec.classes = 2;
  auto loader = Loader(Synthetic(spec), 4, {{0, 4}}, Preload(true));
  ASSERT_OK_AND_ASSIGN(std::vector<Batch> batches, loader->Next());
  EXPECT_EQ(batches[0].inputs.scalar_type(), torch::kInt64);
  EXPECT_EQ(batches[0].inputs.sizes(), (std::vector<std::int64_t>{4, 10}));
  EXPECT_GE(batches[0].inputs.min().item<std::int64_t>(), 0);
  EXPECT_LT(batches[0].inputs.max().item<std::int64_t>(), 30);
}

TEST(BatchLoader, CreateRejectsBlocksOrdersAndOptionsThatDoNotFit) {
  const SampleSourcePtr source = Synthetic(Features({4}), 100);
  const auto create = [&](std::vector<BatchBlock> blocks, SampleOrder order,
                          BatchLoader::Options options = {}) {
    return BatchLoader::Create(source, order, std::move(blocks), options).status();
  };
  const SampleOrder order(1, 100, 8);
  const auto invalid = [](const std::string& text) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(text));
  };
  EXPECT_THAT(create({{0, 0}}, order), invalid("block 0 (positions [0, 0))"));
  EXPECT_THAT(create({{0, 4}, {-1, 2}}, order), invalid("block 1"));
  EXPECT_THAT(create({{6, 3}}, order), invalid("within the step's 8 positions"));
  EXPECT_THAT(create({{0, 8}}, SampleOrder(1, 101, 8)), invalid("covers 101 samples"));
  EXPECT_THAT(create({{0, 8}}, SampleOrder(1, 0, 8)), invalid("dataset_size (0)"));
  EXPECT_THAT(create({{0, 8}}, order, {true, -1, 1}), invalid("first_step"));
  EXPECT_THAT(create({{0, 8}}, order, {true, 0, 0}), invalid("step_stride"));
  EXPECT_THAT(BatchLoader::Create(nullptr, order, {{0, 8}}, {}).status(), invalid("no sample"));
  // A rank with no block of the batch gets empty steps.
  ASSERT_OK_AND_ASSIGN(auto empty, BatchLoader::Create(source, order, {}, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Batch> none, empty->Next());
  EXPECT_TRUE(none.empty());
}

TEST(BatchLoader, AReadErrorIsReturnedByThatStepAndEveryLaterOne) {
  const SampleSourcePtr inner = Synthetic(Features({4}), 100);
  const std::int64_t failing = SampleOrder(3, 100, 10).Index(1, 6);
  for (const bool preload : {false, true}) {
    auto source =
        std::make_shared<InstrumentedSource>(inner, std::chrono::microseconds(0), failing);
    auto loader = Loader(source, 10, {{0, 5}, {5, 5}}, Preload(preload));
    EXPECT_OK(loader->Next().status());
    const auto failed = StatusIs(
        absl::StatusCode::kUnavailable,
        AllOf(HasSubstr("step 1 position 6"), HasSubstr("sample " + std::to_string(failing)),
              HasSubstr("disk went away")));
    EXPECT_THAT(loader->Next(), failed) << "preload " << preload;
    EXPECT_THAT(loader->Next(), failed) << "preload " << preload;
    EXPECT_THAT(loader->Next(), failed) << "preload " << preload;
  }
}

// A consumer that trains (sleeps) three times as long as a step takes to load: pre-loading
// hides all but the first step's load; without it, every load is waited for. Only the ratio is
// asserted, loosely, since sleeps on a busy machine overshoot.
TEST(BatchLoader, PreloadingHidesLoadingBehindTraining) {
  constexpr int kSteps = 8;
  const auto load_per_sample = std::chrono::milliseconds(2);
  const auto train = std::chrono::milliseconds(60);  // 3x a step's 10 x 2 ms load
  double waited[2] = {0, 0};
  for (const bool preload : {false, true}) {
    auto source = std::make_shared<InstrumentedSource>(Synthetic(Features({4})), load_per_sample);
    auto loader = Loader(source, 10, {{0, 10}}, Preload(preload));
    for (int s = 0; s < kSteps; ++s) {
      ASSERT_OK(loader->Next().status());
      std::this_thread::sleep_for(train);
    }
    waited[preload] = loader->wait_seconds();
  }
  // Unhidden: at least kSteps loads of 20 ms. Hidden: the first load and bookkeeping.
  EXPECT_GE(waited[false], kSteps * 0.020 * 0.9);
  EXPECT_LT(waited[true], 0.5 * waited[false])
      << "preload waited " << waited[true] << " s, none " << waited[false] << " s";
}

TEST(BatchLoader, PreloadsOneStepAheadOnly) {
  auto source =
      std::make_shared<InstrumentedSource>(Synthetic(Features({4})), std::chrono::microseconds(0));
  auto loader = Loader(source, 10, {{0, 10}}, Preload(true));
  EXPECT_TRUE(Eventually([&] { return source->reads() == 10; }));  // step 0, before any Next
  ASSERT_OK(loader->Next().status());
  EXPECT_TRUE(Eventually([&] { return source->reads() == 20; }));  // step 1, while 0 trains
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(source->reads(), 20);
}

TEST(BatchLoader, DestructionWhileLoadingReturnsPromptly) {
  // A step takes 100 x 50 ms = 5 s to load; the loader must not finish it before stopping.
  auto source =
      std::make_shared<InstrumentedSource>(Synthetic(Features({4})), std::chrono::milliseconds(50));
  auto loader = Loader(source, 100, {{0, 100}}, Preload(true));
  ASSERT_TRUE(Eventually([&] { return source->reads() >= 2; }));
  const auto start = std::chrono::steady_clock::now();
  loader.reset();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_LT(source->reads(), 100);
}

TEST(BatchLoader, DestructionWithAStepReadyOrAfterAnErrorReturns) {
  auto source = std::make_shared<InstrumentedSource>(
      Synthetic(Features({4})), std::chrono::microseconds(0), SampleOrder(3, 1000, 10).Index(0, 3));
  auto failing = Loader(source, 10, {{0, 10}}, Preload(true));
  EXPECT_FALSE(failing->Next().ok());
  failing.reset();
  auto healthy =
      std::make_shared<InstrumentedSource>(Synthetic(Features({4})), std::chrono::microseconds(0));
  auto waiting = Loader(healthy, 10, {{0, 10}}, Preload(true));
  ASSERT_TRUE(Eventually([&] { return healthy->reads() == 10; }));
  waiting.reset();  // the preloader waits for its ready step to be taken
}

}  // namespace
}  // namespace wavepool::runtime
