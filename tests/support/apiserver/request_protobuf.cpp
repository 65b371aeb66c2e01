// A table-driven protobuf decoder for the kinds request_protobuf.h names. Field numbers are those
// of k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto (ObjectMeta, TypeMeta, Time),
// k8s.io/apimachinery/pkg/runtime/generated.proto (Unknown) and k8s.io/api/core/v1/generated.proto.
// The generated marshallers write every non-pointer field, empty strings and zero integers
// included; like the JSON encoding (omitempty), those are left out here.
#include "tests/support/apiserver/request_protobuf.h"

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr std::string_view kMagic("k8s\0", 4);

enum class Kind { kString, kBytes, kInt, kBool, kMessage, kStringMap, kBytesMap, kStrings, kTime };

struct MessageSpec;
struct FieldSpec {
  int number;
  const char* name;
  Kind kind;
  const MessageSpec* message = nullptr;
};
struct MessageSpec {
  const char* name;
  std::vector<FieldSpec> fields;
};

const MessageSpec kTypeMeta{"TypeMeta",
                            {{1, "apiVersion", Kind::kString}, {2, "kind", Kind::kString}}};
const MessageSpec kObjectMeta{"ObjectMeta",
                              {{1, "name", Kind::kString},
                               {2, "generateName", Kind::kString},
                               {3, "namespace", Kind::kString},
                               {4, "selfLink", Kind::kString},
                               {5, "uid", Kind::kString},
                               {6, "resourceVersion", Kind::kString},
                               {7, "generation", Kind::kInt},
                               {8, "creationTimestamp", Kind::kTime},
                               {11, "labels", Kind::kStringMap},
                               {12, "annotations", Kind::kStringMap},
                               {14, "finalizers", Kind::kStrings}}};
const MessageSpec kNamespaceSpec{"NamespaceSpec", {{1, "finalizers", Kind::kStrings}}};
const MessageSpec kNamespaceStatus{"NamespaceStatus", {{1, "phase", Kind::kString}}};
const MessageSpec kNamespace{"Namespace",
                             {{1, "metadata", Kind::kMessage, &kObjectMeta},
                              {2, "spec", Kind::kMessage, &kNamespaceSpec},
                              {3, "status", Kind::kMessage, &kNamespaceStatus}}};
const MessageSpec kConfigMap{"ConfigMap",
                             {{1, "metadata", Kind::kMessage, &kObjectMeta},
                              {2, "data", Kind::kStringMap},
                              {3, "binaryData", Kind::kBytesMap},
                              {4, "immutable", Kind::kBool}}};
const MessageSpec kSecret{"Secret",
                          {{1, "metadata", Kind::kMessage, &kObjectMeta},
                           {2, "data", Kind::kBytesMap},
                           {3, "type", Kind::kString},
                           {4, "stringData", Kind::kStringMap},
                           {5, "immutable", Kind::kBool}}};
const MessageSpec kServiceAccount{"ServiceAccount",
                                  {{1, "metadata", Kind::kMessage, &kObjectMeta},
                                   {4, "automountServiceAccountToken", Kind::kBool}}};

// k8s.io/api/authentication/v1/generated.proto: what `kubectl create token` sends.
const MessageSpec kBoundObjectReference{"BoundObjectReference",
                                        {{1, "kind", Kind::kString},
                                         {2, "apiVersion", Kind::kString},
                                         {3, "name", Kind::kString},
                                         {4, "uid", Kind::kString}}};
const MessageSpec kTokenRequestSpec{"TokenRequestSpec",
                                    {{1, "audiences", Kind::kStrings},
                                     {3, "boundObjectRef", Kind::kMessage, &kBoundObjectReference},
                                     {4, "expirationSeconds", Kind::kInt}}};
const MessageSpec kTokenRequestStatus{
    "TokenRequestStatus", {{1, "token", Kind::kString}, {2, "expirationTimestamp", Kind::kTime}}};
const MessageSpec kTokenRequest{"TokenRequest",
                                {{1, "metadata", Kind::kMessage, &kObjectMeta},
                                 {2, "spec", Kind::kMessage, &kTokenRequestSpec},
                                 {3, "status", Kind::kMessage, &kTokenRequestStatus}}};

