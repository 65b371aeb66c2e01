// Field selectors (k8s.io/apimachinery/pkg/fields): comma-separated `field=value`,
// `field==value` and `field!=value` terms over the few fields a resource indexes
// (metadata.name and metadata.namespace everywhere; spec.nodeName, status.phase, ... per kind).
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_FIELD_SELECTOR_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_FIELD_SELECTOR_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

// The selectable fields of an object of `group_resource` ("pods", "events",
// "trainingjobs.wavepool.dev") and their values, as the server's field-label conversion reads
// them (absent fields read as "").
std::map<std::string, std::string> SelectableFields(std::string_view group_resource,
                                                    const nlohmann::json& object);

// Immutable once parsed; safe to share between threads.
class FieldSelector {
 public:
  struct Term {
    std::string field;
    bool equals = true;  // false: !=
    std::string value;
  };

  // InvalidArgument for bad syntax, and for a field `group_resource` does not index, worded as the
  // real server's 400: `field label not supported: spec.foo` (built-ins) or
  // `"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"`.
  static absl::StatusOr<FieldSelector> Parse(std::string_view text, std::string_view group_resource,
                                             bool custom_resource);

  bool Matches(const std::map<std::string, std::string>& fields) const;
  bool empty() const { return terms_.empty(); }
  const std::vector<Term>& terms() const { return terms_; }

 private:
  std::vector<Term> terms_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_FIELD_SELECTOR_H_
