// The informer's indexed store and the label selectors it filters by.
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/informer.h"

namespace wavepool::kube {
namespace {

// metadata.`field` when it is a string; "" otherwise.
std::string StringAt(const nlohmann::json& object, const char* field) {
  return api::FieldAs<std::string>(api::FieldOrNull(object, "metadata"), field).value_or("");
}

// metadata.labels as they are (null when absent).
const nlohmann::json& LabelsOf(const nlohmann::json& object) {
  return api::FieldOrNull(api::FieldOrNull(object, "metadata"), "labels");
}

std::vector<std::string> NamespaceOf(const nlohmann::json& object) {
  return {StringAt(object, "namespace")};
}

std::vector<std::string> LabelPairsOf(const nlohmann::json& object) {
  std::vector<std::string> pairs;
  const nlohmann::json& labels = LabelsOf(object);
  if (!labels.is_object()) return pairs;
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) pairs.push_back(key + "=" + value.get<std::string>());
  }
  return pairs;
}

// Splits at commas outside parentheses: "a in (x,y),b" -> {"a in (x,y)", "b"}.
std::vector<std::string> SplitRequirements(std::string_view text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (const char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  parts.push_back(current);
  return parts;
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  const std::string ns = StringAt(object, "namespace");
  const std::string name = StringAt(object, "name");
  return ns.empty() ? name : ns + "/" + name;
}

absl::StatusOr<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  if (absl::StripAsciiWhitespace(std::string(text)).empty()) return selector;
  for (const std::string& raw : SplitRequirements(text)) {
    const std::string part(absl::StripAsciiWhitespace(raw));
    const auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("label selector \"", std::string(text),
                                                     "\": requirement \"", part,
                                                     "\": ", std::string(why)));
    };
    if (part.empty()) return bad("empty (want key, !key, key=value, key in (a,b), ...)");
    Requirement req;
    std::size_t pos;
    if (part[0] == '!') {
      req.key = std::string(absl::StripAsciiWhitespace(part.substr(1)));
      req.op = Op::kNotExists;
    } else if ((pos = part.find("!=")) != std::string::npos) {
      req.key = std::string(absl::StripAsciiWhitespace(part.substr(0, pos)));
      req.op = Op::kNotIn;
      req.values.insert(std::string(absl::StripAsciiWhitespace(part.substr(pos + 2))));
    } else if ((pos = part.find('=')) != std::string::npos) {
      const std::size_t value_at = part.compare(pos, 2, "==") == 0 ? pos + 2 : pos + 1;
      req.key = std::string(absl::StripAsciiWhitespace(part.substr(0, pos)));
      req.op = Op::kIn;
      req.values.insert(std::string(absl::StripAsciiWhitespace(part.substr(value_at))));
    } else if (const std::size_t open = part.find('('); open != std::string::npos) {
      if (part.back() != ')') return bad("a value set must end with ')'");
      const std::vector<std::string> head = absl::StrSplit(
          std::string(absl::StripAsciiWhitespace(part.substr(0, open))), ' ', absl::SkipEmpty());
      if (head.size() != 2 || (head[1] != "in" && head[1] != "notin")) {
        return bad("want \"key in (values)\" or \"key notin (values)\"");
      }
      req.key = head[0];
      req.op = head[1] == "in" ? Op::kIn : Op::kNotIn;
      for (const auto& v : absl::StrSplit(part.substr(open + 1, part.size() - open - 2), ',')) {
        req.values.insert(std::string(absl::StripAsciiWhitespace(v)));
      }
    } else {
      req.key = part;
      req.op = Op::kExists;
    }
    if (req.key.empty() || req.key.find(' ') != std::string::npos) return bad("bad key");
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const Requirement& req : requirements_) {
    const auto found = labels.is_object() ? labels.find(req.key) : labels.end();
    const bool has = labels.is_object() && found != labels.end() && found->is_string();
    const std::string value = has ? found->get<std::string>() : "";
    switch (req.op) {
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kNotExists:
        if (has) return false;
        break;
      case Op::kIn:
        if (!has || req.values.count(value) == 0) return false;
        break;
      case Op::kNotIn:  // as the API's: a missing label is not in any set
        if (has && req.values.count(value) > 0) return false;
        break;
    }
  }
  return true;
}

