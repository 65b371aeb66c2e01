// Training state through checkpoints (checkpoint_state.h): a restored model and optimizer train
// on bit-identically to an uninterrupted run, the generator replays its draws, and mismatches
// are refused before anything changes.
#include "wavepool/runtime/checkpoint_state.h"

#include <torch/torch.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/runtime/checkpoint.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::IsOkAndHolds;
using ::wavepool::testing::ReadFile;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

enum class OptimizerKind { kSgdMomentum, kAdam, kAdamW };

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(OptimizerKind kind,
                                                       const std::vector<torch::Tensor>& params) {
  switch (kind) {
    case OptimizerKind::kSgdMomentum:
      return std::make_unique<torch::optim::SGD>(params,
                                                 torch::optim::SGDOptions(0.05).momentum(0.9));
    case OptimizerKind::kAdam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01));
    case OptimizerKind::kAdamW:
      return std::make_unique<torch::optim::AdamW>(
          params, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  }
  return nullptr;
}

// A small classifier with a buffer-carrying layer (BatchNorm's running statistics).
torch::nn::Sequential MakeModel() {
  return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::BatchNorm1d(8),
                               torch::nn::ReLU(), torch::nn::Linear(8, 3));
}

// Steps drawing their batches from the default CPU generator, so the generator is state too.
void Train(torch::nn::Sequential& model, torch::optim::Optimizer& optimizer, int steps) {
  model->train();
  for (int i = 0; i < steps; ++i) {
    const torch::Tensor inputs = torch::randn({16, 4});
    const torch::Tensor labels = torch::randint(0, 3, {16}, torch::kLong);
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(inputs), labels).backward();
    optimizer.step();
  }
}

// Deep copies, so later training does not change them.
NamedTensors Snapshot(const torch::nn::Module& module) {
  NamedTensors copy;
  for (const auto& [name, tensor] : ModuleTensors(module)) {
    copy.emplace_back(name, tensor.detach().clone());
  }
  return copy;
}

// Whether every tensor has the same name, dtype, shape and bytes.
::testing::AssertionResult BitIdentical(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "tensor counts differ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const torch::Tensor x = a[i].second.contiguous();
    const torch::Tensor y = b[i].second.contiguous();
    if (a[i].first != b[i].first || x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes() ||
        std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0) {
      return ::testing::AssertionFailure() << "tensor '" << a[i].first << "' differs";
    }
  }
  return ::testing::AssertionSuccess();
}

std::string OptimizerName(const ::testing::TestParamInfo<OptimizerKind>& param) {
  switch (param.param) {
    case OptimizerKind::kSgdMomentum:
      return "SgdMomentum";
    case OptimizerKind::kAdam:
      return "Adam";
    case OptimizerKind::kAdamW:
      return "AdamW";
  }
  return "Unknown";
}

class ResumeTest : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(ResumeTest, ARestoredRunTrainsOnBitIdenticallyToAnUninterruptedOne) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  ASSERT_OK_AND_ASSIGN(const CheckpointDirectory dir,
                       CheckpointDirectory::Open(scratch.File("ckpt")));

  // Uninterrupted: 3 steps, checkpoint, 3 more.
  torch::manual_seed(1);
  torch::nn::Sequential model = MakeModel();
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      MakeOptimizer(GetParam(), model->parameters());
  Train(model, *optimizer, 3);
  CheckpointFile file;
  file.step = 3;
  file.data_position = 3;
  file.fingerprint = "f";
  ASSERT_OK(SaveTrainingState({ModuleTensors(*model), optimizer.get(), true}, file));
  ASSERT_OK(dir.Write(file));
  ASSERT_OK(dir.Commit(3, 1));
  Train(model, *optimizer, 3);
  const NamedTensors uninterrupted = Snapshot(*model);

  // Resumed: a fresh process's model (other initial weights, other generator state).
  torch::manual_seed(2);
  torch::nn::Sequential resumed = MakeModel();
  std::unique_ptr<torch::optim::Optimizer> resumed_optimizer =
      MakeOptimizer(GetParam(), resumed->parameters());
  ASSERT_FALSE(BitIdentical(Snapshot(*resumed), uninterrupted));
  ASSERT_OK_AND_ASSIGN(const std::int64_t latest, dir.Latest());
  ASSERT_OK_AND_ASSIGN(const CheckpointFile read, dir.Read(latest, {0, 1, "f"}));
  ASSERT_OK(LoadTrainingState(read, {ModuleTensors(*resumed), resumed_optimizer.get(), true}));
  Train(resumed, *resumed_optimizer, 3);
  EXPECT_TRUE(BitIdentical(Snapshot(*resumed), uninterrupted));

  // Without the optimizer's state the run diverges: the state is what the test proves restored.
  torch::manual_seed(3);
  torch::nn::Sequential stateless = MakeModel();
  std::unique_ptr<torch::optim::Optimizer> fresh =
      MakeOptimizer(GetParam(), stateless->parameters());
  ASSERT_OK(LoadTrainingState(read, {ModuleTensors(*stateless), nullptr, true}));
  Train(stateless, *fresh, 3);
  EXPECT_FALSE(BitIdentical(Snapshot(*stateless), uninterrupted));
}

