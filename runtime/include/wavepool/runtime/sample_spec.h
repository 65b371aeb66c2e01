// What one training sample of a model looks like: the input tensor a data source must produce and
// the range of its label. Derived from the planner's model graph (executable_model.h,
// SampleSpecOf), so that data sources and models agree by construction. Plain value.
#ifndef WAVEPOOL_RUNTIME_SAMPLE_SPEC_H_
#define WAVEPOOL_RUNTIME_SAMPLE_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

namespace wavepool::runtime {

struct SampleSpec {
  enum class Kind {
    kFeatures,  // float32 values (images {C,H,W}, feature vectors {N})
    kTokens,    // int64 token ids in [0, vocabulary), shape {T}
  };
  Kind kind = Kind::kFeatures;
  std::vector<std::int64_t> shape;  // per sample, without the batch dimension
  std::int64_t vocabulary = 0;      // kTokens only
  std::int64_t classes = 0;         // labels are int64 in [0, classes)

  std::int64_t Elements() const;
  std::string ToString() const;  // "features [3,32,32], 10 classes"
  bool operator==(const SampleSpec& other) const;
  bool operator!=(const SampleSpec& other) const { return !(*this == other); }
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SAMPLE_SPEC_H_
