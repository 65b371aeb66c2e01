#include "image_transform.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace wavepool::runtime::data_internal {
namespace {

// The resampling taps of every output position along one axis: output o reads the source
// positions [first[o], first[o] + count[o]) with weights[offset[o] ...]; count 0 is padding.
struct AxisTaps {
  std::vector<std::int64_t> first;
  std::vector<std::int64_t> count;
  std::vector<std::size_t> offset;
  std::vector<float> weights;
};

// Where a crop of `crop` positions starts in a resized axis of `resized` positions, as
// torchvision's CenterCrop places it: round-half-to-even((resized - crop) / 2) inside the image;
// when the crop is larger, (crop - resized) // 2 positions of padding before the image.
std::int64_t CropStart(std::int64_t resized, std::int64_t crop) {
  if (resized < crop) return -((crop - resized) / 2);
  const std::int64_t excess = resized - crop;
  const std::int64_t half = excess / 2;
  if (excess % 2 == 0) return half;
  return half % 2 == 0 ? half : half + 1;  // .5 rounds to the even neighbour, as Python's round
}

// The taps that map `outputs` crop positions, starting at `start` in an axis resized to
// `resized` positions, onto `source` positions: a triangle filter (bilinear), widened by the
// shrink factor when shrinking so that every source position contributes (the antialiased
// bilinear filter of PIL, which torchvision's Resize uses), clipped at the edges and normalised.
AxisTaps PlanAxis(std::int64_t source, std::int64_t resized, std::int64_t start,
                  std::int64_t outputs) {
  AxisTaps taps;
  const double scale = static_cast<double>(source) / static_cast<double>(resized);
  const double support = std::max(1.0, scale);
  for (std::int64_t o = 0; o < outputs; ++o) {
    const std::int64_t r = start + o;
    taps.offset.push_back(taps.weights.size());
    if (r < 0 || r >= resized) {
      taps.first.push_back(0);
      taps.count.push_back(0);
      continue;
    }
    const double centre = (static_cast<double>(r) + 0.5) * scale;
    const auto lo =
        std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(centre - support + 0.5)));
    const auto hi = std::min<std::int64_t>(
        source, static_cast<std::int64_t>(std::floor(centre + support + 0.5)));
    double total = 0;
    for (std::int64_t i = lo; i < hi; ++i) {
      total += std::max(0.0, 1.0 - std::abs(static_cast<double>(i) + 0.5 - centre) / support);
    }
    // The source position holding the centre is within half a position of it: total > 0.
    for (std::int64_t i = lo; i < hi; ++i) {
      const double w =
          std::max(0.0, 1.0 - std::abs(static_cast<double>(i) + 0.5 - centre) / support);
      taps.weights.push_back(static_cast<float>(w / total));
    }
    taps.first.push_back(lo);
    taps.count.push_back(hi - lo);
  }
  return taps;
}

}  // namespace

std::int64_t ResizedShorterSide(std::int64_t model_shorter_side) {
  return (model_shorter_side * 256 + 112) / 224;
}

void ResizeCropNormalise(const RgbImage& image, std::int64_t height, std::int64_t width,
                         float* sample) {
  // The resized size, computed from the JPEG's own size (the decoded one is DCT-rounded).
  const std::int64_t target = ResizedShorterSide(std::min(height, width));
  std::int64_t resized_width = target;
  std::int64_t resized_height = target;
  if (image.source_width <= image.source_height) {
    resized_height = target * image.source_height / image.source_width;
  } else {
    resized_width = target * image.source_width / image.source_height;
  }
  const AxisTaps columns =
      PlanAxis(image.width, resized_width, CropStart(resized_width, width), width);
  const AxisTaps rows =
      PlanAxis(image.height, resized_height, CropStart(resized_height, height), height);

  // The horizontal pass over the source rows the crop reads: rows [row_lo, row_hi) of width
  // columns of 3 values.
  std::int64_t row_lo = image.height;
  std::int64_t row_hi = 0;
  for (std::int64_t y = 0; y < height; ++y) {
    if (rows.count[y] == 0) continue;
    row_lo = std::min(row_lo, rows.first[y]);
    row_hi = std::max(row_hi, rows.first[y] + rows.count[y]);
  }
  std::vector<float> across(
      static_cast<std::size_t>(std::max<std::int64_t>(0, row_hi - row_lo) * width * 3));
  for (std::int64_t r = row_lo; r < row_hi; ++r) {
    const unsigned char* in = image.pixels.data() + static_cast<std::size_t>(r * image.width * 3);
    float* out = across.data() + static_cast<std::size_t>((r - row_lo) * width * 3);
    for (std::int64_t x = 0; x < width; ++x) {
      const float* w = columns.weights.data() + columns.offset[x];
      const unsigned char* px = in + columns.first[x] * 3;
      float sum[3] = {0, 0, 0};
      for (std::int64_t k = 0; k < columns.count[x]; ++k) {
        for (int c = 0; c < 3; ++c) sum[c] += w[k] * static_cast<float>(px[k * 3 + c]);
      }
      for (int c = 0; c < 3; ++c) out[x * 3 + c] = sum[c];
    }
  }

  // The vertical pass, then [0, 255] to [0, 1] and the normalisation; padding stays 0 (black).
  const std::int64_t plane = height * width;
  for (std::int64_t y = 0; y < height; ++y) {
    const float* w = rows.weights.data() + rows.offset[y];
    for (std::int64_t x = 0; x < width; ++x) {
      float sum[3] = {0, 0, 0};
      for (std::int64_t k = 0; k < rows.count[y]; ++k) {
        const float* px = across.data() +
                          static_cast<std::size_t>(((rows.first[y] + k - row_lo) * width + x) * 3);
        for (int c = 0; c < 3; ++c) sum[c] += w[k] * px[c];
      }
      for (int c = 0; c < 3; ++c) {
        sample[c * plane + y * width + x] =
            (sum[c] / 255.0f - kImageNetMean[static_cast<std::size_t>(c)]) /
            kImageNetStd[static_cast<std::size_t>(c)];
      }
    }
  }
}

}  // namespace wavepool::runtime::data_internal