INSTANTIATE_TEST_SUITE_P(Optimizers, ResumeTest,
                         ::testing::Values(OptimizerKind::kSgdMomentum, OptimizerKind::kAdam,
                                           OptimizerKind::kAdamW),
                         OptimizerName);

TEST(CpuGeneratorSection, RestoringReplaysTheSameDraws) {
  torch::manual_seed(7);
  torch::randn({5});  // leave the generator mid-stream
  ASSERT_OK_AND_ASSIGN(const std::string state, EncodeCpuGenerator());
  const torch::Tensor first = torch::randn({1000});
  const torch::Tensor first_ints = torch::randint(0, 1 << 30, {100}, torch::kLong);
  torch::manual_seed(8);
  ASSERT_OK(RestoreCpuGenerator(state));
  EXPECT_TRUE(torch::equal(torch::randn({1000}), first));
  EXPECT_TRUE(torch::equal(torch::randint(0, 1 << 30, {100}, torch::kLong), first_ints));
  EXPECT_THAT(RestoreCpuGenerator(state.substr(1)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds " + std::to_string(state.size() - 1) +
                                 " bytes in the checkpoint, but this LibTorch's state is " +
                                 std::to_string(state.size()) + " bytes")));
}

TEST(TensorSection, RoundTripsEveryDtypeAndShapeBitForBit) {
  torch::manual_seed(3);
  const NamedTensors original = {
      {"f32", torch::randn({3, 4})},
      {"f64", torch::randn({2, 2, 2}, torch::kDouble)},
      {"f16", torch::randn({5}).to(torch::kHalf)},
      {"bf16", torch::randn({5}).to(torch::kBFloat16)},
      {"i64", torch::arange(-3, 3, torch::kLong)},
      {"i32", torch::arange(-3, 3, torch::kInt)},
      {"i16", torch::arange(-3, 3, torch::kShort)},
      {"i8", torch::arange(-3, 3, torch::kChar)},
      {"u8", torch::arange(0, 6, torch::kByte)},
      {"bool", torch::tensor({true, false, true})},
      {"scalar", torch::tensor(2.5)},
      {"empty", torch::empty({0, 7})},
      {"nan payload", torch::full({2}, std::nanf("0x123"))},
      {"transposed view", torch::randn({3, 5}).t()},
  };
  ASSERT_OK_AND_ASSIGN(const std::string section, EncodeTensors(original));
  NamedTensors targets;
  for (const auto& [name, tensor] : original) targets.emplace_back(name, torch::zeros_like(tensor));
  ASSERT_OK(RestoreTensors(section, targets));
  EXPECT_TRUE(BitIdentical(targets, original));
}

TEST(TensorSection, RestoresIntoParametersThatRequireGradAndNonContiguousTargets) {
  torch::nn::Linear layer(3, 2);
  const torch::Tensor storage = torch::zeros({3, 2});
  const NamedTensors source = {{"weight", torch::ones({2, 3})}, {"bias", torch::ones({2})}};
  ASSERT_OK_AND_ASSIGN(const std::string section, EncodeTensors(source));
  ASSERT_OK(RestoreTensors(section, {{"weight", layer->weight}, {"bias", layer->bias}}));
  EXPECT_TRUE(torch::equal(layer->weight.detach(), torch::ones({2, 3})));
  EXPECT_TRUE(layer->weight.requires_grad());
  ASSERT_OK(RestoreTensors(section, {{"weight", storage.t()}, {"bias", torch::zeros({2})}}));
  EXPECT_TRUE(torch::equal(storage, torch::ones({3, 2})));
}

