// The imagefolder source against JPEG trees written here with libjpeg's compressor: class and
// sample numbering, the values of the ImageNet transform (resize, centre crop, normalisation), the
// limits a hostile file meets, and every way a tree or an image can be wrong.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/sample_source.h"

// clang-format off
#include <jpeglib.h>
// clang-format on

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;
using Bytes = std::vector<unsigned char>;
using Rgb = std::array<unsigned char, 3>;

constexpr std::array<float, 3> kMean = {0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kStd = {0.229f, 0.224f, 0.225f};
// A solid colour survives JPEG's colour conversion and quantisation within a few levels; one
// level is about 0.017 after normalisation.
constexpr float kSolidTolerance = 4.0f / 255.0f / 0.224f;

float Normalised(int channel, float level) {
  return (level / 255.0f - kMean[static_cast<std::size_t>(channel)]) /
         kStd[static_cast<std::size_t>(channel)];
}

struct JpegOptions {
  int quality = 95;
  // JCS_RGB, JCS_GRAYSCALE (red is the level) or JCS_CMYK: the pixel's red, green and blue are
  // written as the cyan, magenta and yellow bytes and the black byte is 255, which under Adobe's
  // inverted convention (libjpeg writes its marker) is the colour itself, without black ink.
  J_COLOR_SPACE colour_space = JCS_RGB;
  bool ycck = false;  // a CMYK image stored as YCCK
  bool progressive = false;
  std::vector<jpeg_scan_info> scans;  // a progressive scan script of its own, when not empty
};

JpegOptions ColourSpace(J_COLOR_SPACE colour_space) {
  JpegOptions options;
  options.colour_space = colour_space;
  return options;
}

JpegOptions BestQuality(bool progressive) {
  JpegOptions options;
  options.quality = 100;
  options.progressive = progressive;
  return options;
}

// A valid progressive scan script of 570 scans for a 3-component JPEG: the DC coefficients and
// then each AC coefficient of each component on its own, all in three successive-approximation
// passes (point transform 2, then refinements to 1 and 0).
std::vector<jpeg_scan_info> ManyScans() {
  std::vector<jpeg_scan_info> scans;
  const auto add = [&scans](int components, int component, int first, int last, int high, int low) {
    jpeg_scan_info scan{};
    scan.comps_in_scan = components;
    for (int c = 0; c < components; ++c) scan.component_index[c] = component + c;
    scan.Ss = first;
    scan.Se = last;
    scan.Ah = high;
    scan.Al = low;
    scans.push_back(scan);
  };
  for (const auto& [high, low] : std::vector<std::pair<int, int>>{{0, 2}, {2, 1}, {1, 0}}) {
    add(3, 0, 0, 0, high, low);
    for (int component = 0; component < 3; ++component) {
      for (int k = 1; k < 64; ++k) add(1, component, k, k, high, low);
    }
  }
  return scans;
}

// A width x height JPEG whose pixel (x, y) is pixel(x, y), encoded with libjpeg.
Bytes EncodeJpeg(int width, int height, const std::function<Rgb(int, int)>& pixel,
                 JpegOptions options = {}) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // libjpeg's length type
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  const int components = options.colour_space == JCS_GRAYSCALE ? 1
                         : options.colour_space == JCS_CMYK    ? 4
                                                               : 3;
  cinfo.input_components = components;
  cinfo.in_color_space = options.colour_space;
  jpeg_set_defaults(&cinfo);
  if (options.ycck) jpeg_set_colorspace(&cinfo, JCS_YCCK);
  jpeg_set_quality(&cinfo, options.quality, TRUE);
  if (options.progressive) jpeg_simple_progression(&cinfo);
  if (!options.scans.empty()) {
    cinfo.scan_info = options.scans.data();
    cinfo.num_scans = static_cast<int>(options.scans.size());
  }
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<unsigned char> row(static_cast<std::size_t>(width * components));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const Rgb p = pixel(x, y);
      for (int c = 0; c < components; ++c) {
        row[static_cast<std::size_t>(x * components + c)] =
            c < 3 ? p[static_cast<std::size_t>(c)] : 255;
      }
    }
    JSAMPROW rows[1] = {row.data()};
    jpeg_write_scanlines(&cinfo, rows, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes bytes(buffer, buffer + size);
  std::free(buffer);
  return bytes;
}

