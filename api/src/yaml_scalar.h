// How a YAML scalar's text becomes a JSON value (YAML 1.2 core schema), shared by the reader,
// which resolves plain scalars, and the writer, which quotes every string that would not
// resolve back to a string.
#ifndef WAVEPOOL_API_SRC_YAML_SCALAR_H_
#define WAVEPOOL_API_SRC_YAML_SCALAR_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::api {

// The value of an untagged plain (unquoted) scalar. InvalidArgument (without position; the
// caller adds it) for .nan/.inf and for numbers a double cannot hold.
absl::StatusOr<nlohmann::json> ResolvePlainScalar(std::string_view text);

// The value of a scalar with an explicit tag: "tag:yaml.org,2002:str" (and "!"), ":int",
// ":float", ":bool", ":null". InvalidArgument for other tags and for text the tag rejects.
absl::StatusOr<nlohmann::json> ResolveTaggedScalar(std::string_view text, std::string_view tag);

// Whether a string must be written quoted: a plain scalar with this text would read back as
// something else, or as something else under YAML 1.1 (yes/no/on/off, numbers with '_', ...).
bool NeedsQuotes(std::string_view text);

// Whether `text` is well-formed UTF-8 (JSON requires it).
bool IsValidUtf8(std::string_view text);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_SRC_YAML_SCALAR_H_