TEST(TensorSection, AMismatchNamesTheTensorAndChangesNothing) {
  ASSERT_OK_AND_ASSIGN(const std::string section, EncodeTensors({{"a.weight", torch::ones({4, 3})},
                                                                 {"b.weight", torch::ones({2})}}));
  const torch::Tensor a = torch::zeros({4, 3});
  EXPECT_THAT(RestoreTensors(section, {{"a.weight", a}, {"b.weight", torch::zeros({5, 3})}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("tensor 'b.weight' has shape [2] float32 in the checkpoint, "
                                 "[5, 3] float32 in the model")));
  EXPECT_TRUE(torch::equal(a, torch::zeros({4, 3})));  // checked before anything was copied
  EXPECT_THAT(
      RestoreTensors(section, {{"a.weight", a}, {"b.weight", torch::zeros({2}, torch::kDouble)}}),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("[2] float32 in the checkpoint, [2] float64 in the model")));
  EXPECT_THAT(RestoreTensors(section, {{"a.weight", a}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint tensor 'b.weight' is not in the model")));
  EXPECT_THAT(RestoreTensors(section, {{"a.weight", a},
                                       {"b.weight", torch::zeros({2})},
                                       {"c.bias", torch::zeros({1})}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("tensor 'c.bias' of the model is not in the checkpoint")));
  EXPECT_TRUE(torch::equal(a, torch::zeros({4, 3})));
}

TEST(TensorSection, RejectsWhatItCannotStore) {
  EXPECT_THAT(EncodeTensors({{"x", torch::ones({1})}, {"x", torch::ones({1})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("two tensors are named 'x'")));
  EXPECT_THAT(EncodeTensors({{"u", torch::Tensor()}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor 'u' is undefined")));
  EXPECT_THAT(
      EncodeTensors({{"c", torch::ones({2}, torch::kComplexFloat)}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor 'c' has dtype ComplexFloat")));
}

TEST(TensorSection, AMalformedSectionIsDataLoss) {
  ASSERT_OK_AND_ASSIGN(const std::string section, EncodeTensors({{"w", torch::ones({4, 3})}}));
  const NamedTensors targets = {{"w", torch::zeros({4, 3})}};
  for (std::size_t size = 0; size < section.size(); ++size) {
    EXPECT_THAT(RestoreTensors(section.substr(0, size), targets),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")))
        << "size " << size;
  }
  std::string bad_dtype = section;
  bad_dtype[4 + 4 + 1] = 99;  // count, name length, name "w", then the dtype code
  EXPECT_THAT(RestoreTensors(bad_dtype, targets),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("dtype code 99")));
  EXPECT_THAT(RestoreTensors(section + "!", targets),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1 unexpected bytes")));
  EXPECT_TRUE(torch::equal(targets[0].second, torch::zeros({4, 3})));
}

TEST(OptimizerSection, AnotherKindOrShapeIsRefusedBeforeAnythingChanges) {
  torch::nn::Sequential model = MakeModel();
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(0.01));
  Train(model, adam, 2);
  ASSERT_OK_AND_ASSIGN(const std::string section, EncodeOptimizer(adam));

  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_THAT(RestoreOptimizer(section, sgd),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("optimizer state of 'torch::optim::Adam' in the checkpoint, but "
                                 "the optimizer is torch::optim::SGD")));
  torch::nn::Sequential wider(torch::nn::Linear(4, 9), torch::nn::BatchNorm1d(9), torch::nn::ReLU(),
                              torch::nn::Linear(9, 3));
  torch::optim::Adam wider_adam(wider->parameters(), torch::optim::AdamOptions(0.01));
  EXPECT_THAT(RestoreOptimizer(section, wider_adam),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("parameter 0 of group 0 has shape [8, 4] float32 in the "
                                 "checkpoint, [9, 4] float32 in the optimizer")));
  EXPECT_TRUE(wider_adam.state().empty());
  torch::optim::Adam fewer(std::vector<torch::Tensor>{model->parameters()[0]},
                           torch::optim::AdamOptions(0.01));
  EXPECT_THAT(RestoreOptimizer(section, fewer),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("parameter group 0 has 6 parameters in the checkpoint, 1 in the "
                                 "optimizer")));
  // The archive itself corrupt (the file's checksum would catch this; the section checks too).
  std::string corrupt = section;
  for (std::size_t i = section.size() - 200; i < section.size(); ++i) corrupt[i] = 'x';
  torch::optim::Adam same(model->parameters(), torch::optim::AdamOptions(0.01));
  EXPECT_THAT(RestoreOptimizer(corrupt, same),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("LibTorch archive at offset")));
  EXPECT_TRUE(same.state().empty());
  ASSERT_OK(RestoreOptimizer(section, same));
  EXPECT_EQ(same.state().size(), adam.state().size());
}

CheckpointFile TrainedFile(torch::nn::Sequential& model, torch::optim::Optimizer& optimizer) {
  Train(model, optimizer, 2);
  CheckpointFile file;
  file.step = 2;
  EXPECT_OK(SaveTrainingState({ModuleTensors(*model), &optimizer, true}, file));
  return file;
}

TEST(TrainingState, AFlippedByteInAnySectionIsReportedBeforeAnythingIsApplied) {
  ASSERT_OK_AND_ASSIGN(TempDir scratch, TempDir::Create("wavepool_checkpoint"));
  torch::nn::Sequential model = MakeModel();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const std::string path = scratch.File("rank-0.ckpt");
  ASSERT_OK(WriteCheckpointFile(path, TrainedFile(model, sgd)));
  ASSERT_OK_AND_ASSIGN(const std::string bytes, ReadFile(path));
  const testing::FileLayout layout = testing::LayoutOf(bytes);
  std::vector<std::string> names;
  for (const testing::SectionLayout& section : layout.sections) {
    names.push_back(section.name);
    for (std::size_t at : {section.payload_offset, section.checksum_offset - 1}) {
      std::string corrupt = bytes;
      corrupt[at] ^= 0x01;
      ASSERT_OK(WriteFile(path, corrupt));
      EXPECT_THAT(ReadCheckpointFile(path),
                  StatusIs(absl::StatusCode::kDataLoss,
                           AllOf(HasSubstr("checkpoint " + path + ": section '" + section.name),
                                 HasSubstr("checksum mismatch"))))
          << section.name << " byte " << at;
    }
  }
  EXPECT_THAT(names, ::testing::ElementsAre("model", "optimizer", "rng.cpu"));
}

TEST(TrainingState, LoadChecksEverySectionBeforeApplyingAny) {
  torch::nn::Sequential model = MakeModel();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  CheckpointFile file = TrainedFile(model, sgd);
  file.source = "/ckpt/step-2/rank-0.ckpt";

  torch::manual_seed(5);
  torch::nn::Sequential target = MakeModel();
  const NamedTensors before = Snapshot(*target);
  torch::optim::Adam adam(target->parameters(), torch::optim::AdamOptions(0.01));
  EXPECT_THAT(LoadTrainingState(file, {ModuleTensors(*target), &adam, true}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint /ckpt/step-2/rank-0.ckpt, section 'optimizer': "
                                 "optimizer state of 'torch::optim::SGD'")));
  EXPECT_TRUE(BitIdentical(Snapshot(*target), before));  // the model section was valid

  CheckpointFile without_rng = file;
  without_rng.sections.erase(std::string(kCpuGeneratorSection));
  torch::optim::SGD target_sgd(target->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_THAT(LoadTrainingState(without_rng, {ModuleTensors(*target), &target_sgd, true}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint /ckpt/step-2/rank-0.ckpt has no section 'rng.cpu'")));
  EXPECT_TRUE(BitIdentical(Snapshot(*target), before));
  EXPECT_TRUE(target_sgd.state().empty());

  torch::nn::Sequential other(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 3));
  EXPECT_THAT(LoadTrainingState(file, {ModuleTensors(*other), nullptr, false}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("section 'model': tensor '2.weight' of the model is not in the "
                                 "checkpoint")));
}

}  // namespace
}  // namespace wavepool::runtime