Bytes SolidJpeg(int width, int height, Rgb colour, JpegOptions options = {}) {
  return EncodeJpeg(
      width, height, [colour](int, int) { return colour; }, options);
}

SampleSpec Images(std::int64_t height, std::int64_t width, std::int64_t classes) {
  SampleSpec spec;
  spec.shape = {3, height, width};
  spec.classes = classes;
  return spec;
}

// The offset of the first byte of `marker` (0xFF, marker) in a JPEG.
std::size_t MarkerOffset(const Bytes& jpeg, unsigned char marker) {
  for (std::size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == marker) return i;
  }
  ADD_FAILURE() << "no marker 0xFF 0x" << std::hex << static_cast<int>(marker);
  return 0;
}

class ImageFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, ::wavepool::testing::TempDir::Create("wavepool_imagefolder"));
  }

  std::string Path(const std::string& relative) const { return dir_.File(relative); }
  void MakeClass(const std::string& name) const { std::filesystem::create_directories(Path(name)); }
  void Write(const std::string& relative, const Bytes& bytes) const {
    ASSERT_OK(::wavepool::testing::WriteFile(
        Path(relative),
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  }
  absl::StatusOr<SampleSourcePtr> Open(const SampleSpec& spec) const {
    return OpenSampleSource("imagefolder:" + dir_.path(), spec, 1);
  }
  // The normalised sample `index` of `source`, read with `spec`'s shape.
  static std::vector<float> ReadSample(const SampleSource& source, std::int64_t index,
                                       std::int64_t* label) {
    std::vector<float> sample(static_cast<std::size_t>(source.spec().Elements()));
    EXPECT_OK(source.Read(index, sample.data(), label));
    return sample;
  }

  // One class "a" holding a good image and `name` holding `bytes`, opened for 16x16 samples.
  absl::StatusOr<SampleSourcePtr> OpenWithImage(const std::string& name, const Bytes& bytes) {
    MakeClass("a");
    Write("a/0.jpg", SolidJpeg(16, 16, {10, 20, 30}));  // sample 0; `name` is sample 1
    Write("a/" + name, bytes);
    return Open(Images(16, 16, 1));
  }

  ::wavepool::testing::TempDir dir_;
};

TEST_F(ImageFolder, ClassesAreNumberedInByteOrderAndSamplesClassByClassInByteOrder) {
  // Byte order puts "B" (0x42) before "a" (0x61) and "10" before "2"; the red level tells the
  // images apart.
  for (const char* name : {"b", "B", "a", ".hidden"}) MakeClass(name);
  Write("b/2.JPG", SolidJpeg(8, 8, {200, 0, 0}));
  Write("b/10.jpeg", SolidJpeg(8, 8, {160, 0, 0}));
  Write("b/1.jpg", SolidJpeg(8, 8, {120, 0, 0}));
  Write("B/z.JpEg", SolidJpeg(8, 8, {80, 0, 0}));
  Write("a/only.jpg", SolidJpeg(8, 8, {40, 0, 0}));
  // Not samples: hidden entries, other extensions, a subdirectory, files beside the classes.
  Write("a/.skipped.jpg", SolidJpeg(8, 8, {255, 255, 255}));
  Write("a/notes.txt", {'x'});
  Write("a/photo.png", {'x'});
  std::filesystem::create_directories(Path("a/nested"));
  Write("a/nested/deep.jpg", SolidJpeg(8, 8, {255, 255, 255}));
  Write(".hidden/x.jpg", SolidJpeg(8, 8, {255, 255, 255}));
  Write("README.jpg", SolidJpeg(8, 8, {255, 255, 255}));

  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(8, 8, 3)));
  ASSERT_EQ(source->size(), 5);
  EXPECT_EQ(source->Describe(), "imagefolder " + dir_.path() + " (5 images, 3 classes)");
  EXPECT_EQ(source->spec(), Images(8, 8, 3));
  const std::array<std::int64_t, 5> labels = {0, 1, 2, 2, 2};  // B, a, b, b, b
  const std::array<float, 5> reds = {80, 40, 120, 160, 200};   // z, only, 1, 10, 2
  for (std::int64_t i = 0; i < 5; ++i) {
    std::int64_t label = -1;
    const std::vector<float> sample = ReadSample(*source, i, &label);
    EXPECT_EQ(label, labels[static_cast<std::size_t>(i)]) << "sample " << i;
    EXPECT_NEAR(sample[4 * 8 + 4], Normalised(0, reds[static_cast<std::size_t>(i)]),
                kSolidTolerance)
        << "sample " << i;
  }
  std::vector<float> sample(3 * 8 * 8);
  std::int64_t label = 0;
  EXPECT_THAT(source->Read(5, sample.data(), &label),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("outside [0, 5)")));
}

