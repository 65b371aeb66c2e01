// Custom objects against their CRD's schema through HTTP, as kube-apiserver checks them: the whole
// object on create and update, and on a status update the object with its new status, so that
// constraints two and more levels deep (inside list items too) answer 422 with each broken
// field's path, whatever verb or patch type wrote it, and the stored object stays as it was.
#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/http_test_client.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kGauges[] = "/apis/example.com/v1/namespaces/default/gauges";
const std::string kGauge = std::string(kGauges) + "/g";
const std::string kGaugeStatus = kGauge + "/status";

json Gauge() {
  return json::parse(R"({
    "apiVersion": "example.com/v1", "kind": "Gauge", "metadata": {"name": "g"},
    "spec": {"limits": {"name": "ok", "memory": {"bytes": 1024, "unit": "KiB"}},
             "stages": [{"gpus": 1}, {"gpus": 2}]}})");
}

json GaugeStatus() {
  return json::parse(R"({"observedAt": "2026-05-01T10:00:00Z",
                         "devices": [{"index": 0, "wave": {"headroomBytes": 20}},
                                     {"index": 1, "wave": {"headroomBytes": 30}}]})");
}

// {field, message} of each cause of a 422 body.
std::vector<std::pair<std::string, std::string>> Causes(const ClientResponse& response) {
  std::vector<std::pair<std::string, std::string>> causes;
  const json body = response.Json();
  if (!body.is_object() || !body.contains("details")) return causes;
  for (const json& cause : body["details"].value("causes", json::array())) {
    causes.emplace_back(cause.value("field", ""), cause.value("message", ""));
  }
  return causes;
}

