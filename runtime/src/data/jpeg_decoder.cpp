#include "jpeg_decoder.h"

// jpeglib.h uses size_t and FILE without including their headers.
#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

namespace wavepool::runtime::data_internal {
namespace {

// libjpeg's error manager, extended with where to return to and what went wrong. libjpeg sees only
// the first member; the callbacks below cast back (the struct is standard-layout).
struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool too_many_scans;
};

// Replaces libjpeg's error_exit, which would call exit(): records the message and returns to the
// Guarded call that entered libjpeg.
[[noreturn]] void ExitToGuard(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Replaces libjpeg's emit_message, which prints warnings to stderr. A warning (level -1) is
// corrupt data libjpeg would paper over (a truncated file is decoded with its missing rows grey),
// so it ends the decode; a header's unknown JFIF revision changes no pixel and is ignored, as are
// trace messages (level >= 0).
void WarningIsAnError(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code != JWRN_JFIF_MAJOR &&
      cinfo->err->msg_code != JWRN_BOGUS_ICC) {
    ExitToGuard(cinfo);
  }
}

void PrintNothing(j_common_ptr /*cinfo*/) {}

// A progress monitor that stops a progressive JPEG after kMaxJpegScans scans.
void LimitScans(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const int scan = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
  if (scan <= kMaxJpegScans) return;
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  errors->too_many_scans = true;
  std::snprintf(errors->message, sizeof(errors->message),
                "the progressive JPEG has more than %d scans", kMaxJpegScans);
  std::longjmp(errors->jump, 1);
}

// Calls `step`, which calls into libjpeg, and returns false when libjpeg reported an error during
// it (through ExitToGuard or LimitScans). longjmp skips C++ destructors, so neither this function
// nor `step` may hold an object that has one; libjpeg's own frames are C.
template <typename Step>
bool Guarded(JpegErrors& errors, Step&& step) {
  if (setjmp(errors.jump) != 0) return false;
  step();
  return true;
}

absl::Status LibjpegError(const JpegErrors& errors) {
  if (errors.too_many_scans) return absl::InvalidArgumentError(errors.message);
  const int code = errors.manager.msg_code;
  if (code == JERR_NO_SOI || code == JERR_INPUT_EMPTY) {
    return absl::InvalidArgumentError(absl::StrCat("not a JPEG file: libjpeg: ", errors.message));
  }
  return absl::DataLossError(absl::StrCat("corrupt or truncated JPEG: libjpeg: ", errors.message));
}

// Destroys the decompressor on every path out of DecodeJpeg, after an error too (libjpeg allows
// jpeg_destroy in any state, and on a zeroed struct that was never created).
class DecompressorCleanup {
 public:
  explicit DecompressorCleanup(jpeg_decompress_struct* cinfo) : cinfo_(cinfo) {}
  ~DecompressorCleanup() { jpeg_destroy_decompress(cinfo_); }
  DecompressorCleanup(const DecompressorCleanup&) = delete;
  DecompressorCleanup& operator=(const DecompressorCleanup&) = delete;

 private:
  jpeg_decompress_struct* cinfo_;
};

// What libjpeg decodes the file to: RGB for greyscale, YCbCr and RGB files, CMYK for CMYK and
// YCCK ones (converted to RGB below); InvalidArgument for any other colour space.
absl::StatusOr<J_COLOR_SPACE> OutputColourSpace(const jpeg_decompress_struct& cinfo) {
  switch (cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
      return JCS_RGB;
    case JCS_CMYK:
    case JCS_YCCK:
      return JCS_CMYK;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a JPEG of an unknown colour space with ", cinfo.num_components,
          " components is not supported (only greyscale, YCbCr, RGB, CMYK and YCCK JPEGs are)"));
  }
}

