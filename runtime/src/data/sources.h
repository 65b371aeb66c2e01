// The sample sources behind OpenSampleSource (sample_source.h), one file each.
#ifndef WAVEPOOL_RUNTIME_SRC_DATA_SOURCES_H_
#define WAVEPOOL_RUNTIME_SRC_DATA_SOURCES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/sample_source.h"
#include "wavepool/runtime/sample_spec.h"

namespace wavepool::runtime::data_internal {

// InvalidArgument unless `spec` describes samples a source can produce: a non-empty shape of
// positive dimensions, classes >= 1, and vocabulary >= 1 for tokens.
absl::Status ValidateSampleSpec(const SampleSpec& spec);

// `size` samples of `spec` drawn from (seed, index) (synthetic_source.cpp).
// REQUIRES: ValidateSampleSpec(spec) is OK.
absl::StatusOr<SampleSourcePtr> OpenSyntheticSource(const SampleSpec& spec, std::uint64_t seed,
                                                    std::int64_t size);

// The CIFAR-10 binary training set in `dir` (cifar10_source.cpp).
absl::StatusOr<SampleSourcePtr> OpenCifar10Source(const std::string& dir, const SampleSpec& spec);

// The MNIST idx training set in `dir` (mnist_source.cpp).
absl::StatusOr<SampleSourcePtr> OpenMnistSource(const std::string& dir, const SampleSpec& spec);

// JPEG images in one directory per class under `dir`, torchvision's ImageFolder layout
// (imagefolder_source.cpp).
absl::StatusOr<SampleSourcePtr> OpenImageFolderSource(const std::string& dir,
                                                      const SampleSpec& spec);

// OutOfRange naming `source` unless index is in [0, size).
absl::Status CheckSampleIndex(const SampleSource& source, std::int64_t index);

}  // namespace wavepool::runtime::data_internal

#endif  // WAVEPOOL_RUNTIME_SRC_DATA_SOURCES_H_
