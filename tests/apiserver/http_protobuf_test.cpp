// Protobuf request bodies as kubectl's generator commands send them, encoded here by hand in the
// field numbers of k8s.io/api/core/v1/generated.proto.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/http_test_client.h"
#include "tests/support/apiserver/request_protobuf.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;

std::string Varint(std::uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

// A length-delimited field (wire type 2).
std::string Bytes(int number, const std::string& bytes) {
  return Varint(static_cast<std::uint64_t>(number) << 3 | 2) + Varint(bytes.size()) + bytes;
}

std::string VarintField(int number, std::uint64_t value) {
  return Varint(static_cast<std::uint64_t>(number) << 3) + Varint(value);
}

std::string MapEntry(int number, const std::string& key, const std::string& value) {
  return Bytes(number, Bytes(1, key) + Bytes(2, value));
}

// ObjectMeta as the generated marshaller writes it: every string, the zero generation and an
// empty creationTimestamp included.
std::string ObjectMeta(const std::string& name, const std::string& labels = "") {
  return Bytes(1, name) + Bytes(2, "") + Bytes(3, "") + Bytes(4, "") + Bytes(5, "") + Bytes(6, "") +
         VarintField(7, 0) + Bytes(8, "") + labels;
}

std::string Envelope(const std::string& kind, const std::string& raw) {
  return std::string("k8s\0", 4) + Bytes(1, Bytes(1, "v1") + Bytes(2, kind)) + Bytes(2, raw) +
         Bytes(3, "") + Bytes(4, "");
}

TEST(HttpProtobuf, DecodesAConfigMapLikeItsJson) {
  const std::string raw = Bytes(1, ObjectMeta("settings", MapEntry(11, "app", "web"))) +
                          MapEntry(2, "key", "value") + MapEntry(3, "blob", "hi");
  ASSERT_OK_AND_ASSIGN(const nlohmann::json object,
                       DecodeProtobufObject(Envelope("ConfigMap", raw)));
  EXPECT_EQ(object, nlohmann::json::parse(R"({
      "apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "settings", "labels": {"app": "web"}},
      "data": {"key": "value"}, "binaryData": {"blob": "aGk="}})"));
}

TEST(HttpProtobuf, DecodesSecretsNamespacesAndServiceAccounts) {
  ASSERT_OK_AND_ASSIGN(
      const nlohmann::json secret,
      DecodeProtobufObject(Envelope(
          "Secret", Bytes(1, ObjectMeta("s")) + MapEntry(2, "k", "v") + Bytes(3, "Opaque"))));
  EXPECT_EQ(secret["data"]["k"], "dg==");  // base64("v")
  EXPECT_EQ(secret["type"], "Opaque");
  ASSERT_OK_AND_ASSIGN(
      const nlohmann::json ns,
      DecodeProtobufObject(Envelope(
          "Namespace", Bytes(1, ObjectMeta("team-a")) + Bytes(2, "") + Bytes(3, Bytes(1, "")))));
  EXPECT_EQ(ns["metadata"]["name"], "team-a");
  EXPECT_EQ(ns["spec"], nlohmann::json::object());
  ASSERT_OK_AND_ASSIGN(const nlohmann::json account,
                       DecodeProtobufObject(Envelope(
                           "ServiceAccount", Bytes(1, ObjectMeta("sa")) + VarintField(4, 1))));
  EXPECT_EQ(account["automountServiceAccountToken"], true);
}

TEST(HttpProtobuf, RefusesWhatItDoesNotDecode) {
  EXPECT_THAT(DecodeProtobufObject(Envelope("Pod", Bytes(1, ObjectMeta("p")))),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("v1 Pod")));
  EXPECT_THAT(DecodeProtobufObject(Envelope("ConfigMap", Bytes(9, "x"))),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("field 9 of ConfigMap")));
  EXPECT_THAT(DecodeProtobufObject("{\"kind\":\"ConfigMap\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("magic")));
  const std::string truncated = Envelope("ConfigMap", Bytes(1, ObjectMeta("c")));
  EXPECT_THAT(DecodeProtobufObject(truncated.substr(0, truncated.size() - 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("past the end")));
}

TEST(HttpProtobuf, CreatesThroughHttpAndRefusesOtherKindsWith415) {
  ASSERT_OK_AND_ASSIGN(auto server, TestApiServer::Start({}));
  HttpTestClient client(server->url());
  const ClientResponse created = client.Request(
      "POST", "/api/v1/namespaces", Envelope("Namespace", Bytes(1, ObjectMeta("team-a"))),
      "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Json()["metadata"]["name"], "team-a");
  const ClientResponse pod = client.Request("POST", "/api/v1/namespaces/default/pods",
                                            Envelope("Pod", Bytes(1, ObjectMeta("p"))),
                                            "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(pod.status, 415);
  EXPECT_EQ(client.Request("POST", "/api/v1/namespaces", "x", "text/plain").status, 415);
}

}  // namespace
}  // namespace wavepool::testing::apiserver