TEST_F(ImageFolder, SolidColoursAreScaledAndNormalisedWithImageNetConstants) {
  MakeClass("colour");
  MakeClass("grey");
  Write("colour/x.jpg", SolidJpeg(40, 40, {200, 100, 50}));
  // A greyscale JPEG gives the same level in all three channels.
  Write("grey/x.jpg", SolidJpeg(40, 40, {90, 0, 0}, ColourSpace(JCS_GRAYSCALE)));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(32, 32, 2)));
  std::int64_t label = -1;
  const std::vector<float> colour = ReadSample(*source, 0, &label);
  const std::vector<float> grey = ReadSample(*source, 1, &label);
  const std::array<float, 3> levels = {200, 100, 50};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 32 * 32; ++i) {
      const std::size_t at = static_cast<std::size_t>(c * 32 * 32 + i);
      ASSERT_NEAR(colour[at], Normalised(c, levels[static_cast<std::size_t>(c)]), kSolidTolerance)
          << "channel " << c << " pixel " << i;
      ASSERT_NEAR(grey[at], Normalised(c, 90), kSolidTolerance) << "channel " << c << " " << i;
    }
  }
}

TEST_F(ImageFolder, AWideImageIsResizedAndItsCentreCroppedTheRightWayRound) {
  // 64x32 for a 32x32 model: the shorter side goes to round(32 * 256 / 224) = 37, so the image
  // becomes 74x37, and the crop takes its columns 21..52, i.e. source columns 18.2..45.4.
  MakeClass("c");
  // Stripes: x < 16 red, 16 <= x < 48 green, x >= 48 blue: the crop sees green only.
  Write("c/stripes.jpg", EncodeJpeg(64, 32, [](int x, int) -> Rgb {
          if (x < 16) return {255, 0, 0};
          return x < 48 ? Rgb{0, 255, 0} : Rgb{0, 0, 255};
        }));
  // Halves: x < 32 red, the rest blue: the crop's left half is red, its right half blue.
  Write("c/halves.jpg", EncodeJpeg(64, 32, [](int x, int) -> Rgb {
          return x < 32 ? Rgb{255, 0, 0} : Rgb{0, 0, 255};
        }));
  // A tall image, top half white, bottom half black: the crop keeps rows 21..52 of 37x74.
  Write("c/tall.jpg", EncodeJpeg(32, 64, [](int, int y) -> Rgb {
          return y < 32 ? Rgb{255, 255, 255} : Rgb{0, 0, 0};
        }));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(32, 32, 1)));
  const auto at = [](const std::vector<float>& s, int c, int y, int x) {
    return s[static_cast<std::size_t>(c * 32 * 32 + y * 32 + x)];
  };
  constexpr float kTolerance = 10.0f / 255.0f / 0.224f;  // JPEG rings a little at colour edges
  std::int64_t label = -1;

  const std::vector<float> halves = ReadSample(*source, 0, &label);
  const std::vector<float> stripes = ReadSample(*source, 1, &label);
  const std::vector<float> tall = ReadSample(*source, 2, &label);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      ASSERT_NEAR(at(stripes, 0, y, x), Normalised(0, 0), kTolerance) << y << "," << x;
      ASSERT_NEAR(at(stripes, 1, y, x), Normalised(1, 255), kTolerance) << y << "," << x;
      ASSERT_NEAR(at(stripes, 2, y, x), Normalised(2, 0), kTolerance) << y << "," << x;
    }
    // The halves meet at source column 32, crop column 16 (resized 37 of 74); keep clear of it.
    for (int x = 0; x < 12; ++x) {
      ASSERT_NEAR(at(halves, 0, y, x), Normalised(0, 255), kTolerance) << y << "," << x;
      ASSERT_NEAR(at(halves, 2, y, x), Normalised(2, 0), kTolerance) << y << "," << x;
    }
    for (int x = 20; x < 32; ++x) {
      ASSERT_NEAR(at(halves, 0, y, x), Normalised(0, 0), kTolerance) << y << "," << x;
      ASSERT_NEAR(at(halves, 2, y, x), Normalised(2, 255), kTolerance) << y << "," << x;
    }
  }
  for (int x = 0; x < 32; ++x) {
    for (int y = 0; y < 12; ++y) {
      ASSERT_NEAR(at(tall, 1, y, x), Normalised(1, 255), kTolerance) << y << "," << x;
    }
    for (int y = 20; y < 32; ++y) {
      ASSERT_NEAR(at(tall, 1, y, x), Normalised(1, 0), kTolerance) << y << "," << x;
    }
  }
}

