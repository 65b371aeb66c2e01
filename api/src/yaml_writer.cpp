// JSON values -> block-style YAML that reads back to the same JSON.
#include <cmath>
#include <string>
#include <vector>

#include "wavepool/api/json_codec.h"
#include "wavepool/api/yaml.h"
#include "yaml-cpp/yaml.h"
#include "yaml_scalar.h"

namespace wavepool::api {
namespace {

void EmitString(const std::string& text, YAML::Emitter* out) {
  if (NeedsQuotes(text)) *out << YAML::DoubleQuoted;
  *out << text;
}

void Emit(const nlohmann::json& value, YAML::Emitter* out) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      *out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        *out << YAML::Key;
        EmitString(key, out);
        *out << YAML::Value;
        Emit(item, out);
      }
      *out << YAML::EndMap;
      return;
    case nlohmann::json::value_t::array:
      *out << YAML::BeginSeq;
      for (const nlohmann::json& item : value) Emit(item, out);
      *out << YAML::EndSeq;
      return;
    case nlohmann::json::value_t::string:
      EmitString(value.get_ref<const std::string&>(), out);
      return;
    case nlohmann::json::value_t::boolean:
      *out << value.get<bool>();
      return;
    case nlohmann::json::value_t::number_integer:
      *out << value.get<std::int64_t>();
      return;
    case nlohmann::json::value_t::number_unsigned:
      *out << value.get<std::uint64_t>();
      return;
    case nlohmann::json::value_t::number_float:
      // JSON's shortest round-trip form ("2.0", "1e-05") reads back as the same double; a
      // non-finite value becomes null, as JSON writes it.
      if (std::isfinite(value.get<double>())) {
        *out << FormatDouble(value.get<double>());
      } else {
        *out << YAML::Null;
      }
      return;
    default:
      *out << YAML::Null;
      return;
  }
}

}  // namespace

std::string JsonToYaml(const nlohmann::json& value) {
  YAML::Emitter out;
  Emit(value, &out);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string JsonToYaml(const std::vector<nlohmann::json>& documents) {
  std::string text;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    if (i > 0) text += "---\n";
    text += JsonToYaml(documents[i]);
  }
  return text;
}

}  // namespace wavepool::api
