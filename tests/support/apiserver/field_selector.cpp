// The fields each built-in indexes follow the field-label conversion functions the real server
// registers (pkg/registry/*/strategy.go, e.g. core/pod ToSelectableFields; core/event
// ToSelectableFields for involvedObject.*).
#include "tests/support/apiserver/field_selector.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::testing::apiserver {
namespace {

// The value at a dotted path, as text: strings as they are, booleans and numbers printed.
std::string At(const nlohmann::json& object, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &object;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return "";
    node = &(*node)[key];
  }
  if (node->is_string()) return node->get<std::string>();
  if (node->is_boolean()) return node->get<bool>() ? "true" : "false";
  if (node->is_number()) return node->dump();
  return "";
}

void AddPodFields(const nlohmann::json& o, std::map<std::string, std::string>& f) {
  f["spec.nodeName"] = At(o, {"spec", "nodeName"});
  f["spec.restartPolicy"] = At(o, {"spec", "restartPolicy"});
  f["spec.schedulerName"] = At(o, {"spec", "schedulerName"});
  f["spec.serviceAccountName"] = At(o, {"spec", "serviceAccountName"});
  const std::string host_network = At(o, {"spec", "hostNetwork"});
  f["spec.hostNetwork"] = host_network.empty() ? "false" : host_network;
  f["status.phase"] = At(o, {"status", "phase"});
  f["status.podIP"] = At(o, {"status", "podIP"});
  f["status.nominatedNodeName"] = At(o, {"status", "nominatedNodeName"});
}

void AddEventFields(const nlohmann::json& o, std::map<std::string, std::string>& f) {
  for (const char* field :
       {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}) {
    f[absl::StrCat("involvedObject.", field)] = At(o, {"involvedObject", field});
  }
  f["reason"] = At(o, {"reason"});
  f["reportingComponent"] = At(o, {"reportingComponent"});
  f["source"] = At(o, {"source", "component"});
  f["type"] = At(o, {"type"});
}

// Splits on unescaped `sep`; backslash escapes the next character.
std::vector<std::string> SplitEscaped(std::string_view text, char sep) {
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      parts.back() += text.substr(i, 2);
      ++i;
    } else if (text[i] == sep) {
      parts.emplace_back();
    } else {
      parts.back() += text[i];
    }
  }
  return parts;
}

std::string Unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

// Position of the operator in `term` (the first unescaped '=' or "!="), or npos.
std::size_t FindOperator(std::string_view term, bool& not_equals) {
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '\\') {
      ++i;
    } else if (term[i] == '!' && i + 1 < term.size() && term[i + 1] == '=') {
      not_equals = true;
      return i;
    } else if (term[i] == '=') {
      not_equals = false;
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::map<std::string, std::string> SelectableFields(std::string_view group_resource,
                                                    const nlohmann::json& object) {
  std::map<std::string, std::string> fields;
  fields["metadata.name"] = At(object, {"metadata", "name"});
  fields["metadata.namespace"] = At(object, {"metadata", "namespace"});
  if (group_resource == "pods") AddPodFields(object, fields);
  if (group_resource == "events") AddEventFields(object, fields);
  if (group_resource == "nodes") {
    const std::string unschedulable = At(object, {"spec", "unschedulable"});
    fields["spec.unschedulable"] = unschedulable.empty() ? "false" : unschedulable;
  }
  if (group_resource == "namespaces") fields["status.phase"] = At(object, {"status", "phase"});
  if (group_resource == "secrets") fields["type"] = At(object, {"type"});
  if (group_resource == "replicasets.apps") {
    const std::string replicas = At(object, {"status", "replicas"});
    fields["status.replicas"] = replicas.empty() ? "0" : replicas;
  }
  if (group_resource == "jobs.batch") {
    const std::string succeeded = At(object, {"status", "succeeded"});
    fields["status.successful"] = succeeded.empty() ? "0" : succeeded;
  }
  return fields;
}

absl::StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text,
                                                   std::string_view group_resource,
                                                   bool custom_resource) {
  FieldSelector selector;
  if (text.empty()) return selector;
  const std::map<std::string, std::string> known = SelectableFields(group_resource, nullptr);
  for (const std::string& raw : SplitEscaped(text, ',')) {
    bool not_equals = false;
    const std::size_t op = FindOperator(raw, not_equals);
    if (op == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("invalid selector: '", std::string(text),
                                                     "'; can't understand '", raw, "'"));
    }
    Term term;
    term.field = Unescape(raw.substr(0, op));
    term.equals = !not_equals;
    std::size_t value_start = op + (not_equals ? 2 : 1);
    if (!not_equals && value_start < raw.size() && raw[value_start] == '=') ++value_start;
    term.value = Unescape(raw.substr(value_start));
    if (known.count(term.field) == 0) {
      if (custom_resource) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", term.field,
                         "\" is not a known field selector: only \"metadata.name\", "
                         "\"metadata.namespace\""));
      }
      return absl::InvalidArgumentError(absl::StrCat("field label not supported: ", term.field));
    }
    selector.terms_.push_back(std::move(term));
  }
  return selector;
}

bool FieldSelector::Matches(const std::map<std::string, std::string>& fields) const {
  for (const Term& term : terms_) {
    auto it = fields.find(term.field);
    const std::string value = it == fields.end() ? "" : it->second;
    if ((value == term.value) != term.equals) return false;
  }
  return true;
}

}  // namespace wavepool::testing::apiserver
