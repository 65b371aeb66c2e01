// Where training samples come from: a dataset read sample by sample (CIFAR-10 binary, MNIST idx,
// a folder of JPEGs per class) or a synthetic source that is a pure function of (seed, index), so
// that any sharding of a batch over ranks sees exactly the samples one process would.
//
// Each rank reads only its own samples (the CPU-centric split, scalednn-data-movement §IV-A):
// nothing is read whole and scattered. batch_loader.h pre-loads them.
#ifndef WAVEPOOL_RUNTIME_SAMPLE_SOURCE_H_
#define WAVEPOOL_RUNTIME_SAMPLE_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/sample_spec.h"

namespace wavepool::runtime {

// Thread safety: Read may be called concurrently from any number of threads. A source is
// immutable after it is opened.
class SampleSource {
 public:
  virtual ~SampleSource() = default;

  // The shape of every sample (equal to the model's, OpenSampleSource checks it).
  virtual const SampleSpec& spec() const = 0;
  // Samples in the dataset, >= 1.
  virtual std::int64_t size() const = 0;
  // Writes sample `index` (in [0, size())) into `input`, spec().Elements() values of float
  // (kFeatures) or std::int64_t (kTokens), and its label in [0, spec().classes). OutOfRange for
  // an index outside the source; a file's errors name the file and the offset (DataLoss for a
  // short read: the file shrank after it was opened).
  virtual absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const = 0;
  // "synthetic (seed 7)", "cifar10 /data/cifar-10-batches-bin (50000 samples)".
  virtual std::string Describe() const = 0;
};

using SampleSourcePtr = std::shared_ptr<const SampleSource>;

// Opens the source a worker's --data flag names, for a model whose samples look like `spec`:
//   synthetic        samples drawn from (seed, index): features ~ N(0, 1) (token ids uniform)
//                    with a label that a fixed random teacher assigns, so that a model can
//                    learn it; `synthetic_size` samples.
//   cifar10:DIR      DIR/data_batch_1.bin .. data_batch_5.bin (the binary version), 3x32x32,
//                    10 classes, pixels scaled to [0, 1] and normalised per channel.
//   mnist:DIR        DIR/train-images-idx3-ubyte and train-labels-idx1-ubyte, 1x28x28 (or 784
//                    features for a flat model input), 10 classes.
//   imagefolder:DIR  DIR/CLASS/IMAGE.jpg (torchvision's ImageFolder layout): one class per
//                    subdirectory, numbered in byte order of name; its .jpg/.jpeg files (any
//                    case) in byte order. For a model of 3xHxW: each image is decoded when read,
//                    its shorter side resized to round(min(H, W) * 256 / 224), the centre HxW
//                    cropped and normalised with ImageNet's mean and std.
// Files are checked when opened: a truncated file, a wrong magic number, counts that disagree or a
// label out of range is InvalidArgument naming the file and the byte offset, as is an imagefolder
// tree without class directories, a class without images or an image that is not a regular file
// (naming the directory or file); a missing or unreadable file gets errno's code (NotFound,
// PermissionDenied) naming it. A dataset whose samples do not fit the model is InvalidArgument
// naming both specs, as is a spec no source can serve (an empty shape, classes < 1). Unknown kinds
// list the valid ones. An imagefolder Read names the image in its errors: NotFound when it has
// vanished, InvalidArgument when it is not a JPEG, has an unknown colour space or its header
// claims more than 16384 pixels on a side or 2^28 in all, DataLoss with libjpeg's message when it
// is corrupt or truncated. docs/runtime.md ("Data") states the normalisation constants, the image
// transform and the synthetic teacher.
absl::StatusOr<SampleSourcePtr> OpenSampleSource(std::string_view flag, const SampleSpec& spec,
                                                 std::uint64_t seed,
                                                 std::int64_t synthetic_size = std::int64_t{1}
                                                                               << 31);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SAMPLE_SOURCE_H_
