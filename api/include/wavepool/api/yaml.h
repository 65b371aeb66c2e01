// YAML <-> JSON for the wavepool.dev types, and multi-document manifests.
//
// Reading follows the YAML 1.2 core schema, as JSON sees it: plain `true`/`false` are booleans,
// `null`/`~`/empty are null, plain integers (decimal, 0x hex, 0o octal) stay integers (int64, or
// uint64/double when larger), plain decimals and exponents are doubles, and everything else,
// including every quoted scalar and YAML 1.1's yes/no/on/off, is a string. Explicit tags
// !!str, !!int, !!float, !!bool and !!null are honoured. A mapping key becomes its text. Errors
// are InvalidArgument and carry the 1-based line: "line 4, column 7: duplicate key \"gpus\"".
// NaN and infinities are rejected, because JSON cannot carry them.
//
// Writing quotes every string that a YAML reader (1.1 or 1.2) could take for something else,
// so JsonToYaml output reads back to the same JSON. All functions are thread-safe.
#ifndef WAVEPOOL_API_YAML_H_
#define WAVEPOOL_API_YAML_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::api {

// Nesting deeper than this many levels is rejected (as is a document that expands, through
// aliases, to more than kMaxYamlNodes values, and an alias to a collection around it, such as
// `a: &a [*a]`, whose expansion would never end), so hostile input cannot exhaust the stack or
// memory. These errors name the line and column and the field path where the expansion failed.
inline constexpr int kMaxYamlDepth = 256;
inline constexpr int kMaxYamlNodes = 1 << 18;

// Where each field of a parsed document was written: field path (FieldPath spelling,
// "spec.parallelism.amplificationLimit", "stages[3].ranks[1]") -> 1-based line.
class SourceLines {
 public:
  void Add(std::string path, int line) { lines_.emplace(std::move(path), line); }
  // The line of `path`, else of its nearest recorded ancestor; 0 when none is known.
  int LineOf(std::string_view path) const;
  bool empty() const { return lines_.empty(); }

 private:
  std::map<std::string, int, std::less<>> lines_;
};

// One document of a manifest.
struct YamlDocument {
  nlohmann::json value;  // null for an empty document.
  int line = 0;          // 1-based line where the document starts.
  SourceLines lines;
};

// The single document in `text` (YAML, or JSON, which is parsed as JSON). Empty text is null.
// More than one document is an error.
absl::StatusOr<nlohmann::json> YamlToJson(std::string_view text);

// Every document in `text`, split at `---` lines, empty ones included (value null). Text that
// starts with '{' or '[' and is valid JSON is read as one JSON document, with JSON's number
// rules; anything else (flow-style YAML such as "{a: 1}" included) is read as YAML.
absl::StatusOr<std::vector<YamlDocument>> ParseDocuments(std::string_view text);

// Block-style YAML for `value`, ending in a newline. Key order is the JSON object's.
std::string JsonToYaml(const nlohmann::json& value);

// The documents joined by "---" lines, as `kubectl get -o yaml` would print several objects.
std::string JsonToYaml(const std::vector<nlohmann::json>& documents);

// YAML of any API object (TrainingJob, GpuNode, Plan, ...): JsonToYaml(ToJson(object)).
template <typename T>
std::string ToYaml(const T& object) {
  return JsonToYaml(ToJson(object));
}

// An API object from YAML or JSON text: T::FromJson(YamlToJson(text)).
template <typename T>
absl::StatusOr<T> FromYaml(std::string_view text) {
  absl::StatusOr<nlohmann::json> json = YamlToJson(text);
  if (!json.ok()) return json.status();
  return T::FromJson(*json);
}

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_YAML_H_
