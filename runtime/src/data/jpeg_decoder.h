// JPEG decoding for the imagefolder source (imagefolder_source.cpp), with libjpeg-turbo: bytes in
// memory to 8-bit RGB, refusing what a hostile file could use to exhaust the machine.
//
// libjpeg's own error handler calls exit() and its warnings print to stderr; here every error and
// every warning (a truncated file is only a warning to libjpeg, which fills the rest with grey)
// ends the decode and comes back as a Status, and nothing is printed.
//
// Thread safety: DecodeJpeg may be called concurrently from any number of threads (each call has
// its own decompressor and holds no lock).
#ifndef WAVEPOOL_RUNTIME_SRC_DATA_JPEG_DECODER_H_
#define WAVEPOOL_RUNTIME_SRC_DATA_JPEG_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::runtime::data_internal {

// The largest image accepted, checked from the header before anything is decompressed (a small
// file may claim any size: a decompression bomb). 2^28 pixels of RGB is 768 MiB decoded.
constexpr std::int64_t kMaxJpegSide = 16384;
constexpr std::int64_t kMaxJpegPixels = std::int64_t{1} << 28;
// The most scans a progressive JPEG may have: each scan revisits the whole image, so a file of
// many tiny scans costs unbounded time (libjpeg-turbo's advice for untrusted input is 500).
constexpr int kMaxJpegScans = 500;

// A decoded image: rows of width * 3 bytes (red, green, blue), top row first.
struct RgbImage {
  std::int64_t width = 0;          // after DCT scaling
  std::int64_t height = 0;         // after DCT scaling
  std::int64_t source_width = 0;   // as the JPEG's header gives it
  std::int64_t source_height = 0;  // as the JPEG's header gives it
  std::vector<unsigned char> pixels;
};

// Decodes the JPEG in bytes [data, data + size) to RGB (greyscale, YCbCr, CMYK and YCCK files
// convert, CMYK as PIL converts it), with libjpeg's DCT scaling (scale_num / 8, scale_num in 1..8)
// chosen as the smallest that keeps the shorter side >= min_shorter_side, so that a large photo is
// decoded no larger than needed. A message saying what is wrong, without a file name (the caller
// adds it): InvalidArgument for bytes that are not a JPEG, an unsupported colour space or an image
// over the limits above; DataLoss for a corrupt or truncated JPEG, with libjpeg's message.
// REQUIRES: min_shorter_side >= 1.
absl::StatusOr<RgbImage> DecodeJpeg(const unsigned char* data, std::size_t size,
                                    std::int64_t min_shorter_side);

}  // namespace wavepool::runtime::data_internal

#endif  // WAVEPOOL_RUNTIME_SRC_DATA_JPEG_DECODER_H_
