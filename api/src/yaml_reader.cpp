// YAML text -> JSON values, with the line of every field.
#include <algorithm>
#include <exception>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "wavepool/api/field_path.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/yaml.h"
#include "wavepool/base/status_macros.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/parser.h"
#include "yaml-cpp/yaml.h"
#include "yaml_scalar.h"

namespace wavepool::api {
namespace {

std::string Position(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return absl::StrCat("line ", mark.line + 1, ", column ", mark.column + 1, ": ");
}

absl::Status ErrorAt(const YAML::Mark& mark, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(Position(mark), std::string(problem)));
}

// Converts one yaml-cpp node tree into JSON, recording the line of every field. Not
// thread-safe; one per document.
class Converter {
 public:
  explicit Converter(SourceLines* lines) : lines_(lines) {}

  // `depth` counts the collections around `node`.
  absl::Status Convert(const YAML::Node& node, const FieldPath& path, int depth,
                       nlohmann::json* out) {
    if ((node.IsSequence() || node.IsMap()) && depth >= kMaxYamlDepth) {
      return ErrorAt(node.Mark(), absl::StrCat("nesting deeper than ", kMaxYamlDepth, " levels"));
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
        return ConvertNull(node, out);
      case YAML::NodeType::Scalar:
        return ConvertScalar(node, out);
      case YAML::NodeType::Sequence:
        return ConvertSequence(node, path, depth, out);
      case YAML::NodeType::Map:
        return ConvertMap(node, path, depth, out);
      case YAML::NodeType::Undefined:
        break;
    }
    return ErrorAt(node.Mark(), "undefined YAML node");
  }

 private:
  // An empty value: null, or "" when tagged !!str.
  absl::Status ConvertNull(const YAML::Node& node, nlohmann::json* out) {
    const std::string& tag = node.Tag();
    if (tag == "tag:yaml.org,2002:str") {
      *out = "";
    } else if (tag.empty() || tag == "?" || tag == "!" || tag == "tag:yaml.org,2002:null") {
      *out = nullptr;
    } else {
      return ErrorAt(node.Mark(), absl::StrCat("unsupported tag \"", tag, "\""));
    }
    return absl::OkStatus();
  }

  absl::Status ConvertScalar(const YAML::Node& node, nlohmann::json* out) {
    const std::string& text = node.Scalar();
    if (!IsValidUtf8(text)) return ErrorAt(node.Mark(), "text is not valid UTF-8");
    const std::string& tag = node.Tag();
    absl::StatusOr<nlohmann::json> value =
        tag == "?" || tag.empty() ? ResolvePlainScalar(text) : ResolveTaggedScalar(text, tag);
    if (!value.ok()) return ErrorAt(node.Mark(), std::string(value.status().message()));
    *out = *std::move(value);
    return absl::OkStatus();
  }

  absl::Status ConvertSequence(const YAML::Node& node, const FieldPath& path, int depth,
                               nlohmann::json* out) {
    *out = nlohmann::json::array();
    std::size_t index = 0;
    for (const YAML::Node& item : node) {
      const FieldPath item_path = path.Index(index++);
      Record(item_path, item.Mark());
      out->push_back(nullptr);
      WAVEPOOL_RETURN_IF_ERROR(Convert(item, item_path, depth + 1, &out->back()));
    }
    return absl::OkStatus();
  }

  absl::Status ConvertMap(const YAML::Node& node, const FieldPath& path, int depth,
                          nlohmann::json* out) {
    *out = nlohmann::json::object();
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) {
        return ErrorAt(key.Mark(), "a mapping key must be a string, number or boolean");
      }
      const std::string& name = key.Scalar();
      if (!IsValidUtf8(name)) return ErrorAt(key.Mark(), "key is not valid UTF-8");
      if (out->contains(name)) {
        return ErrorAt(key.Mark(), absl::StrCat("duplicate key ", Quote(name)));
      }
      const FieldPath field_path = path.Child(name);
      Record(field_path, key.Mark());
      WAVEPOOL_RETURN_IF_ERROR(Convert(entry.second, field_path, depth + 1, &(*out)[name]));
    }
    return absl::OkStatus();
  }

  void Record(const FieldPath& path, const YAML::Mark& mark) {
    if (lines_ != nullptr && !mark.is_null()) lines_->Add(path.str(), mark.line + 1);
  }

  SourceLines* lines_;
};

// One collection on the walk of CheckExpansion: the node, its path and the next child to visit.
struct WalkFrame {
  YAML::Node node;
  FieldPath path;
  YAML::const_iterator next;
  YAML::const_iterator end;
  std::size_t index = 0;
};

