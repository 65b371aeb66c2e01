// Per-element FLOP costs shared by ModelBuilder's translation units (model_builder.h documents
// them).
#ifndef WAVEPOOL_PLANNER_SRC_MODEL_MODEL_BUILDER_INTERNAL_H_
#define WAVEPOOL_PLANNER_SRC_MODEL_MODEL_BUILDER_INTERNAL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner::internal {

// BatchNorm / LayerNorm in training mode: sum and sum of squares (1 + 2), then x*a + b with
// a = gamma/sigma and b = beta - mu*a folded (2).
inline constexpr double kNormFlopsPerItem = 5;
// x/2 * (1 + erf(x/sqrt(2))) with a polynomial erf.
inline constexpr double kGeluFlopsPerItem = 8;
// max, subtract, exp, sum, divide.
inline constexpr double kSoftmaxFlopsPerItem = 5;

// PyTorch's output size of a window (ceil_mode=false). REQUIRES: n + 2*pad >= kernel, stride >= 1.
inline std::int64_t WindowOutput(std::int64_t n, int kernel, int stride, int pad) {
  return (n + 2 * std::int64_t{pad} - kernel) / stride + 1;
}

// The most items (elements, parameters) one tensor or layer may count: their bytes, at
// kBytesPerItem each, must still fit in a Bytes.
inline constexpr std::int64_t kMaxItems = std::numeric_limits<Bytes>::max() / kBytesPerItem;

// Sums and products of item counts derived from user-supplied sizes (a layer table's shapes and
// attrs), checked rather than left to overflow: the first result beyond kMaxItems is remembered
// with the attribute it came from, and later results are 0. Not thread-safe; one per layer.
class CheckedItems {
 public:
  // `attribute`: what the caller names in the error, e.g. "out_features 4096".
  std::int64_t Mul(std::int64_t a, std::int64_t b, const std::string& attribute) {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product) || product > kMaxItems) return Overflow(attribute);
    return overflow_.empty() ? product : 0;
  }
  std::int64_t Add(std::int64_t a, std::int64_t b, const std::string& attribute) {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum) || sum > kMaxItems) return Overflow(attribute);
    return overflow_.empty() ? sum : 0;
  }
  // The items of `dims` multiplied out.
  std::int64_t Elements(const std::vector<std::int64_t>& dims, const std::string& attribute) {
    std::int64_t items = 1;
    for (std::int64_t d : dims) items = Mul(items, d, attribute);
    return items;
  }

  bool overflowed() const { return !overflow_.empty(); }
  // "<attribute> makes <what> overflow (more than kMaxItems)", for ModelBuilder::Fail.
  std::string Message(const std::string& what) const {
    return absl::StrCat(overflow_, " makes ", what, " exceed ", kMaxItems,
                        " items (their bytes would overflow 64 bits)");
  }

 private:
  std::int64_t Overflow(const std::string& attribute) {
    if (overflow_.empty()) overflow_ = attribute;
    return 0;
  }

  std::string overflow_;
};

}  // namespace wavepool::planner::internal

#endif  // WAVEPOOL_PLANNER_SRC_MODEL_MODEL_BUILDER_INTERNAL_H_
