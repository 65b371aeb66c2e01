// The synthetic source: samples that are a pure function of (seed, index), teacher labels that a
// model can learn, and OpenSampleSource's flag and spec errors.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

SampleSpec Features(std::vector<std::int64_t> shape, std::int64_t classes) {
  SampleSpec spec;
  spec.shape = std::move(shape);
  spec.classes = classes;
  return spec;
}

SampleSpec Tokens(std::int64_t length, std::int64_t vocabulary, std::int64_t classes) {
  SampleSpec spec;
  spec.kind = SampleSpec::Kind::kTokens;
  spec.shape = {length};
  spec.vocabulary = vocabulary;
  spec.classes = classes;
  return spec;
}

// One sample of a float source: its features and its label.
struct Sample {
  std::vector<float> features;
  std::int64_t label = -1;
  bool operator==(const Sample& other) const {
    return features == other.features && label == other.label;
  }
};

Sample ReadSample(const SampleSource& source, std::int64_t index) {
  Sample sample;
  sample.features.resize(static_cast<std::size_t>(source.spec().Elements()));
  EXPECT_OK(source.Read(index, sample.features.data(), &sample.label));
  return sample;
}

TEST(SyntheticSource, SampleIsAPureFunctionOfSeedAndIndex) {
  const SampleSpec spec = Features({3, 32, 32}, 10);
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr first, OpenSampleSource("synthetic", spec, 7, 1000));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr second, OpenSampleSource("synthetic", spec, 7, 1000));
  std::vector<Sample> forward;
  for (std::int64_t i = 0; i < 64; ++i) forward.push_back(ReadSample(*first, i));
  // Another source, the indices in reverse and interleaved with others: the same samples.
  for (std::int64_t i = 63; i >= 0; --i) {
    ReadSample(*second, 999 - i);
    EXPECT_EQ(ReadSample(*second, i), forward[static_cast<std::size_t>(i)]) << "sample " << i;
  }
  // Four threads each reading every fourth sample of one source.
  std::vector<Sample> threaded(forward.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < threaded.size(); i += 4) {
        threaded[i] = ReadSample(*first, static_cast<std::int64_t>(i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(threaded, forward);
}

TEST(SyntheticSource, SeedsAndIndicesGiveDifferentSamples) {
  const SampleSpec spec = Features({64}, 10);
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr seed1, OpenSampleSource("synthetic", spec, 1));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr seed2, OpenSampleSource("synthetic", spec, 2));
  EXPECT_NE(ReadSample(*seed1, 0).features, ReadSample(*seed2, 0).features);
  EXPECT_NE(ReadSample(*seed1, 0).features, ReadSample(*seed1, 1).features);
  EXPECT_EQ(seed1->size(), std::int64_t{1} << 31);
  EXPECT_THAT(seed1->Describe(), HasSubstr("seed 1"));
}

TEST(SyntheticSource, FeaturesAreStandardNormal) {
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                       OpenSampleSource("synthetic", Features({3, 32, 32}, 10), 5));
  double sum = 0, squares = 0;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < 100; ++i) {
    for (const float value : ReadSample(*source, i).features) {
      ASSERT_TRUE(std::isfinite(value));
      sum += value;
      squares += static_cast<double>(value) * value;
      ++count;
    }
  }
  const double mean = sum / static_cast<double>(count);
  const double variance = squares / static_cast<double>(count) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(variance, 1.0, 0.03);
}

TEST(SyntheticSource, TeacherLabelsAreInRangeAndSpreadOverClasses) {
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                       OpenSampleSource("synthetic", Features({3, 32, 32}, 10), 11));
  std::vector<int> per_class(10);
  for (std::int64_t i = 0; i < 2000; ++i) {
    const Sample sample = ReadSample(*source, i);
    ASSERT_GE(sample.label, 0);
    ASSERT_LT(sample.label, 10);
    ++per_class[static_cast<std::size_t>(sample.label)];
  }
  EXPECT_GE(std::count_if(per_class.begin(), per_class.end(), [](int n) { return n > 0; }), 5);
  EXPECT_LT(*std::max_element(per_class.begin(), per_class.end()), 1000);
}

TEST(SyntheticSource, TokensAreInTheVocabularyAndLabelsVary) {
  const SampleSpec spec = Tokens(16, 50, 2);
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenSampleSource("synthetic", spec, 3));
  std::set<std::int64_t> labels, ids;
  for (std::int64_t i = 0; i < 500; ++i) {
    std::vector<std::int64_t> tokens(16, -1);
    std::int64_t label = -1;
    ASSERT_OK(source->Read(i, tokens.data(), &label));
    for (const std::int64_t id : tokens) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 50);
      ids.insert(id);
    }
    ASSERT_TRUE(label == 0 || label == 1) << label;
    labels.insert(label);
  }
  EXPECT_EQ(labels.size(), 2u);
  EXPECT_EQ(ids.size(), 50u);
}