// Refuses, before anything is built, a document whose aliases would expand forever or too far:
// an alias to a collection around itself (`a: &a [*a]`, a cycle), nesting deeper than
// kMaxYamlDepth (an alias chain nests deeper than the text does), and more than kMaxYamlNodes
// values (a "billion laughs" bomb). yaml-cpp's depth guard covers only the parse, not the walk of
// the node graph, and an alias cycle makes that graph infinite; so the walk keeps its own stack.
absl::Status CheckExpansion(const YAML::Node& root) {
  std::vector<WalkFrame> stack;
  std::size_t values = 1;
  if (root.IsSequence() || root.IsMap())
    stack.push_back({root, FieldPath(), root.begin(), root.end()});
  while (!stack.empty()) {
    WalkFrame& top = stack.back();
    if (top.next == top.end) {
      stack.pop_back();
      continue;
    }
    const bool is_map = top.node.IsMap();
    const YAML::Node child = is_map ? top.next->second : YAML::Node(*top.next);
    const FieldPath path =
        is_map ? top.path.Child(top.next->first.IsScalar() ? top.next->first.Scalar()
                                                           : std::string("?"))
               : top.path.Index(top.index);
    ++top.next;
    ++top.index;
    values += is_map ? 2 : 1;  // a key counts as a value: it costs as much to build
    if (values > static_cast<std::size_t>(kMaxYamlNodes)) {
      return ErrorAt(child.Mark(),
                     absl::StrCat("at ", path.str(), ": document expands to more than ",
                                  kMaxYamlNodes, " values"));
    }
    if (!child.IsSequence() && !child.IsMap()) continue;
    for (const WalkFrame& around : stack) {
      if (around.node.is(child)) {
        return ErrorAt(child.Mark(),
                       absl::StrCat("at ", path.str(), ": an alias refers to ",
                                    around.path.empty() ? "the document" : around.path.str(),
                                    ", a collection that contains it; the expansion would never "
                                    "end"));
      }
    }
    if (stack.size() >= static_cast<std::size_t>(kMaxYamlDepth)) {
      return ErrorAt(child.Mark(), absl::StrCat("at ", path.str(), ": nesting deeper than ",
                                                kMaxYamlDepth, " levels"));
    }
    stack.push_back({child, path, child.begin(), child.end()});
  }
  return absl::OkStatus();
}

// Notes where each document starts, and the first collection nested deeper than kMaxYamlDepth
// with its field path. yaml-cpp's own depth guard (500 levels, during the parse) would otherwise
// refuse deep text first, naming its limit rather than this one and no field.
class DocumentScan final : public YAML::EventHandler {
 public:
  const YAML::Mark& last_start() const { return last_start_; }
  // The first "line L, column C: at <path>: nesting deeper than ..." error; OK when none.
  const absl::Status& too_deep() const { return too_deep_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    last_start_ = mark;
    frames_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { Advance("?"); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { Advance("?"); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    Advance(value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/false);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/true);
  }
  void OnMapEnd() override { Close(); }

 private:
  // One open collection: its path, how many nodes it holds so far (a map's keys and values
  // alternate) and its last key.
  struct Frame {
    FieldPath path;
    bool is_map = false;
    std::size_t nodes = 0;
    std::string key;
  };

  // Counts the node that starts now in its parent; `text` is its scalar text (a map key's name).
  void Advance(const std::string& text) {
    if (frames_.empty()) return;
    Frame& parent = frames_.back();
    if (parent.is_map && parent.nodes % 2 == 0) parent.key = text;
    ++parent.nodes;
  }

  // The path of the node about to start.
  FieldPath NextPath() const {
    if (frames_.empty()) return FieldPath();
    const Frame& parent = frames_.back();
    if (!parent.is_map) return parent.path.Index(parent.nodes);
    // A collection as a key has no name; Converter refuses it later.
    if (parent.nodes % 2 == 0) return parent.path.Child("?");
    return parent.path.Child(parent.key);
  }

  void Open(const YAML::Mark& mark, bool is_map) {
    FieldPath path = NextPath();
    Advance("?");
    // Collections inside the refused one are not followed: their paths would only grow.
    if (too_deep_.ok() && frames_.size() >= static_cast<std::size_t>(kMaxYamlDepth)) {
      too_deep_ = ErrorAt(mark, absl::StrCat("at ", path.str(), ": nesting deeper than ",
                                             kMaxYamlDepth, " levels"));
    }
    frames_.push_back({too_deep_.ok() ? std::move(path) : FieldPath(), is_map, 0, ""});
  }

  void Close() {
    if (!frames_.empty()) frames_.pop_back();
  }

  YAML::Mark last_start_;
  std::vector<Frame> frames_;
  absl::Status too_deep_;
};

// A first pass over the events of every document, before any node is built. It refuses nesting
// deeper than kMaxYamlDepth with the project's limit and the field's line and path. And
// yaml-cpp 0.7's LoadAll never returns on some malformed flow text (`{a: 1},`): its parser stops
// consuming at the stray ',' and reports an empty document there again and again, which LoadAll
// collects until memory runs out; noting where documents start finds that spot, since two
// documents cannot start at the same place.
absl::Status ScanDocuments(const std::string& text, DocumentScan& scan) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  int previous = -1;
  try {
    while (parser.HandleNextDocument(scan)) {
      WAVEPOOL_RETURN_IF_ERROR(scan.too_deep());
      if (scan.last_start().pos == previous) {
        return ErrorAt(scan.last_start(),
                       "cannot read past this point (a stray ',', ']' or '}' outside a "
                       "collection?)");
      }
      previous = scan.last_start().pos;
    }
  } catch (const YAML::Exception&) {
    // Past our limit yaml-cpp's own guard or a syntax error further on may stop the parse; the
    // depth error comes first in the text, so it is the one to report.
    if (!scan.too_deep().ok()) return scan.too_deep();
    throw;
  }
  return absl::OkStatus();
}

