// Helpers for the metrics tests: promtool run with a bounded wait, a reader of the Prometheus text
// format that finds one sample by name and exact label set, and a reader of the instant vectors
// that Prometheus' query API answers (nlohmann::json).
#ifndef WAVEPOOL_TESTS_AGENT_METRICS_TEST_UTIL_H_
#define WAVEPOOL_TESTS_AGENT_METRICS_TEST_UTIL_H_

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpprest/http_client.h"
#include "nlohmann/json.hpp"
#include "tests/support/files.h"
#include "tests/support/spawn.h"
#include "tests/support/temp_dir.h"

namespace wavepool::agent::metrics_testing {

using Labels = std::map<std::string, std::string>;

// Percent-encodes a query-string value.
inline std::string UrlEncode(const std::string& value) {
  return web::uri::encode_data_string(value);
}

// The first executable called `name` on $PATH.
inline std::optional<std::string> FindExecutable(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or timed out
  std::string output;  // stdout, then stderr
};

// Runs `argv` with `input` on its stdin, waiting at most `timeout`.
inline absl::StatusOr<CommandResult> RunWithInput(const std::vector<std::string>& argv,
                                                  const std::string& input,
                                                  std::chrono::seconds timeout) {
  absl::StatusOr<::wavepool::testing::TempDir> dir =
      ::wavepool::testing::TempDir::Create("wavepool-metrics");
  if (!dir.ok()) return dir.status();
  const std::string input_path = dir->File("stdin");
  if (absl::Status s = ::wavepool::testing::WriteFile(input_path, input); !s.ok()) return s;
  ::wavepool::testing::SpawnOptions options;
  options.in = ::wavepool::testing::ChildStream::File(input_path);
  const ::wavepool::testing::ProcessResult run =
      ::wavepool::testing::RunProcess(argv, options, timeout);
  if (!run.started) return absl::UnavailableError(run.error);
  CommandResult result;
  if (run.exited) result.exit_code = run.exit_status;
  result.output = run.out + run.err;
  return result;
}

// One sample line of the text format: name{labels} value.
struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// Parses the sample lines of a text-format exposition (comments skipped; label values unescaped
// for \" \\ and \n). Lines it cannot parse are skipped: the promtool test checks the syntax.
inline std::vector<Sample> ParseSamples(const std::string& text) {
  std::vector<Sample> samples;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    std::size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) continue;
    sample.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find("=\"", i);
        if (eq == std::string::npos) break;
        std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        sample.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      i = line.find(' ', i);
      if (i == std::string::npos) continue;
    }
    sample.value = std::strtod(line.c_str() + i + 1, nullptr);
    samples.push_back(std::move(sample));
  }
  return samples;
}

// The value of the sample called `name` whose labels are exactly `labels`.
inline std::optional<double> SampleValue(const std::string& text, const std::string& name,
                                         const Labels& labels) {
  for (const Sample& sample : ParseSamples(text)) {
    if (sample.name == name && sample.labels == labels) return sample.value;
  }
  return std::nullopt;
}

// How many samples are called `name` and carry every label of `subset`.
inline int CountSamples(const std::string& text, const std::string& name, const Labels& subset) {
  int count = 0;
  for (const Sample& sample : ParseSamples(text)) {
    if (sample.name != name) continue;
    bool match = true;
    for (const auto& [key, value] : subset) {
      auto found = sample.labels.find(key);
      match = match && found != sample.labels.end() && found->second == value;
    }
    count += match ? 1 : 0;
  }
  return count;
}

// The series of a successful `/api/v1/query` answer whose result is an instant vector
// ({"status":"success","data":{"resultType":"vector","result":[{"metric":{...},
// "value":[<time>,"<value>"]}, ...]}}): name from __name__, the other labels, the value.
// nullopt for an error answer or one that is not an instant vector.
inline std::optional<std::vector<Sample>> ParseInstantVector(const std::string& body) {
  const nlohmann::json answer = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || answer.value("status", "") != "success") return std::nullopt;
  const nlohmann::json& data = answer.value("data", nlohmann::json::object());
  if (data.value("resultType", "") != "vector") return std::nullopt;
  std::vector<Sample> samples;
  try {
    for (const nlohmann::json& series : data.at("result")) {
      Sample sample;
      for (const auto& [key, value] : series.at("metric").items()) {
        if (key == "__name__") {
          sample.name = value.get<std::string>();
        } else {
          sample.labels[key] = value.get<std::string>();
        }
      }
      sample.value = std::stod(series.at("value").at(1).get<std::string>());
      samples.push_back(std::move(sample));
    }
  } catch (const std::exception&) {  // a field missing or of another type
    return std::nullopt;
  }
  return samples;
}

}  // namespace wavepool::agent::metrics_testing

#endif  // WAVEPOOL_TESTS_AGENT_METRICS_TEST_UTIL_H_
