// OpenSampleSource: the --data flag's forms, and what every source shares.
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sources.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {
namespace data_internal {

absl::Status ValidateSampleSpec(const SampleSpec& spec) {
  const auto invalid = [&spec](const char* problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("model samples ", spec.ToString(), ": ", problem));
  };
  if (spec.shape.empty()) return invalid("the shape must have at least one dimension");
  for (const std::int64_t dim : spec.shape) {
    if (dim < 1) return invalid("every dimension of the shape must be >= 1");
  }
  if (spec.classes < 1) return invalid("classes must be >= 1");
  if (spec.kind == SampleSpec::Kind::kTokens && spec.vocabulary < 1) {
    return invalid("a token vocabulary must be >= 1");
  }
  return absl::OkStatus();
}

absl::Status CheckSampleIndex(const SampleSource& source, std::int64_t index) {
  if (index >= 0 && index < source.size()) return absl::OkStatus();
  return absl::OutOfRangeError(absl::StrCat(source.Describe(), ": sample index ", index,
                                            " is outside [0, ", source.size(), ")"));
}

}  // namespace data_internal

namespace {

constexpr char kValidForms[] =
    "valid forms: 'synthetic'; 'cifar10:DIR' (DIR holds the CIFAR-10 binary version's "
    "data_batch_1.bin .. data_batch_5.bin); 'mnist:DIR' (DIR holds train-images-idx3-ubyte and "
    "train-labels-idx1-ubyte); 'imagefolder:DIR' (DIR holds one subdirectory of .jpg/.jpeg "
    "images per class)";

// The DIR of "<kind>:DIR", or InvalidArgument when it is empty.
// (Debian's abseil has its own string_view, so the flag travels as a std::string.)
absl::StatusOr<std::string> DirectoryOf(const std::string& flag, const std::string& kind) {
  std::string dir = flag.substr(kind.size() + 1);
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data source '", flag, "': the directory is empty; ", kValidForms));
  }
  return dir;
}

}  // namespace

absl::StatusOr<SampleSourcePtr> OpenSampleSource(std::string_view flag_view, const SampleSpec& spec,
                                                 std::uint64_t seed, std::int64_t synthetic_size) {
  WAVEPOOL_RETURN_IF_ERROR(data_internal::ValidateSampleSpec(spec));
  const std::string flag(flag_view);
  if (flag == "synthetic") return data_internal::OpenSyntheticSource(spec, seed, synthetic_size);
  if (absl::StartsWith(flag, "cifar10:")) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string dir, DirectoryOf(flag, "cifar10"));
    return data_internal::OpenCifar10Source(dir, spec);
  }
  if (absl::StartsWith(flag, "mnist:")) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string dir, DirectoryOf(flag, "mnist"));
    return data_internal::OpenMnistSource(dir, spec);
  }
  if (absl::StartsWith(flag, "imagefolder:")) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string dir, DirectoryOf(flag, "imagefolder"));
    return data_internal::OpenImageFolderSource(dir, spec);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("data source '", flag, "' is not one wavepool reads; ", kValidForms));
}

}  // namespace wavepool::runtime