// k8s.io/api/authorization/v1/generated.proto: what `kubectl auth can-i` sends.
const MessageSpec kResourceAttributes{"ResourceAttributes",
                                      {{1, "namespace", Kind::kString},
                                       {2, "verb", Kind::kString},
                                       {3, "group", Kind::kString},
                                       {4, "version", Kind::kString},
                                       {5, "resource", Kind::kString},
                                       {6, "subresource", Kind::kString},
                                       {7, "name", Kind::kString}}};
const MessageSpec kNonResourceAttributes{"NonResourceAttributes",
                                         {{1, "path", Kind::kString}, {2, "verb", Kind::kString}}};
const MessageSpec kSelfSubjectAccessReviewSpec{
    "SelfSubjectAccessReviewSpec",
    {{1, "resourceAttributes", Kind::kMessage, &kResourceAttributes},
     {2, "nonResourceAttributes", Kind::kMessage, &kNonResourceAttributes}}};
const MessageSpec kSubjectAccessReviewStatus{"SubjectAccessReviewStatus",
                                             {{1, "allowed", Kind::kBool},
                                              {2, "reason", Kind::kString},
                                              {3, "evaluationError", Kind::kString},
                                              {4, "denied", Kind::kBool}}};
const MessageSpec kSelfSubjectAccessReview{
    "SelfSubjectAccessReview",
    {{1, "metadata", Kind::kMessage, &kObjectMeta},
     {2, "spec", Kind::kMessage, &kSelfSubjectAccessReviewSpec},
     {3, "status", Kind::kMessage, &kSubjectAccessReviewStatus}}};

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("protobuf body: ", std::string(what)));
}

// One field of a message: its number and wire type, and the varint or bytes it carries.
struct WireField {
  int number = 0;
  int wire_type = 0;
  std::uint64_t varint = 0;
  std::string_view bytes;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  absl::StatusOr<WireField> Next() {
    absl::StatusOr<std::uint64_t> key = Varint();
    if (!key.ok()) return key.status();
    WireField field;
    field.number = static_cast<int>(*key >> 3);
    field.wire_type = static_cast<int>(*key & 7);
    switch (field.wire_type) {
      case 0: {
        absl::StatusOr<std::uint64_t> value = Varint();
        if (!value.ok()) return value.status();
        field.varint = *value;
        return field;
      }
      case 2: {
        absl::StatusOr<std::uint64_t> length = Varint();
        if (!length.ok()) return length.status();
        if (*length > data_.size() - pos_) return Malformed("a field runs past the end");
        field.bytes = data_.substr(pos_, *length);
        pos_ += *length;
        return field;
      }
      default:
        return Malformed(absl::StrCat("unexpected wire type ", field.wire_type));
    }
  }

 private:
  absl::StatusOr<std::uint64_t> Varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Malformed("a varint runs past the end");
      const auto byte = static_cast<unsigned char>(data_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Malformed("a varint is too long");
  }

  std::string_view data_;
  std::size_t pos_ = 0;
};

// metav1.Time {seconds, nanos} as RFC 3339; "" for the zero time.
absl::StatusOr<std::string> DecodeTime(std::string_view data) {
  Reader reader(data);
  std::int64_t seconds = 0;
  while (!reader.done()) {
    absl::StatusOr<WireField> field = reader.Next();
    if (!field.ok()) return field.status();
    if (field->number == 1) seconds = static_cast<std::int64_t>(field->varint);
  }
  if (seconds == 0) return std::string();
  const std::time_t time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text);
}