// A row of CMYK pixels to RGB in place (the row holds width * 4 bytes; the first width * 3 are
// written), as PIL converts them, so that a model sees what torchvision would give it:
// red = 255 - cyan - black, clamped. Adobe's CMYK JPEGs (the usual ones; libjpeg writes the
// marker too) store the ink inverted.
void CmykRowToRgb(unsigned char* row, std::int64_t width, bool inverted) {
  for (std::int64_t x = 0; x < width; ++x) {
    const unsigned char* cmyk = row + 4 * x;
    const int black = inverted ? 255 - cmyk[3] : cmyk[3];
    unsigned char rgb[3];
    for (int c = 0; c < 3; ++c) {
      const int ink = inverted ? 255 - cmyk[c] : cmyk[c];
      rgb[c] = static_cast<unsigned char>(std::max(0, 255 - ink - black));
    }
    std::memcpy(row + 3 * x, rgb, 3);
  }
}

absl::Status CheckSize(const jpeg_decompress_struct& cinfo) {
  const std::int64_t width = cinfo.image_width;
  const std::int64_t height = cinfo.image_height;
  if (width > kMaxJpegSide || height > kMaxJpegSide || width * height > kMaxJpegPixels) {
    return absl::InvalidArgumentError(absl::StrCat("the JPEG's header gives an image of ", width,
                                                   "x", height, " pixels; images may have at most ",
                                                   kMaxJpegSide, " pixels on a side and ",
                                                   kMaxJpegPixels, " pixels in all"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RgbImage> DecodeJpeg(const unsigned char* data, std::size_t size,
                                    std::int64_t min_shorter_side) {
  JpegErrors errors{};
  jpeg_decompress_struct cinfo{};
  jpeg_progress_mgr progress{};
  DecompressorCleanup cleanup(&cinfo);
  cinfo.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = ExitToGuard;
  errors.manager.emit_message = WarningIsAnError;
  errors.manager.output_message = PrintNothing;
  if (!Guarded(errors, [&] { jpeg_create_decompress(&cinfo); })) return LibjpegError(errors);
  progress.progress_monitor = LimitScans;
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));  // libjpeg's length type
  if (!Guarded(errors, [&] { jpeg_read_header(&cinfo, TRUE); })) return LibjpegError(errors);
  if (absl::Status size_ok = CheckSize(cinfo); !size_ok.ok()) return size_ok;
  const absl::StatusOr<J_COLOR_SPACE> colour_space = OutputColourSpace(cinfo);
  if (!colour_space.ok()) return colour_space.status();

  cinfo.out_color_space = *colour_space;
  cinfo.scale_denom = 8;
  for (unsigned int num = 1; num <= 8; ++num) {
    cinfo.scale_num = num;
    if (!Guarded(errors, [&] { jpeg_calc_output_dimensions(&cinfo); })) {
      return LibjpegError(errors);
    }
    if (std::min(cinfo.output_width, cinfo.output_height) >= min_shorter_side) break;
  }
  if (!Guarded(errors, [&] { jpeg_start_decompress(&cinfo); })) return LibjpegError(errors);

  const int components = *colour_space == JCS_CMYK ? 4 : 3;
  if (cinfo.output_components != components) {
    return absl::InternalError(absl::StrCat("libjpeg decodes to ", cinfo.output_components,
                                            " components per pixel, not ", components));
  }

  RgbImage image;
  image.width = cinfo.output_width;
  image.height = cinfo.output_height;
  image.source_width = cinfo.image_width;
  image.source_height = cinfo.image_height;
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  // A CMYK row is decoded a component wider and converted in place: the last row needs the room.
  image.pixels.resize(stride * static_cast<std::size_t>(image.height) +
                      (components == 4 ? static_cast<std::size_t>(image.width) : 0));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + stride * cinfo.output_scanline;
    JDIMENSION rows = 0;
    if (!Guarded(errors, [&] { rows = jpeg_read_scanlines(&cinfo, &row, 1); })) {
      return LibjpegError(errors);
    }
    // The memory source never suspends; no progress would otherwise loop forever.
    if (rows == 0) return absl::DataLossError("libjpeg returned no scanline: corrupt JPEG");
    if (components == 4) CmykRowToRgb(row, image.width, cinfo.saw_Adobe_marker != 0);
  }
  image.pixels.resize(stride * static_cast<std::size_t>(image.height));
  if (!Guarded(errors, [&] { jpeg_finish_decompress(&cinfo); })) return LibjpegError(errors);
  return image;
}

}  // namespace wavepool::runtime::data_internal