TEST_F(ImageFolder, ALargeImageIsShrunkWithItsGradientIntact) {
  // A 256x256 horizontal ramp (red = column) for a 32x32 model: resized to 37x37 (decoded at 2/8
  // scale by libjpeg, then filtered), crop columns 2..33. Output column x samples the ramp around
  // source position (x + 2 + 0.5) * 256 / 37, whose level is that position - 0.5; an averaging
  // filter keeps a ramp's level. A progressive JPEG takes libjpeg's other decoding path.
  MakeClass("ramp");
  const auto ramp = [](int x, int) -> Rgb { return {static_cast<unsigned char>(x), 128, 0}; };
  Write("ramp/baseline.jpg", EncodeJpeg(256, 256, ramp, BestQuality(false)));
  Write("ramp/progressive.jpg", EncodeJpeg(256, 256, ramp, BestQuality(true)));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(32, 32, 1)));
  for (std::int64_t i = 0; i < 2; ++i) {
    std::int64_t label = -1;
    const std::vector<float> sample = ReadSample(*source, i, &label);
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        const float level = (static_cast<float>(x) + 2.5f) * 256.0f / 37.0f - 0.5f;
        ASSERT_NEAR(sample[static_cast<std::size_t>(y * 32 + x)], Normalised(0, level),
                    3.0f / 255.0f / 0.229f)
            << "image " << i << " at " << y << "," << x;
        ASSERT_NEAR(sample[static_cast<std::size_t>(32 * 32 + y * 32 + x)], Normalised(1, 128),
                    kSolidTolerance);
      }
    }
  }
}

TEST_F(ImageFolder, ACropWiderThanTheResizedImageIsPaddedWithBlack) {
  // A square image for a 8x16 (height x width) model: resized to 9x9 (round(8 * 256 / 224)),
  // so the crop's 16 columns hold (16 - 9) // 2 = 3 black columns, 9 of the image and 4 black.
  MakeClass("c");
  Write("c/square.jpg", SolidJpeg(20, 20, {255, 255, 255}));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(8, 16, 1)));
  std::int64_t label = -1;
  const std::vector<float> sample = ReadSample(*source, 0, &label);
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 16; ++x) {
      const float level = x >= 3 && x < 12 ? 255 : 0;
      ASSERT_NEAR(sample[static_cast<std::size_t>(y * 16 + x)], Normalised(0, level),
                  kSolidTolerance)
          << y << "," << x;
    }
  }
}