// A map entry {1: key, 2: value}.
absl::Status DecodeMapEntry(std::string_view data, bool bytes_value, nlohmann::json& map) {
  Reader reader(data);
  std::string key;
  std::string value;
  while (!reader.done()) {
    absl::StatusOr<WireField> field = reader.Next();
    if (!field.ok()) return field.status();
    if (field->wire_type != 2) return Malformed("a map entry field is not a string");
    if (field->number == 1) key = std::string(field->bytes);
    if (field->number == 2) value = std::string(field->bytes);
  }
  map[key] = bytes_value ? absl::Base64Escape(value) : value;
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> DecodeMessage(std::string_view data, const MessageSpec& spec);

absl::Status DecodeField(const FieldSpec& spec, const WireField& field, nlohmann::json& out) {
  const bool varint_kind = spec.kind == Kind::kInt || spec.kind == Kind::kBool;
  if ((field.wire_type == 0) != varint_kind) {
    return Malformed(absl::StrCat("field ", spec.name, " has the wrong wire type"));
  }
  switch (spec.kind) {
    case Kind::kString:
      if (!field.bytes.empty()) out[spec.name] = std::string(field.bytes);
      return absl::OkStatus();
    case Kind::kBytes:
      out[spec.name] = absl::Base64Escape(std::string(field.bytes));
      return absl::OkStatus();
    case Kind::kInt:
      if (field.varint != 0) out[spec.name] = static_cast<std::int64_t>(field.varint);
      return absl::OkStatus();
    case Kind::kBool:
      out[spec.name] = field.varint != 0;
      return absl::OkStatus();
    case Kind::kStrings:
      out[spec.name].push_back(std::string(field.bytes));
      return absl::OkStatus();
    case Kind::kStringMap:
    case Kind::kBytesMap:
      return DecodeMapEntry(field.bytes, spec.kind == Kind::kBytesMap, out[spec.name]);
    case Kind::kTime: {
      absl::StatusOr<std::string> time = DecodeTime(field.bytes);
      if (!time.ok()) return time.status();
      if (!time->empty()) out[spec.name] = *time;
      return absl::OkStatus();
    }
    case Kind::kMessage: {
      absl::StatusOr<nlohmann::json> message = DecodeMessage(field.bytes, *spec.message);
      if (!message.ok()) return message.status();
      out[spec.name] = *std::move(message);
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> DecodeMessage(std::string_view data, const MessageSpec& spec) {
  nlohmann::json out = nlohmann::json::object();
  Reader reader(data);
  while (!reader.done()) {
    absl::StatusOr<WireField> field = reader.Next();
    if (!field.ok()) return field.status();
    const FieldSpec* known = nullptr;
    for (const FieldSpec& candidate : spec.fields) {
      if (candidate.number == field->number) known = &candidate;
    }
    if (known == nullptr) {
      return absl::UnimplementedError(absl::StrCat("protobuf field ", field->number, " of ",
                                                   spec.name, " is not decoded here"));
    }
    if (absl::Status status = DecodeField(*known, *field, out); !status.ok()) return status;
  }
  return out;
}

const MessageSpec* SpecFor(const std::string& api_version, const std::string& kind) {
  if (api_version == "authentication.k8s.io/v1" && kind == "TokenRequest") return &kTokenRequest;
  if (api_version == "authorization.k8s.io/v1" && kind == "SelfSubjectAccessReview") {
    return &kSelfSubjectAccessReview;
  }
  if (api_version != "v1") return nullptr;
  if (kind == "Namespace") return &kNamespace;
  if (kind == "ConfigMap") return &kConfigMap;
  if (kind == "Secret") return &kSecret;
  if (kind == "ServiceAccount") return &kServiceAccount;
  return nullptr;
}

}  // namespace

absl::StatusOr<nlohmann::json> DecodeProtobufObject(std::string_view body) {
  if (body.substr(0, kMagic.size()) != kMagic) return Malformed("no k8s protobuf magic");
  // runtime.Unknown: 1 typeMeta, 2 raw, 3 contentEncoding, 4 contentType.
  Reader envelope(body.substr(kMagic.size()));
  nlohmann::json type_meta = nlohmann::json::object();
  std::string_view raw;
  while (!envelope.done()) {
    absl::StatusOr<WireField> field = envelope.Next();
    if (!field.ok()) return field.status();
    if (field->number == 1 && field->wire_type == 2) {
      absl::StatusOr<nlohmann::json> decoded = DecodeMessage(field->bytes, kTypeMeta);
      if (!decoded.ok()) return decoded.status();
      type_meta = *std::move(decoded);
    } else if (field->number == 2 && field->wire_type == 2) {
      raw = field->bytes;
    }
  }
  const std::string api_version = type_meta.value("apiVersion", "");
  const std::string kind = type_meta.value("kind", "");
  const MessageSpec* spec = SpecFor(api_version, kind);
  if (spec == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("protobuf bodies of ", api_version, " ", kind, " are not decoded here"));
  }
  absl::StatusOr<nlohmann::json> object = DecodeMessage(raw, *spec);
  if (!object.ok()) return object.status();
  (*object)["apiVersion"] = api_version;
  (*object)["kind"] = kind;
  return object;
}

}  // namespace wavepool::testing::apiserver
