// Parsing the worker's environment and flags (worker.h).
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/replica_device.h"
#include "wavepool/runtime/worker.h"

namespace wavepool::runtime {
namespace {

const char* const kUsage =
    "usage: wavepool-worker --plan FILE [--rank R --world-size N --store tcp://HOST:PORT|"
    "file://PATH] [--steps K] [--checkpoint-dir DIR] [--agent-dir DIR] "
    "[--data synthetic|cifar10:DIR|mnist:DIR|imagefolder:DIR] [--device cpu|cuda[:N]|auto] [--log-every N] "
    "[--threads N] "
    "[--rendezvous-timeout SECONDS] [--agent-timeout SECONDS]\n(each may come from the environment "
    "instead: WAVEPOOL_PLAN, "
    "WAVEPOOL_RANK, WAVEPOOL_WORLD_SIZE, WAVEPOOL_STORE, WAVEPOOL_CHECKPOINT_PATH, "
    "WAVEPOOL_AGENT_DIR, WAVEPOOL_DATA, WAVEPOOL_DEVICE)";

absl::Status Invalid(const std::string& source, const std::string& value,
                     const std::string& expected) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": '", value, "' is not ", expected));
}

absl::Status ParseInt(const std::string& source, const std::string& text, std::int64_t minimum,
                      std::int64_t* out) {
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < minimum) {
    return Invalid(source, text, absl::StrCat("an integer >= ", minimum));
  }
  *out = value;
  return absl::OkStatus();
}

// Seconds in [minimum, 1000000]: past that the millisecond count would overflow long before
// anyone waited so long.
absl::Status ParseSeconds(const std::string& source, const std::string& text, double minimum,
                          std::chrono::milliseconds* out) {
  constexpr double kMaximum = 1e6;
  double seconds = 0;
  if (!absl::SimpleAtod(text, &seconds) || !(seconds >= minimum && seconds <= kMaximum)) {
    return Invalid(source, text,
                   absl::StrFormat("a number of seconds in [%g, %.0f]", minimum, kMaximum));
  }
  *out = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
  return absl::OkStatus();
}

// Applies one setting, named `source` in errors ("--rank" or "WAVEPOOL_RANK").
absl::Status Apply(std::string_view key, const std::string& source, const std::string& value,
                   WorkerOptions* o) {
  std::int64_t number = 0;
  if (key == "plan") {
    o->plan_path = value;
  } else if (key == "rank" || key == "world-size" || key == "threads") {
    const std::int64_t minimum = key == "world-size" ? 1 : 0;
    WAVEPOOL_RETURN_IF_ERROR(ParseInt(source, value, minimum, &number));
    if (number > 1'000'000) return Invalid(source, value, "a plausible count (<= 1000000)");
    // A thread per count: far past any machine's cores, LibTorch would start them all.
    if (key == "threads" && number > 1024) return Invalid(source, value, "a thread count <= 1024");
    (key == "rank"         ? o->rank
     : key == "world-size" ? o->world_size
                           : o->threads) = static_cast<int>(number);
  } else if (key == "steps") {
    WAVEPOOL_RETURN_IF_ERROR(ParseInt(source, value, 1, &number));
    o->steps = number;
  } else if (key == "log-every") {
    return ParseInt(source, value, 0, &o->log_every);
  } else if (key == "store") {
    o->store = value;
  } else if (key == "checkpoint-dir") {
    o->checkpoint_dir = value;
  } else if (key == "agent-dir") {
    o->agent_dir = value;
  } else if (key == "data") {
    o->data = value;
  } else if (key == "device") {
    // Whether the device is there is the worker's to find out; the text is checked here.
    if (absl::Status s = ParseDevice(value).status(); absl::IsInvalidArgument(s)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", s.message()));
    }
    o->device = value;
  } else if (key == "rendezvous-timeout") {
    // LibTorch's TCP store counts its connect timeout in whole seconds: below 1 s it would not
    // wait for the store at all.
    return ParseSeconds(source, value, 1, &o->rendezvous_timeout);
  } else if (key == "agent-timeout") {
    return ParseSeconds(source, value, 0.001, &o->agent_timeout);
  } else if (key == "namespace") {
    o->namespace_name = value;
  } else if (key == "job") {
    o->job = value;
  } else if (key == "pod") {
    o->pod = value;
  } else if (key == "role") {
    std::optional<api::Role> role = api::ParseEnum<api::Role>(value);
    if (!role.has_value()) return Invalid(source, value, "Foreground or Background");
    o->role = *role;
  } else if (key == "gpu-index") {
    WAVEPOOL_RETURN_IF_ERROR(ParseInt(source, value, 0, &number));
    o->gpu_index = static_cast<std::uint32_t>(number);
  } else if (key == "max-foreground-slowdown") {
    double slowdown = 0;
    if (!absl::SimpleAtod(value, &slowdown) || !(slowdown >= 1.0) || !std::isfinite(slowdown)) {
      return Invalid(source, value, "a slowdown >= 1.0");
    }
    o->max_foreground_slowdown = slowdown;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(source, ": unknown flag\n", kUsage));
  }
  return absl::OkStatus();
}

// Environment variable -> the setting it carries, in the order they are applied.
const std::vector<std::pair<std::string_view, std::string_view>>& EnvironmentSettings() {
  static const auto* settings = new std::vector<std::pair<std::string_view, std::string_view>>{
      {"WAVEPOOL_PLAN", "plan"},
      {"WAVEPOOL_RANK", "rank"},
      {"WAVEPOOL_WORLD_SIZE", "world-size"},
      {"WAVEPOOL_STORE", "store"},
      {"WAVEPOOL_CHECKPOINT_PATH", "checkpoint-dir"},
      {"WAVEPOOL_AGENT_DIR", "agent-dir"},
      {"WAVEPOOL_DATA", "data"},
      {"WAVEPOOL_DEVICE", "device"},
      {"WAVEPOOL_NAMESPACE", "namespace"},
      {"WAVEPOOL_JOB", "job"},
      {"HOSTNAME", "pod"},
      {"WAVEPOOL_POD_NAME", "pod"},  // after HOSTNAME: the downward API's name wins
      {"WAVEPOOL_ROLE", "role"},
      {"WAVEPOOL_GPU_INDEX", "gpu-index"},
      {"WAVEPOOL_MAX_FOREGROUND_SLOWDOWN", "max-foreground-slowdown"},
  };
  return *settings;
}

}  // namespace

absl::StatusOr<WorkerOptions> ParseWorkerOptions(const std::vector<std::string>& args,
                                                 const Getenv& getenv) {
  WorkerOptions options;
  for (const auto& [variable, key] : EnvironmentSettings()) {
    std::optional<std::string> value = getenv(variable);  // NOLINT: not ::getenv
    if (!value.has_value() || value->empty()) continue;
    WAVEPOOL_RETURN_IF_ERROR(Apply(key, std::string(variable), *value, &options));
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") return absl::NotFoundError(kUsage);
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'\n", kUsage));
    }
    std::string key(arg.substr(2));
    std::string value;
    if (const std::size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", key, ": needs a value\n", kUsage));
    }
    WAVEPOOL_RETURN_IF_ERROR(Apply(key, absl::StrCat("--", key), value, &options));
  }
  if (options.plan_path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--plan: required (or WAVEPOOL_PLAN)\n", kUsage));
  }
  if (options.rank >= options.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank: ", options.rank, " is not below --world-size ", options.world_size));
  }
  if (options.world_size > 1 && options.store.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--store: required for a world of ",
                                                   options.world_size, " (or WAVEPOOL_STORE)"));
  }
  return options;
}

}  // namespace wavepool::runtime
