// Label selectors with kube-apiserver's grammar (k8s.io/apimachinery/pkg/labels):
//   app=web, tier==db, env!=prod, key, !key, zone in (a, b), zone notin (c), replicas>2, rank<5
// Requirements are separated by commas and must all hold.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_LABEL_SELECTOR_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_LABEL_SELECTOR_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

// Immutable once parsed; safe to share between threads.
class LabelSelector {
 public:
  enum class Operator { kExists, kDoesNotExist, kEquals, kNotEquals, kIn, kNotIn, kGreater, kLess };
  struct Requirement {
    std::string key;
    Operator op = Operator::kExists;
    std::vector<std::string> values;
  };

  // The empty string selects everything. InvalidArgument names what was expected where, e.g.
  // `unable to parse requirement: found ')', expected: '(' after "zone in"`.
  static absl::StatusOr<LabelSelector> Parse(std::string_view text);

  // `labels`: metadata.labels (an object of strings; null or absent: no labels).
  bool Matches(const nlohmann::json& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_LABEL_SELECTOR_H_
