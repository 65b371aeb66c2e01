#include "wavepool/cli/profile_command.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "binary_file.h"
#include "model_loading.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/plural.h"
#include "wavepool/base/scoped_fd.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/profile.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/layer_profiler.h"

namespace wavepool::cli {
namespace {

// A flag's value is wrong: exit status 2, as CLI11's own parse errors.
constexpr int kBadFlag = 2;
constexpr int kFailed = 1;

absl::StatusOr<std::vector<std::int64_t>> ParseBatchSizes(const std::string& text) {
  if (text.empty()) {
    return absl::InvalidArgumentError("--batch-sizes: give at least one batch size, e.g. 1,2,4,8");
  }
  std::vector<std::int64_t> sizes;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::int64_t size = 0;
    if (!absl::SimpleAtoi(part, &size) || size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--batch-sizes: \"", part, "\" in \"", text, "\" is not a batch size >= 1"));
    }
    if (!sizes.empty() && size <= sizes.back()) {
      return absl::InvalidArgumentError(absl::StrCat("--batch-sizes: must be strictly ascending, ",
                                                     "got ", sizes.back(), " then ", size));
    }
    sizes.push_back(size);
  }
  return sizes;
}

absl::StatusOr<runtime::ProfileOptions> MakeOptions(const ProfileFlags& flags) {
  runtime::ProfileOptions options;
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes, ParseBatchSizes(flags.batch_sizes));
  options.batch_sizes = std::move(sizes);
  options.warmup = flags.warmup;
  options.repeats = flags.repeats;
  options.threads = flags.threads;
  options.device = flags.device;
  if (absl::Status status = runtime::ValidateProfileOptions(options); !status.ok()) {
    // "warmup: must be >= 0" -> "--warmup: must be >= 0"
    return absl::InvalidArgumentError(absl::StrCat("--", status.message()));
  }
  return options;
}

// The model, with flag errors as InvalidArgument naming the flag and a layer table that does not
// parse as FailedPrecondition (the file is readable, its content is wrong).
absl::StatusOr<planner::ModelGraph> LoadProfiledModel(const ProfileFlags& flags) {
  if (flags.model.empty() == flags.layer_table.empty()) {
    return absl::InvalidArgumentError("give exactly one of --model and --layer-table");
  }
  if (!flags.model.empty()) {
    absl::StatusOr<planner::ModelGraph> model = planner::BuiltinModel(flags.model);
    if (!model.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--model: ", model.status().message()));
    }
    return model;
  }
  if (absl::StatusOr<std::string> text = ReadTextFile(flags.layer_table); !text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--layer-table: ", text.status().message()));
  }
  PlanFlags plan;
  plan.layer_table = flags.layer_table;
  absl::StatusOr<planner::ModelGraph> model = LoadModel(plan);
  if (!model.ok()) return absl::FailedPreconditionError(model.status().message());
  return model;
}

// Opens --out for appending (creating it, truncating nothing) to learn early that it can be
// written. Returns whether the file existed before. Non-blocking, so that a FIFO is refused
// instead of holding the open until a reader comes; a FIFO or device is no place for a profile
// that replaces the file whole.
absl::StatusOr<bool> CheckWritable(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("--out: give the profile CSV to write");
  std::error_code error;
  const bool existed = std::filesystem::exists(path, error);
  const std::string what = absl::StrCat("--out: cannot write ", path);
  ScopedFd probe(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644));
  if (!probe.valid()) {
    const int open_error = errno;
    return ErrnoError(absl::StatusCode::kInvalidArgument, open_error, what);
  }
  struct stat info {};
  if (::fstat(probe.get(), &info) != 0) {
    const int stat_error = errno;
    return ErrnoError(absl::StatusCode::kInvalidArgument, stat_error, what);
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a regular file"));
  }
  return existed;
}