// Softmax regression on `inputs` ({n, d}) for the first `train` rows; the accuracy on the rest.
double HeldOutAccuracy(const torch::Tensor& inputs, const torch::Tensor& labels, std::int64_t train,
                       std::int64_t classes) {
  torch::manual_seed(0);
  torch::nn::Linear model(inputs.size(1), classes);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.05));
  const torch::Tensor x = inputs.slice(0, 0, train), y = labels.slice(0, 0, train);
  for (int epoch = 0; epoch < 300; ++epoch) {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model(x), y).backward();
    optimizer.step();
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor predicted = model(inputs.slice(0, train)).argmax(1);
  return predicted.eq(labels.slice(0, train)).to(torch::kFloat64).mean().item<double>();
}

TEST(SyntheticSource, FeatureTeacherCanBeLearned) {
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                       OpenSampleSource("synthetic", Features({64}, 10), 21));
  const std::int64_t n = 5000;
  torch::Tensor inputs = torch::empty({n, 64});
  torch::Tensor labels = torch::empty({n}, torch::kInt64);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_OK(source->Read(i, inputs[i].data_ptr<float>(), labels[i].data_ptr<std::int64_t>()));
  }
  // Chance is 10%; a model that learned the teacher does far better on samples it never saw.
  EXPECT_GT(HeldOutAccuracy(inputs, labels, 4000, 10), 0.6);
}

TEST(SyntheticSource, TokenTeacherCanBeLearned) {
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenSampleSource("synthetic", Tokens(16, 50, 2), 4));
  const std::int64_t n = 5000;
  torch::Tensor counts = torch::zeros({n, 50});  // bag of tokens
  torch::Tensor labels = torch::empty({n}, torch::kInt64);
  auto bag = counts.accessor<float, 2>();
  std::vector<std::int64_t> tokens(16);
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_OK(source->Read(i, tokens.data(), labels[i].data_ptr<std::int64_t>()));
    for (const std::int64_t id : tokens) bag[i][id] += 1;
  }
  EXPECT_GT(HeldOutAccuracy(counts, labels, 4000, 2), 0.8);  // chance is ~50%
}

TEST(SyntheticSource, IndexOutsideTheSourceIsOutOfRange) {
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                       OpenSampleSource("synthetic", Features({4}, 2), 1, 10));
  std::vector<float> features(4);
  std::int64_t label = 0;
  EXPECT_THAT(source->Read(10, features.data(), &label),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("sample index 10")));
  EXPECT_THAT(source->Read(-1, features.data(), &label),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("[0, 10)")));
}

TEST(OpenSampleSource, UnknownFormsListTheValidOnes) {
  const SampleSpec spec = Features({4}, 2);
  for (const char* flag : {"imagenet:/data", "", "synthetic:7", "cifar10", "MNIST:/d"}) {
    EXPECT_THAT(
        OpenSampleSource(flag, spec, 1),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("synthetic"), HasSubstr("cifar10:DIR"), HasSubstr("mnist:DIR"))))
        << flag;
  }
  EXPECT_THAT(OpenSampleSource("cifar10:", spec, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory is empty")));
}

TEST(OpenSampleSource, RejectsSpecsNoSourceCanServe) {
  EXPECT_THAT(OpenSampleSource("synthetic", Features({}, 10), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one dimension")));
  EXPECT_THAT(OpenSampleSource("synthetic", Features({3, 0}, 10), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("features [3,0]")));
  EXPECT_THAT(OpenSampleSource("synthetic", Features({3}, 0), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("classes must be >= 1")));
  EXPECT_THAT(OpenSampleSource("synthetic", Tokens(8, 0, 2), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocabulary")));
  EXPECT_THAT(OpenSampleSource("synthetic", Features({3}, 2), 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size must be >= 1")));
}

TEST(SampleSpec, DescribesAndComparesItself) {
  EXPECT_EQ(Features({3, 32, 32}, 10).ToString(), "features [3,32,32], 10 classes");
  EXPECT_EQ(Tokens(128, 30522, 2).ToString(), "tokens [128] (vocabulary 30522), 2 classes");
  EXPECT_EQ(Features({3, 32, 32}, 10).Elements(), 3072);
  EXPECT_EQ(Features({784}, 10), Features({784}, 10));
  EXPECT_NE(Features({784}, 10), Features({1, 28, 28}, 10));
  EXPECT_NE(Features({784}, 10), Features({784}, 9));
  EXPECT_NE(Tokens(8, 10, 2), Tokens(8, 11, 2));
}

}  // namespace
}  // namespace wavepool::runtime