TEST_F(ImageFolder, ConcurrentReadsGiveTheSequentialResults) {
  for (int c = 0; c < 3; ++c) {
    MakeClass("class" + std::to_string(c));
    for (int i = 0; i < 3; ++i) {
      Write("class" + std::to_string(c) + "/" + std::to_string(i) + ".jpg",
            EncodeJpeg(48 + 8 * i, 40, [c, i](int x, int y) -> Rgb {
              return {static_cast<unsigned char>(x * 5 + c), static_cast<unsigned char>(y * 6 + i),
                      static_cast<unsigned char>(x + y)};
            }));
    }
  }
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(24, 20, 3)));
  ASSERT_EQ(source->size(), 9);
  std::vector<std::vector<float>> sequential(9);
  std::vector<std::int64_t> sequential_labels(9);
  for (std::int64_t s = 0; s < 9; ++s) {
    sequential[static_cast<std::size_t>(s)] =
        ReadSample(*source, s, &sequential_labels[static_cast<std::size_t>(s)]);
  }
  std::vector<std::vector<float>> parallel(9, std::vector<float>(3 * 24 * 20));
  std::vector<std::int64_t> parallel_labels(9, -1);
  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < 9; ++s) {
    threads.emplace_back([&, s] {
      for (int repeat = 0; repeat < 10; ++repeat) {
        EXPECT_OK(
            source->Read(static_cast<std::int64_t>(s), parallel[s].data(), &parallel_labels[s]));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(parallel, sequential);
  EXPECT_EQ(parallel_labels, sequential_labels);
}

TEST_F(ImageFolder, TrainsCnnTinyThroughTheBatchLoader) {
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph graph, planner::BuiltinModel("cnn_tiny"));
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(graph));
  ASSERT_EQ(spec.classes, 10);
  for (int c = 0; c < 10; ++c) {
    MakeClass("n0" + std::to_string(c));
    Write("n0" + std::to_string(c) + "/img.JPEG",
          SolidJpeg(50, 40, {static_cast<unsigned char>(20 * c), 0, 0}));
  }
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(spec));
  const SampleOrder order(5, source->size(), 4);
  ASSERT_OK_AND_ASSIGN(auto loader, BatchLoader::Create(source, order, {{0, 4}}, {}));
  for (std::int64_t step = 0; step < 3; ++step) {
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> batches, loader->Next());
    ASSERT_EQ(batches.size(), 1U);
    const Batch& batch = batches[0];
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<std::int64_t>{4, 3, 32, 32}));
    for (std::int64_t row = 0; row < 4; ++row) {
      const std::int64_t label = batch.labels[row].item<std::int64_t>();
      EXPECT_EQ(label, order.Index(step, row));  // one image per class, in class order
      EXPECT_NEAR(batch.inputs[row][0][16][16].item<float>(),
                  Normalised(0, static_cast<float>(20 * label)), kSolidTolerance);
    }
  }
}

