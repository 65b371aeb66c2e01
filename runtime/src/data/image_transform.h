// The standard ImageNet evaluation transform (torchvision's Resize(256), CenterCrop(224),
// ToTensor, Normalize), generalised to any model input: the imagefolder source's images become
// model samples here.
//
// Pure functions of their arguments, safe to call concurrently.
#ifndef WAVEPOOL_RUNTIME_SRC_DATA_IMAGE_TRANSFORM_H_
#define WAVEPOOL_RUNTIME_SRC_DATA_IMAGE_TRANSFORM_H_

#include <array>
#include <cstdint>

#include "jpeg_decoder.h"

namespace wavepool::runtime::data_internal {

// ImageNet's per-channel mean and standard deviation of pixels scaled to [0, 1] (red, green,
// blue), as torchvision's ImageNet models are trained with.
constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

// The shorter side an image is resized to before the centre crop for a model whose input's
// shorter side is `model_shorter_side`: round(model_shorter_side * 256 / 224) (256 for 224, 342
// for Inception-v3's 299, as torchvision's reference evaluation uses).
// REQUIRES: model_shorter_side >= 1.
std::int64_t ResizedShorterSide(std::int64_t model_shorter_side);

// Writes the {3, height, width} sample (channel-major float) of `image`:
//   1. resize so that the shorter side is ResizedShorterSide(min(height, width)) and the longer
//      one keeps the proportion of the JPEG's own size (source_width x source_height, rounded
//      down), with an antialiased bilinear filter (a triangle filter as wide as the shrink
//      factor, so that shrinking averages every source pixel; plain bilinear when enlarging),
//      reading the DCT-scaled pixels `image` holds;
//   2. take the centre height x width crop (where the resized image is smaller than the crop,
//      black pixels pad it, split as torchvision's CenterCrop does);
//   3. scale to [0, 1] and normalise each channel with kImageNetMean and kImageNetStd.
// REQUIRES: image holds width * height * 3 bytes with width, height >= 1; height, width >= 1;
// `sample` holds 3 * height * width floats.
void ResizeCropNormalise(const RgbImage& image, std::int64_t height, std::int64_t width,
                         float* sample);

}  // namespace wavepool::runtime::data_internal

#endif  // WAVEPOOL_RUNTIME_SRC_DATA_IMAGE_TRANSFORM_H_