// Replaces --out whole, or not at all: a failed write (a full disk) keeps an earlier profile
// there instead of leaving it cut short.
absl::Status WriteProfile(const std::string& path, const std::string& text) {
  const absl::Status written = WriteFileAtomically(
      path, absl::MakeConstSpan(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  if (written.ok()) return written;
  return absl::Status(written.code(), absl::StrCat("--out: ", written.message()));
}

std::vector<std::string> UnprofiledLayers(const planner::ModelGraph& model) {
  std::vector<std::string> names;
  for (const planner::Layer& layer : model.layers()) {
    if (!planner::SignatureOf(layer)) names.push_back(layer.name);
  }
  return names;
}

// Prints one line per measured batch: the model's forward and backward time summed over layers.
runtime::ProfileProgress PrintProgress(std::ostream& out) {
  return [&out](std::int64_t batch, const std::vector<runtime::MeasuredLayer>& measured) {
    planner::Seconds forward{0}, backward{0};
    for (const runtime::MeasuredLayer& layer : measured) {
      forward += layer.by_batch.at(batch).forward;
      backward += layer.by_batch.at(batch).backward;
    }
    out << absl::StrFormat("batch %d: forward %.3f ms, backward %.3f ms (sum over %d layers)\n",
                           batch, planner::ToMillis(forward), planner::ToMillis(backward),
                           measured.size())
        << std::flush;
  };
}

}  // namespace

int RunProfile(const ProfileFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<planner::ModelGraph> model = LoadProfiledModel(flags);
  absl::StatusOr<runtime::ProfileOptions> options = MakeOptions(flags);
  for (const absl::Status& status : {model.status(), options.status()}) {
    if (!status.ok()) {
      err << "wavepool profile: " << status.message() << "\n";
      return status.code() == absl::StatusCode::kInvalidArgument ? kBadFlag : kFailed;
    }
  }
  absl::StatusOr<bool> existed = CheckWritable(flags.out);
  if (!existed.ok()) {
    err << "wavepool profile: " << existed.status().message() << "\n";
    return kBadFlag;
  }
  const int rows = runtime::ProfiledLayerCount(*model);
  out << "profiling " << model->name() << ": " << model->size() << " layers (" << rows
      << " with a profile row) at batch sizes " << absl::StrJoin(options->batch_sizes, ",") << "; "
      << options->warmup << " warm-up and " << options->repeats << " timed runs each, "
      << (options->device == "cpu" ? "CPU" : options->device + ", as CUDA graphs") << "\n";
  absl::StatusOr<std::vector<runtime::MeasuredLayer>> measured =
      runtime::ProfileLayers(*model, *options, PrintProgress(out));
  absl::Status written = measured.ok()
                             ? WriteProfile(flags.out, runtime::FormatProfileCsv(*model, *measured))
                             : measured.status();
  if (!written.ok()) {
    if (!*existed) std::filesystem::remove(flags.out);
    err << "wavepool profile: " << written.message() << "\n";
    return kFailed;
  }
  const auto batches = static_cast<std::int64_t>(options->batch_sizes.size());
  out << "wrote " << flags.out << ": " << Plural(rows * batches, "row") << " ("
      << Plural(rows, "layer") << " x " << Plural(batches, "batch size") << ")\n";
  if (const std::vector<std::string> left = UnprofiledLayers(*model); !left.empty()) {
    out << "not in the profile (no profile signature; `wavepool plan` costs them analytically): "
        << absl::StrJoin(left, ", ") << "\n";
  }
  return 0;
}

CLI::App* AddProfileCommand(CLI::App* app, ProfileFlags* flags) {
  CLI::App* profile = app->add_subcommand(
      "profile", "Measure each layer's forward and backward time and write a profile CSV");
  profile->add_option("--model", flags->model, "Built-in model (vgg16, resnet50, ...)");
  profile->add_option("--layer-table", flags->layer_table, "Model described layer by layer (CSV)");
  profile->add_option("--batch-sizes", flags->batch_sizes, "Per-GPU batch sizes, e.g. 1,2,4,8")
      ->required();
  profile->add_option("--out", flags->out, "Profile CSV to write (for `wavepool plan --profile`)")
      ->required();
  profile->add_option("--warmup", flags->warmup, "Untimed runs per layer and batch")
      ->capture_default_str();
  profile->add_option("--repeats", flags->repeats, "Timed runs per layer and batch (the median)")
      ->capture_default_str();
  profile->add_option("--threads", flags->threads, "LibTorch threads (0: its default)")
      ->capture_default_str();
  profile
      ->add_option("--device", flags->device,
                   "Where to time: cpu, or cuda[:N] (each layer's passes as CUDA graphs)")
      ->capture_default_str();
  return profile;
}

}  // namespace wavepool::cli