TEST_F(ImageFolder, AMissingOrWrongDirectoryIsNamed) {
  const std::string missing = Path("nowhere");
  EXPECT_THAT(OpenSampleSource("imagefolder:" + missing, Images(8, 8, 1), 1),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing)));
  Write("file", {'x'});
  EXPECT_THAT(
      OpenSampleSource("imagefolder:" + Path("file"), Images(8, 8, 1), 1),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(Path("file") + ": not a directory")));
  EXPECT_THAT(OpenSampleSource("imagefolder:", Images(8, 8, 1), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the directory is empty")));
  EXPECT_THAT(OpenSampleSource("imagenet:/data", Images(8, 8, 1), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'imagefolder:DIR'")));
}

TEST_F(ImageFolder, ATreeWithoutClassesOrWithAnEmptyClassIsRefused) {
  Write("loose.jpg", SolidJpeg(8, 8, {1, 2, 3}));
  MakeClass(".hidden");
  EXPECT_THAT(Open(Images(8, 8, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(dir_.path()), HasSubstr("no class directories"))));
  MakeClass("cat");
  MakeClass("dog");
  Write("cat/1.jpg", SolidJpeg(8, 8, {1, 2, 3}));
  Write("dog/readme.txt", {'x'});
  EXPECT_THAT(Open(Images(8, 8, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("class directory " + Path("dog")), HasSubstr("no images"))));
}

TEST_F(ImageFolder, AModelOfAnotherShapeOrClassCountIsRefusedNamingBoth) {
  MakeClass("a");
  MakeClass("b");
  Write("a/1.jpg", SolidJpeg(8, 8, {1, 2, 3}));
  Write("b/1.jpg", SolidJpeg(8, 8, {1, 2, 3}));
  EXPECT_THAT(Open(Images(8, 8, 10)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("2 classes (its class directories)"),
                             HasSubstr("the model takes features [3,8,8], 10 classes"))));
  SampleSpec grey = Images(8, 8, 2);
  grey.shape = {1, 8, 8};
  EXPECT_THAT(Open(grey), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr("features [3,H,W]"),
                                         HasSubstr("the model takes features [1,8,8]"))));
  SampleSpec flat = Images(8, 8, 2);
  flat.shape = {192};
  EXPECT_THAT(Open(flat), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[192]")));
  EXPECT_THAT(Open(Images(20000, 8, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[3,20000,8]")));
}

TEST_F(ImageFolder, AFifoNamedLikeAnImageIsRefusedNotWaitedOn) {
  MakeClass("a");
  Write("a/good.jpg", SolidJpeg(8, 8, {1, 2, 3}));
  ASSERT_EQ(::mkfifo(Path("a/pipe.jpg").c_str(), 0600), 0);
  std::future<absl::StatusOr<SampleSourcePtr>> opened =
      std::async(std::launch::async, [this] { return Open(Images(8, 8, 1)); });
  const bool returned = opened.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!returned) {  // a reader blocked in open(2) is let go by a writer's open
    const int writer = ::open(Path("a/pipe.jpg").c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  ASSERT_TRUE(returned) << "listing the tree waited on a FIFO";
  EXPECT_THAT(opened.get(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr(Path("a/pipe.jpg") + ": not a regular file")));

  // A FIFO put in an image's place after the tree was listed fails that Read, without waiting.
  std::filesystem::remove(Path("a/pipe.jpg"));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, Open(Images(8, 8, 1)));
  std::filesystem::remove(Path("a/good.jpg"));
  ASSERT_EQ(::mkfifo(Path("a/good.jpg").c_str(), 0600), 0);
  std::future<absl::Status> read = std::async(std::launch::async, [&source] {
    std::vector<float> sample(3 * 8 * 8);
    std::int64_t label = 0;
    return source->Read(0, sample.data(), &label);
  });
  const bool read_returned = read.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!read_returned) {
    const int writer = ::open(Path("a/good.jpg").c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  ASSERT_TRUE(read_returned) << "reading an image waited on a FIFO";
  EXPECT_THAT(read.get(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr(Path("a/good.jpg") + ": not a regular file")));
}

TEST_F(ImageFolder, AnImageThatVanishedSinceOpeningIsNamed) {
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                       OpenWithImage("gone.jpg", SolidJpeg(16, 16, {1, 2, 3})));
  std::filesystem::remove(Path("a/gone.jpg"));
  std::vector<float> sample(3 * 16 * 16);
  std::int64_t label = 0;
  EXPECT_OK(source->Read(0, sample.data(), &label));
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(Path("a/gone.jpg"))));
}

TEST_F(ImageFolder, BytesThatAreNotAJpegAreRefusedNamingTheFile) {
  const Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenWithImage("png.jpg", png));
  std::vector<float> sample(3 * 16 * 16);
  std::int64_t label = 0;
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(Path("a/png.jpg")), HasSubstr("not a JPEG"),
                             HasSubstr("starts with 0x89 0x50"))));
  Write("a/png.jpg", {});
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(Path("a/png.jpg")), HasSubstr("0 bytes"))));
}

TEST_F(ImageFolder, CorruptAndTruncatedJpegsFailTheReadWithoutPrinting) {
  const Bytes good = EncodeJpeg(64, 64, [](int x, int y) -> Rgb {
    return {static_cast<unsigned char>(x * 4), static_cast<unsigned char>(y * 4), 77};
  });
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenWithImage("bad.jpg", good));
  std::vector<float> sample(3 * 16 * 16);
  std::int64_t label = 0;
  ASSERT_OK(source->Read(1, sample.data(), &label));

  // Garbage after the start-of-image marker: libjpeg finds no marker where one must be.
  Bytes corrupt = good;
  for (std::size_t i = 2; i < corrupt.size(); ++i) corrupt[i] = static_cast<unsigned char>(i % 251);
  Write("a/bad.jpg", corrupt);
  ::testing::internal::CaptureStderr();
  const absl::Status corrupt_status = source->Read(1, sample.data(), &label);
  const std::string corrupt_stderr = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(corrupt_status, StatusIs(absl::StatusCode::kDataLoss,
                                       AllOf(HasSubstr(Path("a/bad.jpg")), HasSubstr("libjpeg"))));
  EXPECT_EQ(corrupt_stderr, "");

  // Cut in the middle of the entropy-coded data: libjpeg only warns, and would decode the rest as
  // grey.
  Bytes truncated = good;
  truncated.resize(MarkerOffset(good, 0xDA) + (good.size() - MarkerOffset(good, 0xDA)) / 2);
  Write("a/bad.jpg", truncated);
  ::testing::internal::CaptureStderr();
  const absl::Status truncated_status = source->Read(1, sample.data(), &label);
  const std::string truncated_stderr = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(truncated_status,
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(Path("a/bad.jpg")), HasSubstr("Premature end of JPEG"))));
  EXPECT_EQ(truncated_stderr, "");

  // A header warning that changes no pixel (an unknown JFIF revision) is neither an error nor
  // printed.
  Bytes revision = good;
  revision[MarkerOffset(good, 0xE0) + 9] = 2;  // APP0: length (2), "JFIF\0" (5), major version
  Write("a/bad.jpg", revision);
  ::testing::internal::CaptureStderr();
  const absl::Status revision_status = source->Read(1, sample.data(), &label);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_OK(revision_status);
}