// Turns whatever yaml-cpp or the standard library throws into a Status.
template <typename F>
absl::Status CatchParseErrors(F&& parse) {
  try {
    return parse();
  } catch (const YAML::DeepRecursion& e) {
    return ErrorAt(e.mark, absl::StrCat("nesting deeper than ", e.depth(), " levels"));
  } catch (const YAML::Exception& e) {
    return ErrorAt(e.mark, e.msg);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("YAML document too large for memory");
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read YAML: ", e.what()));
  }
}

absl::Status ParseYaml(std::string_view text, std::vector<YamlDocument>* documents) {
  return CatchParseErrors([&]() -> absl::Status {
    const std::string copy(text);
    DocumentScan scan;
    WAVEPOOL_RETURN_IF_ERROR(ScanDocuments(copy, scan));
    const std::vector<YAML::Node> nodes = YAML::LoadAll(copy);
    for (const YAML::Node& node : nodes) {
      WAVEPOOL_RETURN_IF_ERROR(CheckExpansion(node));
      YamlDocument document;
      document.line = node.Mark().is_null() ? 0 : node.Mark().line + 1;
      Converter converter(&document.lines);
      WAVEPOOL_RETURN_IF_ERROR(converter.Convert(node, FieldPath(), 0, &document.value));
      documents->push_back(std::move(document));
    }
    return absl::OkStatus();
  });
}

// Levels of nested arrays and objects in a JSON value ("[[]]" is 2), counted without recursion.
int JsonDepth(const nlohmann::json& root) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> pending;
  if (root.is_structured()) pending.emplace_back(&root, 1);
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    for (const nlohmann::json& child : *value) {
      if (child.is_structured()) pending.emplace_back(&child, depth + 1);
    }
  }
  return deepest;
}

bool LooksLikeJson(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  for (char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) continue;
    return c == '{' || c == '[';
  }
  return false;
}

// JSON text as JSON (exact number rules); nullopt when it is not valid JSON.
absl::StatusOr<std::optional<YamlDocument>> ParseJson(std::string_view text) {
  nlohmann::json value =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::optional<YamlDocument>();
  if (JsonDepth(value) > kMaxYamlDepth) {
    // JSON is YAML too: the YAML scan of the same text finds the line, column and field.
    DocumentScan scan;
    CatchParseErrors([&] { return ScanDocuments(std::string(text), scan); }).IgnoreError();
    if (!scan.too_deep().ok()) return scan.too_deep();
    return absl::InvalidArgumentError(
        absl::StrCat("nesting deeper than ", kMaxYamlDepth, " levels"));
  }
  YamlDocument document;
  document.value = std::move(value);
  document.line = 1;
  // Lines come from the YAML reading of the same text, when it agrees.
  std::vector<YamlDocument> as_yaml;
  if (ParseYaml(text, &as_yaml).ok() && as_yaml.size() == 1 && as_yaml[0].value == document.value) {
    document.lines = std::move(as_yaml[0].lines);
  }
  return std::optional<YamlDocument>(std::move(document));
}

}  // namespace

int SourceLines::LineOf(std::string_view path) const {
  std::string current(path);
  while (true) {
    auto it = lines_.find(current);
    if (it != lines_.end()) return it->second;
    if (current.empty()) return 0;
    current = ParentPath(current);
  }
}

absl::StatusOr<std::vector<YamlDocument>> ParseDocuments(std::string_view text) {
  std::vector<YamlDocument> documents;
  if (LooksLikeJson(text)) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<YamlDocument> json, ParseJson(text));
    if (json.has_value()) {
      documents.push_back(std::move(*json));
      return documents;
    }
    // Not JSON: flow-style YAML such as {a: 1} is still welcome.
  }
  WAVEPOOL_RETURN_IF_ERROR(ParseYaml(text, &documents));
  return documents;
}

absl::StatusOr<nlohmann::json> YamlToJson(std::string_view text) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<YamlDocument> documents, ParseDocuments(text));
  if (documents.empty()) return nlohmann::json();
  if (documents.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected one YAML document, got ", documents.size()));
  }
  return std::move(documents[0].value);
}

}  // namespace wavepool::api
