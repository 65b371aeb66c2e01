// The CEL subset of CRD validation rules: parsing, type checking against the schema, and
// evaluation with CEL's semantics (commutative && and || over errors, cross-type numeric
// ordering, has() on the last field only).
#include "tests/support/apiserver/cel.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver::cel {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The schema `self` has in these tests: a spec-like object.
const json& Schema() {
  static const json* schema = new json(json::parse(R"({
    "type": "object",
    "properties": {
      "gpus": {"type": "integer"},
      "batch": {"type": "integer"},
      "rate": {"type": "number"},
      "role": {"type": "string"},
      "suspend": {"type": "boolean"},
      "tags": {"type": "array", "items": {"type": "string"}},
      "labels": {"type": "object", "additionalProperties": {"type": "string"}},
      "size": {"x-kubernetes-int-or-string": true},
      "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
      "nested": {"type": "object", "properties": {
        "inner": {"type": "object", "properties": {"leaf": {"type": "string"}}}}}
    }
  })"));
  return *schema;
}

absl::StatusOr<bool> Evaluate(const std::string& expression, const json& self) {
  absl::StatusOr<Program> program = Program::Compile(expression, Schema());
  if (!program.ok()) return program.status();
  return program->Evaluate(self, Schema());
}

bool True(const std::string& expression, const json& self = json::object()) {
  absl::StatusOr<bool> result = Evaluate(expression, self);
  EXPECT_OK(result.status()) << expression;
  return result.ok() && *result;
}

bool False(const std::string& expression, const json& self = json::object()) {
  absl::StatusOr<bool> result = Evaluate(expression, self);
  EXPECT_OK(result.status()) << expression;
  return result.ok() && !*result;
}

absl::Status CompileError(const std::string& expression) {
  return Program::Compile(expression, Schema()).status();
}

TEST(CelLiterals, CompareAsCelCompares) {
  EXPECT_TRUE(True("1 < 2"));
  EXPECT_TRUE(True("-3 < -2"));
  EXPECT_TRUE(True("0x10 == 16"));
  EXPECT_TRUE(True("1.5 > 1.25"));
  EXPECT_TRUE(True("1e3 == 1000.0"));
  EXPECT_TRUE(True("'a' < 'b' && \"b\" == 'b'"));
  EXPECT_TRUE(True("'\\x41\\u00e9\\n' == \"A\u00e9\\n\""));
  EXPECT_TRUE(True("r'\\n' != '\\n'"));
  EXPECT_TRUE(True("'\\101' == 'A'"));
  EXPECT_TRUE(True("'''a'b''' == \"a'b\""));
  EXPECT_TRUE(True("false < true"));
  EXPECT_TRUE(True("null == null"));
  EXPECT_TRUE(True("-9223372036854775808 < 9223372036854775807"));
  EXPECT_TRUE(True("[1, 2] == [1, 2] && [1] != [2]"));
  EXPECT_TRUE(True("2 in [1, 2] && !('c' in ['a', 'b'])"));
  EXPECT_TRUE(True("// a comment\n true"));
}

// Kubernetes enables cross-type numeric comparison for ordering; equality needs one type.
TEST(CelNumbers, OrderingCrossesIntAndDoubleButEqualityDoesNot) {
  EXPECT_TRUE(True("1 < 1.5"));
  EXPECT_TRUE(True("2.0 >= 2"));
  EXPECT_TRUE(True("self.gpus <= self.rate", {{"gpus", 2}, {"rate", 2.5}}));
  EXPECT_THAT(CompileError("1 == 1.0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("found no matching overload for '_==_' applied to '(int, "
                                 "double)'")));
  EXPECT_THAT(CompileError("self.gpus < 'x'"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("found no matching overload for '_<_' applied to '(int, "
                                 "string)'")));
}

// A JSON integer in a number field is a double (2 == 2.0 would not compile with an int).
TEST(CelValues, AreTypedByTheirSchema) {
  EXPECT_TRUE(True("self.rate == 2.0", {{"rate", 2}}));
  EXPECT_TRUE(True("self.gpus == 2", {{"gpus", 2.0}}));
  EXPECT_TRUE(True("self.tags == ['a', 'b'] && 'b' in self.tags", {{"tags", {"a", "b"}}}));
  EXPECT_TRUE(
      True("self.labels.team == 'x' && 'team' in self.labels", {{"labels", {{"team", "x"}}}}));
  // int-or-string and unknown fields are dyn: typed by what the object holds.
  EXPECT_TRUE(True("self.size == 3", {{"size", 3}}));
  EXPECT_TRUE(True("self.size == '3Gi'", {{"size", "3Gi"}}));
  EXPECT_TRUE(True("self.template.replicas >= 1.5", {{"template", {{"replicas", 2}}}}));
}