TEST_F(ImageFolder, AHeaderClaimingAHugeImageIsRefusedBeforeDecoding) {
  // A real 16x16 JPEG whose frame header is patched to claim another size. At 60000x60000 the
  // data would run out (DataLoss) long before; InvalidArgument naming the size shows that the
  // header was checked first.
  const Bytes good = SolidJpeg(16, 16, {1, 2, 3});
  const std::size_t sof = MarkerOffset(good, 0xC0);  // FF C0, length (2), precision, height, width
  const auto claim = [&](int width, int height) {
    Bytes patched = good;
    patched[sof + 5] = static_cast<unsigned char>(height >> 8);
    patched[sof + 6] = static_cast<unsigned char>(height);
    patched[sof + 7] = static_cast<unsigned char>(width >> 8);
    patched[sof + 8] = static_cast<unsigned char>(width);
    return patched;
  };
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenWithImage("huge.jpg", claim(60000, 60000)));
  std::vector<float> sample(3 * 16 * 16);
  std::int64_t label = 0;
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(Path("a/huge.jpg")), HasSubstr("60000x60000"),
                             HasSubstr("at most 16384 pixels on a side"))));
  Write("a/huge.jpg", claim(16385, 8));
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("16385x8")));
  Write("a/huge.jpg", claim(16384, 16385));  // each side within the bound, 2^28 + 16384 pixels
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("16384x16385")));
  // Within both bounds, the header passes and the missing data is what fails.
  Write("a/huge.jpg", claim(4096, 4096));
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(Path("a/huge.jpg"))));
}

TEST_F(ImageFolder, AProgressiveJpegOfTooManyScansIsRefused) {
  // Each scan revisits the whole image: many scans cost time out of proportion to the file.
  JpegOptions options;
  options.scans = ManyScans();
  ASSERT_EQ(options.scans.size(), 570U);
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                       OpenWithImage("scans.jpg", SolidJpeg(16, 16, {9, 9, 9}, options)));
  std::vector<float> sample(3 * 16 * 16);
  std::int64_t label = 0;
  EXPECT_THAT(source->Read(1, sample.data(), &label),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(Path("a/scans.jpg")), HasSubstr("more than 500 scans"))));
  // The same image in libjpeg's usual 10 progressive scans reads.
  Write("a/scans.jpg", SolidJpeg(16, 16, {9, 9, 9}, BestQuality(true)));
  EXPECT_OK(source->Read(1, sample.data(), &label));
}

// Print-ready CMYK files (a few dozen of ImageNet's training images are) train as PIL, and so
// torchvision, would see them.
TEST_F(ImageFolder, CmykAndYcckJpegsConvertToRgbAsPilDoes) {
  JpegOptions ycck = ColourSpace(JCS_CMYK);
  ycck.ycck = true;
  for (const JpegOptions& options : {ColourSpace(JCS_CMYK), ycck}) {
    ASSERT_OK_AND_ASSIGN(SampleSourcePtr source,
                         OpenWithImage("print.jpg", SolidJpeg(16, 16, {200, 100, 50}, options)));
    std::vector<float> sample(3 * 16 * 16);
    std::int64_t label = 0;
    ASSERT_OK(source->Read(1, sample.data(), &label));
    const std::array<float, 3> levels = {200, 100, 50};
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(sample[static_cast<std::size_t>(c * 256 + 8 * 16 + 8)],
                  Normalised(c, levels[static_cast<std::size_t>(c)]), kSolidTolerance)
          << "channel " << c << (options.ycck ? " (YCCK)" : " (CMYK)");
    }
  }
}

}  // namespace
}  // namespace wavepool::runtime
