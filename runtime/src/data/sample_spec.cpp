#include "wavepool/runtime/sample_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavepool::runtime {

std::int64_t SampleSpec::Elements() const {
  std::int64_t elements = 1;
  for (const std::int64_t dim : shape) elements *= dim;
  return elements;
}

std::string SampleSpec::ToString() const {
  const std::string dims = absl::StrCat("[", absl::StrJoin(shape, ","), "]");
  if (kind == Kind::kTokens) {
    return absl::StrCat("tokens ", dims, " (vocabulary ", vocabulary, "), ", classes, " classes");
  }
  return absl::StrCat("features ", dims, ", ", classes, " classes");
}

bool SampleSpec::operator==(const SampleSpec& other) const {
  return kind == other.kind && shape == other.shape && vocabulary == other.vocabulary &&
         classes == other.classes;
}

}  // namespace wavepool::runtime