Store::Store() {
  indexes_[kNamespaceIndex].func = NamespaceOf;
  indexes_[kLabelIndex].func = LabelPairsOf;
}

absl::Status Store::AddIndexer(const std::string& name, IndexFunc index) {
  absl::MutexLock lock(&mu_);
  if (indexes_.count(name) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("store index \"", name, "\" already exists"));
  }
  Index& added = indexes_[name];
  added.func = std::move(index);
  for (const auto& [key, object] : items_) {
    for (const std::string& value : added.func(object)) added.keys_by_value[value].insert(key);
  }
  return absl::OkStatus();
}

void Store::IndexLocked(const std::string& key, const nlohmann::json& object, bool add) {
  for (auto& [name, index] : indexes_) {
    for (const std::string& value : index.func(object)) {
      if (add) {
        index.keys_by_value[value].insert(key);
        continue;
      }
      const auto it = index.keys_by_value.find(value);
      if (it == index.keys_by_value.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.keys_by_value.erase(it);
    }
  }
}

std::optional<nlohmann::json> Store::Get(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  const auto it = items_.find(key);
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Store::ListKeys() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> keys;
  keys.reserve(items_.size());
  for (const auto& [key, object] : items_) keys.push_back(key);
  return keys;
}

std::vector<nlohmann::json> Store::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<nlohmann::json> objects;
  objects.reserve(items_.size());
  for (const auto& [key, object] : items_) objects.push_back(object);
  return objects;
}

absl::StatusOr<std::vector<nlohmann::json>> Store::List(std::string_view label_selector) const {
  WAVEPOOL_ASSIGN_OR_RETURN(LabelSelector selector, LabelSelector::Parse(label_selector));
  absl::MutexLock lock(&mu_);
  std::vector<nlohmann::json> objects;
  for (const auto& [key, object] : items_) {
    // Looked up in place: copying each object's metadata would cost more than the match.
    if (selector.Matches(LabelsOf(object))) objects.push_back(object);
  }
  return objects;
}

absl::StatusOr<std::vector<nlohmann::json>> Store::ByIndex(const std::string& index,
                                                           const std::string& value) const {
  absl::MutexLock lock(&mu_);
  const auto found = indexes_.find(index);
  if (found == indexes_.end()) {
    return absl::NotFoundError(absl::StrCat("store index \"", index, "\" does not exist"));
  }
  std::vector<nlohmann::json> objects;
  const auto keys = found->second.keys_by_value.find(value);
  if (keys == found->second.keys_by_value.end()) return objects;
  for (const std::string& key : keys->second) objects.push_back(items_.at(key));
  return objects;
}

std::vector<nlohmann::json> Store::ByLabel(const std::string& key, const std::string& value) const {
  return *ByIndex(kLabelIndex, key + "=" + value);
}

std::size_t Store::size() const {
  absl::MutexLock lock(&mu_);
  return items_.size();
}

std::optional<nlohmann::json> Store::Upsert(nlohmann::json object) {
  const std::string key = ObjectKey(object);
  absl::MutexLock lock(&mu_);
  std::optional<nlohmann::json> previous;
  const auto it = items_.find(key);
  if (it != items_.end()) {
    IndexLocked(key, it->second, /*add=*/false);
    previous = std::move(it->second);
    it->second = std::move(object);
    IndexLocked(key, it->second, /*add=*/true);
  } else {
    const auto inserted = items_.emplace(key, std::move(object)).first;
    IndexLocked(key, inserted->second, /*add=*/true);
  }
  return previous;
}

std::optional<nlohmann::json> Store::Remove(const std::string& key) {
  absl::MutexLock lock(&mu_);
  const auto it = items_.find(key);
  if (it == items_.end()) return std::nullopt;
  IndexLocked(key, it->second, /*add=*/false);
  std::optional<nlohmann::json> previous = std::move(it->second);
  items_.erase(it);
  return previous;
}

}  // namespace wavepool::kube
