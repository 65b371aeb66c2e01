// The synthetic source: samples that are a pure function of (seed, index), labelled by a fixed
// random teacher, so that a model trained on them learns (its loss falls) and every split of a
// batch over ranks, threads or steps reads bit-identical samples.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "counter_rng.h"
#include "sources.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime::data_internal {
namespace {

// Domain tags, so that the sample streams and the teacher never share a key.
constexpr std::uint64_t kSampleDomain = 0x73616d706c65ULL;     // "sample"
constexpr std::uint64_t kTeacherDomain = 0x74656163686572ULL;  // "teacher"

// The feature teacher looks at the sums of at most this many contiguous chunks of the flattened
// sample: a linear map of the features with piecewise-constant weights, which bounds its size
// (classes x 256 floats) for any input shape and varies slowly over neighbouring values, so that
// convolutions and pooling can learn it as readily as a perceptron.
constexpr std::int64_t kTeacherChunks = 256;
static_assert(kTeacherChunks <= 256, "chunk indices are stored as bytes");

class SyntheticSource final : public SampleSource {
 public:
  SyntheticSource(const SampleSpec& spec, std::uint64_t seed, std::int64_t size)
      : spec_(spec),
        seed_(seed),
        size_(size),
        elements_(spec.Elements()),
        sample_key_(MixPair(seed, kSampleDomain)),
        teacher_key_(MixPair(seed, kTeacherDomain)) {
    if (spec_.kind == SampleSpec::Kind::kFeatures) BuildFeatureTeacher();
  }

  const SampleSpec& spec() const override { return spec_; }
  std::int64_t size() const override { return size_; }
  std::string Describe() const override {
    return absl::StrCat("synthetic (seed ", seed_, ", ", size_, " samples)");
  }

  absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const override {
    WAVEPOOL_RETURN_IF_ERROR(CheckSampleIndex(*this, index));
    SplitMixStream stream(MixPair(sample_key_, static_cast<std::uint64_t>(index)));
    if (spec_.kind == SampleSpec::Kind::kTokens) {
      auto* tokens = static_cast<std::int64_t*>(input);
      const auto vocabulary = static_cast<std::uint64_t>(spec_.vocabulary);
      for (std::int64_t i = 0; i < elements_; ++i) {
        tokens[i] = static_cast<std::int64_t>(stream.NextBelow(vocabulary));
      }
      *label = TokenTeacher(tokens);
    } else {
      auto* features = static_cast<float*>(input);
      std::int64_t i = 0;
      for (; i + 1 < elements_; i += 2) stream.NextNormalPair(&features[i], &features[i + 1]);
      if (i < elements_) {
        float unused = 0;
        stream.NextNormalPair(&features[i], &unused);
      }
      *label = FeatureTeacher(features);
    }
    return absl::OkStatus();
  }

 private:
  // Chunk k covers flattened elements [k * elements / chunks, (k + 1) * elements / chunks); its
  // weight for class c is N(0, 1), drawn once from the seed.
  void BuildFeatureTeacher() {
    chunks_ = std::min(elements_, kTeacherChunks);
    chunk_of_.resize(static_cast<std::size_t>(elements_));
    for (std::int64_t k = 0; k < chunks_; ++k) {
      const std::int64_t begin = k * elements_ / chunks_;
      const std::int64_t end = (k + 1) * elements_ / chunks_;
      for (std::int64_t e = begin; e < end; ++e) {
        chunk_of_[static_cast<std::size_t>(e)] = static_cast<std::uint8_t>(k);
      }
    }
    SplitMixStream stream(teacher_key_);
    weights_.resize(static_cast<std::size_t>(spec_.classes * chunks_ + 1));
    for (std::size_t w = 0; w + 1 < weights_.size(); w += 2) {
      stream.NextNormalPair(&weights_[w], &weights_[w + 1]);
    }
  }

  // argmax over classes of the teacher's projection of the chunk sums.
  std::int64_t FeatureTeacher(const float* features) const {
    std::array<float, kTeacherChunks> sums{};
    for (std::int64_t e = 0; e < elements_; ++e) {
      sums[chunk_of_[static_cast<std::size_t>(e)]] += features[e];
    }
    std::int64_t best = 0;
    float best_score = 0;
    for (std::int64_t c = 0; c < spec_.classes; ++c) {
      const float* row = &weights_[static_cast<std::size_t>(c * chunks_)];
      float score = 0;
      for (std::int64_t k = 0; k < chunks_; ++k)
        score += row[k] * sums[static_cast<std::size_t>(k)];
      if (c == 0 || score > best_score) {
        best = c;
        best_score = score;
      }
    }
    return best;
  }

  // A bag-of-tokens teacher: class c scores the sum over positions of a weight in [-1, 1) that
  // hashes (token id, c). Learnable by an embedding followed by pooling or attention; the weights
  // are computed, not stored, so any vocabulary costs no memory.
  std::int64_t TokenTeacher(const std::int64_t* tokens) const {
    std::int64_t best = 0;
    float best_score = 0;
    for (std::int64_t c = 0; c < spec_.classes; ++c) {
      float score = 0;
      for (std::int64_t i = 0; i < elements_; ++i) {
        const std::uint64_t word =
            Mix64(MixPair(teacher_key_, static_cast<std::uint64_t>(tokens[i])) +
                  static_cast<std::uint64_t>(c));
        score += 2.0f * UnitFloat(static_cast<std::uint32_t>(word >> 32)) - 1.0f;
      }
      if (c == 0 || score > best_score) {
        best = c;
        best_score = score;
      }
    }
    return best;
  }

  // Constant after construction.
  const SampleSpec spec_;
  const std::uint64_t seed_;
  const std::int64_t size_;
  const std::int64_t elements_;
  const std::uint64_t sample_key_;
  const std::uint64_t teacher_key_;
  std::int64_t chunks_ = 0;             // kFeatures only, as are the two below
  std::vector<std::uint8_t> chunk_of_;  // by flattened element
  std::vector<float> weights_;          // {classes, chunks_} (+1 spare for the pairwise draw)
};

}  // namespace

absl::StatusOr<SampleSourcePtr> OpenSyntheticSource(const SampleSpec& spec, std::uint64_t seed,
                                                    std::int64_t size) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic source: size must be >= 1 sample, got ", size));
  }
  return std::make_shared<const SyntheticSource>(spec, seed, size);
}

}  // namespace wavepool::runtime::data_internal
