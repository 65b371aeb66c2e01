// Counted nouns in messages and reports: "1 job", "3 jobs", "0 GPUs".
#ifndef WAVEPOOL_BASE_PLURAL_H_
#define WAVEPOOL_BASE_PLURAL_H_

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace wavepool {

// "<count> <noun>", with "s" appended to `noun` unless `count` is exactly 1 (English uses the
// plural for 0 and for negative counts too).
// REQUIRES: the plural of `noun` is `noun` + "s" ("GPU", "job", "byte"; not "process").
template <typename Integer>
std::string Plural(Integer count, std::string_view noun) {
  static_assert(std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>,
                "Plural counts with an integer");
  return absl::StrCat(count, " ", absl::string_view(noun.data(), noun.size()),
                      count == 1 ? "" : "s");
}

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_PLURAL_H_