class HttpSchema : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    client_ = std::make_unique<HttpTestClient>(server_->url());
    ASSERT_OK_AND_ASSIGN(
        const std::string crd,
        ReadFile(std::string(WAVEPOOL_SOURCE_DIR) + "/tests/apiserver/testdata/gauge-crd.yaml"));
    const ClientResponse made = client_->Request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, "application/yaml");
    ASSERT_EQ(made.status, 201) << made.body;
  }

  // Creates the valid gauge with its valid status; returns the stored object.
  json CreateGauge() {
    const ClientResponse created = client_->Post(kGauges, Gauge());
    EXPECT_EQ(created.status, 201) << created.body;
    const ClientResponse status =
        client_->Patch(kGaugeStatus, "application/merge-patch+json", {{"status", GaugeStatus()}});
    EXPECT_EQ(status.status, 200) << status.body;
    return status.Json();
  }

  // Expects a 422 Invalid naming `field` with `message`.
  static void ExpectInvalid(const ClientResponse& response, const std::string& field,
                            const std::string& message) {
    EXPECT_EQ(response.status, 422) << response.body;
    EXPECT_EQ(response.Json().value("reason", ""), "Invalid") << response.body;
    EXPECT_THAT(response.Json().value("message", ""),
                HasSubstr("Gauge.example.com \"g\" is invalid"));
    EXPECT_THAT(Causes(response), Contains(std::pair(field, message))) << response.body;
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(HttpSchema, AStatusUpdateWithANegativeNestedFieldIsRefusedNamingTheField) {
  const json stored = CreateGauge();
  const std::string field = "status.devices[1].wave.headroomBytes";
  const std::string message =
      "Invalid value: -1: " + field + " in body should be greater than or equal to 0";
  json status = GaugeStatus();
  status["devices"][1]["wave"]["headroomBytes"] = -1;

  json replaced = stored;
  replaced["status"] = status;
  ExpectInvalid(client_->Put(kGaugeStatus, replaced), field, message);
  ExpectInvalid(client_->Patch(kGaugeStatus, "application/merge-patch+json", {{"status", status}}),
                field, message);
  ExpectInvalid(client_->Patch(kGaugeStatus, "application/json-patch+json",
                               json::array({{{"op", "replace"},
                                             {"path", "/status/devices/1/wave/headroomBytes"},
                                             {"value", -1}}})),
                field, message);
  ExpectInvalid(client_->Patch(kGaugeStatus + "?dryRun=All", "application/merge-patch+json",
                               {{"status", status}}),
                field, message);
  // Nothing was written.
  EXPECT_EQ(client_->Get(kGauge).Json(), stored);
}

TEST_F(HttpSchema, CreateAndUpdateCheckSpecFieldsTwoAndMoreLevelsDeep) {
  json bad = Gauge();
  bad["spec"]["limits"]["memory"]["bytes"] = -5;
  bad["spec"]["limits"]["memory"]["unit"] = "GiB";
  bad["spec"]["limits"]["name"] = "Not-A-Name";
  bad["spec"]["stages"][1].erase("gpus");
  const ClientResponse refused = client_->Post(kGauges, bad);
  ExpectInvalid(refused, "spec.limits.memory.bytes",
                "Invalid value: -5: spec.limits.memory.bytes in body should be greater than or "
                "equal to 0");
  ExpectInvalid(refused, "spec.limits.memory.unit",
                "Unsupported value: \"GiB\": supported values: \"B\", \"KiB\", \"MiB\"");
  ExpectInvalid(refused, "spec.limits.name", "Too long: may not be more than 8 bytes");
  ExpectInvalid(refused, "spec.limits.name",
                "Invalid value: \"Not-A-Name\": spec.limits.name in body should match "
                "'^[a-z]+$'");
  ExpectInvalid(refused, "spec.stages[1].gpus", "Required value");
  EXPECT_EQ(client_->Get(kGauge).status, 404);

  const json stored = CreateGauge();
  json changed = stored;
  changed["spec"]["limits"]["memory"]["bytes"] = -1;
  const std::string message =
      "Invalid value: -1: spec.limits.memory.bytes in body should be greater than or equal to 0";
  ExpectInvalid(client_->Put(kGauge, changed), "spec.limits.memory.bytes", message);
  ExpectInvalid(client_->Patch(kGauge, "application/merge-patch+json",
                               {{"spec", {{"limits", {{"memory", {{"bytes", -1}}}}}}}}),
                "spec.limits.memory.bytes", message);
  ExpectInvalid(client_->Patch(kGauge, "application/merge-patch+json",
                               {{"spec", {{"stages", {{{"gpus", 0}}}}}}}),
                "spec.stages[0].gpus",
                "Invalid value: 0: spec.stages[0].gpus in body should be greater than or equal "
                "to 1");
  EXPECT_EQ(client_->Get(kGauge).Json(), stored);
}

// The server decodes an integer past int64 as a float64, which fails format int64; it would
// otherwise come back to an int64 reader wrapped around to a negative number.
TEST_F(HttpSchema, AnInt64FieldRefusesIntegersPastInt64) {
  const json stored = CreateGauge();
  const std::string field = "status.devices[0].wave.headroomBytes";
  const std::string message =
      "Invalid value: \"\": Checked value must be of type integer with format int64 in " + field;
  for (const std::uint64_t past :
       {std::uint64_t{9223372036854775808ULL}, std::uint64_t{18446744073709551615ULL}}) {
    json status = GaugeStatus();
    status["devices"][0]["wave"]["headroomBytes"] = past;
    ExpectInvalid(
        client_->Patch(kGaugeStatus, "application/merge-patch+json", {{"status", status}}), field,
        message);
  }
  EXPECT_EQ(client_->Get(kGauge).Json(), stored);
  json status = GaugeStatus();
  status["devices"][0]["wave"]["headroomBytes"] = std::int64_t{9223372036854775807LL};
  const ClientResponse largest =
      client_->Patch(kGaugeStatus, "application/merge-patch+json", {{"status", status}});
  ASSERT_EQ(largest.status, 200) << largest.body;
  EXPECT_EQ(largest.Json()["status"]["devices"][0]["wave"]["headroomBytes"],
            std::int64_t{9223372036854775807LL});
}

TEST_F(HttpSchema, ADateTimeFieldTakesOnlyRfc3339Times) {
  CreateGauge();
  for (const char* bad : {"yesterday", "2026-05-01", "2026-05-01 10:00:00Z", "2026-02-29T10:00:00Z",
                          "2026-05-01T24:00:00Z", "2026-05-01T10:00:00"}) {
    json status = GaugeStatus();
    status["observedAt"] = bad;
    const std::string quoted = json(bad).dump();
    ExpectInvalid(
        client_->Patch(kGaugeStatus, "application/merge-patch+json", {{"status", status}}),
        "status.observedAt",
        "Invalid value: " + quoted +
            ": status.observedAt in body must be of type date-time: " + quoted);
  }
  for (const char* good : {"2028-02-29T10:00:00Z", "2026-05-01t10:00:00.123456z",
                           "2026-05-01T23:59:59+02:00", "2026-05-01T00:00:00-11:30"}) {
    json status = GaugeStatus();
    status["observedAt"] = good;
    const ClientResponse written =
        client_->Patch(kGaugeStatus, "application/merge-patch+json", {{"status", status}});
    EXPECT_EQ(written.status, 200) << good << ": " << written.body;
  }
}

}  // namespace
}  // namespace wavepool::testing::apiserver