TEST(CelHas, IsTrueWhenTheLastFieldIsPresent) {
  const json self = {{"nested", {{"inner", json::object()}}}, {"labels", {{"a", "b"}}}};
  EXPECT_TRUE(True("has(self.nested)", self));
  EXPECT_TRUE(True("has(self.nested.inner)", self));
  EXPECT_TRUE(False("has(self.nested.inner.leaf)", self));
  EXPECT_TRUE(False("has(self.gpus)", self));
  EXPECT_TRUE(True("has(self.labels.a) && !has(self.labels.b)", self));
}

// Selection on an absent field is an error, also inside has(); has() never hides it.
TEST(CelHas, SelectingThroughAnAbsentFieldIsAnError) {
  EXPECT_THAT(Evaluate("has(self.nested.inner)", json::object()),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: nested"));
  EXPECT_THAT(Evaluate("self.gpus > 1", json::object()),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: gpus"));
  EXPECT_THAT(Evaluate("self.labels.x == 'y'", {{"labels", json::object()}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: x"));
}

// CEL's && and || are commutative over errors: a false (&&) or true (||) operand decides,
// whichever side the error is on; otherwise the error stands.
TEST(CelLogic, ErrorsAreAbsorbedOnlyByTheDecidingValue) {
  const json self = json::object();
  EXPECT_TRUE(False("false && self.gpus > 1", self));
  EXPECT_TRUE(False("self.gpus > 1 && false", self));
  EXPECT_TRUE(True("true || self.gpus > 1", self));
  EXPECT_TRUE(True("self.gpus > 1 || true", self));
  EXPECT_THAT(Evaluate("true && self.gpus > 1", self),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: gpus"));
  EXPECT_THAT(Evaluate("self.gpus > 1 || false", self),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: gpus"));
  EXPECT_THAT(Evaluate("!(self.gpus > 1)", self),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: gpus"));
  EXPECT_THAT(Evaluate("self.role == 'x' || self.gpus > 1", self),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such key: role"));
}

TEST(CelPrecedence, FollowsTheCelGrammar) {
  EXPECT_TRUE(True("true || false && false"));  // && binds tighter than ||
  EXPECT_TRUE(False("(true || false) && false"));
  EXPECT_TRUE(True("!false == true"));  // unary binds tighter than ==
  EXPECT_TRUE(True("1 < 2 == true"));   // relations are left-associative
  EXPECT_TRUE(True("--1 == 1 && -(-1.5) == 1.5"));
  EXPECT_TRUE(True("!!true"));
}

// The CRDs' own rules, on objects after defaulting.
TEST(CelRules, OfTheCrdsEvaluateAsKubernetesEvaluatesThem) {
  const std::string rule = "has(self.gpus) != has(self.batch)";
  EXPECT_TRUE(True(rule, {{"gpus", 1}}));
  EXPECT_TRUE(False(rule, json::object()));
  EXPECT_TRUE(False(rule, {{"gpus", 1}, {"batch", 2}}));
  const std::string in_rule =
      "!has(self.role) || !(self.role in ['A', 'B']) || !has(self.gpus) || self.gpus >= 2";
  EXPECT_TRUE(True(in_rule, {{"role", "C"}, {"gpus", 1}}));
  EXPECT_TRUE(False(in_rule, {{"role", "B"}, {"gpus", 1}}));
  EXPECT_TRUE(True(in_rule, {{"role", "B"}, {"gpus", 2}}));
}

TEST(CelCompile, NamesUndefinedFieldsAndWrongTypes) {
  EXPECT_THAT(CompileError("self.gpu > 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "ERROR: <input>:1:6: undefined field 'gpu'\n | self.gpu > 1\n | .....^"));
  EXPECT_THAT(CompileError("has(self.nested.inner.colour)"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("undefined field 'colour'")));
  EXPECT_THAT(CompileError("self.gpus.x == 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("type 'int' does not support field selection")));
  EXPECT_THAT(CompileError("self.gpus && true"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("found no matching overload for '_&&_' applied to '(int, "
                                 "bool)'")));
  EXPECT_THAT(CompileError("!self.role"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no matching overload for '!_' applied to '(string)'")));
  EXPECT_THAT(CompileError("self.gpus in ['a']"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no matching overload for '@in' applied to '(int, "
                                 "list(string))'")));
  EXPECT_THAT(CompileError("self.gpus"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  "cel expression must evaluate to a bool"));
  EXPECT_THAT(CompileError("gpus > 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("undeclared reference to 'gpus' (in container '')")));
}

TEST(CelCompile, RefusesWhatTheSubsetLacksByName) {
  EXPECT_THAT(CompileError("self.tags.size() > 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("1:11: function 'size' is not supported here"),
                             HasSubstr("evaluates a CEL subset"))));
  EXPECT_THAT(CompileError("size(self.tags) > 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'size' is not supported here")));
  EXPECT_THAT(CompileError("self.tags.all(t, t != '')"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'all' is not supported here")));
  EXPECT_THAT(CompileError("self.gpus == oldSelf.gpus"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1:14: transition rules (oldSelf) are not supported here")));
  EXPECT_THAT(CompileError("self.gpus + 1 > 2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("arithmetic operator '+' is not supported here")));
  EXPECT_THAT(CompileError("self.suspend ? true : false"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the conditional operator ?: is not supported here")));
  EXPECT_THAT(CompileError("self.tags[0] == 'a'"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("indexing with [] is not supported here")));
  EXPECT_THAT(CompileError("{'a': 1} == {'a': 1}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("map literals are not supported here")));
  EXPECT_THAT(CompileError("1u == 1u"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unsigned integer literals are not supported here")));
}

TEST(CelCompile, RefusesBadSyntaxWithItsPosition) {
  EXPECT_THAT(CompileError("(self.gpus > 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ERROR: <input>:1:15: Syntax error: missing ')'")));
  EXPECT_THAT(CompileError("self.gpus > 1)"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1:14: Syntax error: unexpected ')'")));
  EXPECT_THAT(CompileError("self.gpus >"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Syntax error: unexpected end of input")));
  EXPECT_THAT(CompileError("self.role == 'x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1:14: Syntax error: unterminated string")));
  EXPECT_THAT(CompileError("self.gpus > 1 &&\n  self.batch # 2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ERROR: <input>:2:14: Syntax error: token recognition error at: "
                                 "'#'\n |   self.batch # 2\n | .............^")));
  EXPECT_THAT(CompileError("has(self)"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("invalid argument to has() macro")));
  EXPECT_THAT(
      CompileError("has(self.gpus, self.batch)"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid argument to has() macro")));
  EXPECT_THAT(CompileError("9223372036854775808 > 1"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid int literal")));
  EXPECT_THAT(CompileError("'\\q' == 'q'"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("invalid escape sequence '\\q'")));
  EXPECT_THAT(CompileError(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("Syntax error: unexpected end of input")));
}

// The work is bounded: deep nesting and long expressions are refused before they cost stack or
// time, while long flat chains of && and || (which cel-go balances) are fine.
TEST(CelBounds, DeepOrLongExpressionsAreRefused) {
  const std::string deep_parens =
      std::string(kMaxNestingDepth + 1, '(') + "true" + std::string(kMaxNestingDepth + 1, ')');
  EXPECT_THAT(CompileError(deep_parens),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expression nested deeper than 64 levels")));
  EXPECT_THAT(CompileError(std::string(5000, '!') + "true"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expression nested deeper than 64 levels")));
  std::string chain = "true";
  for (int i = 0; i < 100; ++i) chain += " == true";
  EXPECT_THAT(CompileError(chain), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("expression nested deeper than 64")));
  EXPECT_THAT(
      CompileError(std::string(kMaxExpressionBytes + 1, ' ') + "true"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bytes long; the limit is 10000")));
  std::string flat = "self.suspend";
  for (int i = 0; i < 500; ++i) flat += i % 2 == 0 ? " || self.suspend" : " && self.suspend";
  EXPECT_TRUE(False(flat, {{"suspend", false}}));
  EXPECT_TRUE(True(std::string(kMaxNestingDepth / 2 - 1, '(') + "true" +
                   std::string(kMaxNestingDepth / 2 - 1, ')')));
}

TEST(CelEvaluate, RuntimeTypeMismatchOnDynIsNoSuchOverload) {
  EXPECT_THAT(Evaluate("self.size > 1", {{"size", "1Gi"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such overload"));
  EXPECT_THAT(Evaluate("!self.template.x", {{"template", {{"x", 1}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "no such overload"));
  EXPECT_TRUE(True("!self.template.x", {{"template", {{"x", false}}}}));
  // A rule must be a bool: a dyn that may be one at run time is not enough, as kube-apiserver
  // checks it.
  EXPECT_THAT(CompileError("self.template.x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                        "cel expression must evaluate to a bool"));
  // Heterogeneous equality: values of different types are unequal, not an error.
  EXPECT_TRUE(False("self.size == 'a'", {{"size", 1}}));
  EXPECT_TRUE(True("self.size == 1.0", {{"size", 1}}));
}

}  // namespace
}  // namespace wavepool::testing::apiserver::cel
