// A subset of CEL (the Common Expression Language), enough for CRD validation rules
// (x-kubernetes-validations) as kube-apiserver compiles and evaluates them:
//   self                        the value at the rule's schema node
//   a.b  has(a.b)               field selection; has() is true when the last field is present
//   1  -2  1.5  'x'  "x"        int, double and string literals; true, false, null; [a, b] lists
//   !  -  &&  ||                with CEL's commutative errors: false && <error> is false,
//                               true || <error> is true
//   == != < <= > >=             ordering on int, double (int against double too: Kubernetes
//                               enables cross-type numeric comparison), string and bool
//   x in [list]  'k' in map     membership
//   ( )
// Anything else (other functions and macros, arithmetic, the ternary, indexing, oldSelf) is
// refused at compile time with a message naming it. Values come from JSON typed by the schema:
// integer -> int, number -> double (a JSON 2 in a number field is 2.0), string, boolean,
// object -> an object of its declared properties (or a map under additionalProperties),
// array -> list, int-or-string and typeless preserve-unknown-fields -> dyn.
//
// Bounds: an expression longer than kMaxExpressionBytes or nested deeper than kMaxNestingDepth
// does not compile; there are no loops, so evaluation is linear in the expression's size and in
// the size of the lists `in` scans.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_CEL_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_CEL_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver::cel {

inline constexpr std::size_t kMaxExpressionBytes = 10000;
inline constexpr int kMaxNestingDepth = 64;

struct Node;  // the checked syntax tree (cel_internal.h)

// A compiled expression. Immutable; safe to share between threads; holds no reference to the
// schema it was compiled against.
class Program {
 public:
  // Parses `expression` and checks it against `self_schema`, the schema node `self` stands for:
  // fields must exist, operand types must fit, and the result must be a bool. InvalidArgument
  // with cel-go's wording, as kube-apiserver reports it after "compilation failed: ":
  //   "ERROR: <input>:1:6: undefined field 'gpu'\n | self.gpu > 1\n | .....^"
  static absl::StatusOr<Program> Compile(std::string_view expression,
                                         const nlohmann::json& self_schema);

  // The value of the expression for `self`, a value of `self_schema` (the schema it was compiled
  // against) that passed the schema's validation. An evaluation error is InvalidArgument with
  // CEL's message ("no such key: gpus", "no such overload").
  absl::StatusOr<bool> Evaluate(const nlohmann::json& self,
                                const nlohmann::json& self_schema) const;

 private:
  explicit Program(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

}  // namespace wavepool::testing::apiserver::cel

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_CEL_H_
