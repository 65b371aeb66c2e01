// JPEG images in one directory per class, the layout torchvision's ImageFolder reads (an
// ImageNet-style tree: DIR/n01440764/n01440764_10026.JPEG, ...):
//   - every subdirectory of DIR (or symbolic link to one) whose name does not start with '.' is
//     a class; classes are numbered in byte order of their names;
//   - the samples of a class are the entries of its directory (not its subdirectories) whose
//     names end in .jpg or .jpeg in any case and do not start with '.'; other files are not
//     samples. Samples are numbered class by class, each class's files in byte order of name.
// The tree is listed once, at open; each Read opens, reads and decodes one file
// (jpeg_decoder.h) and transforms it to the model's input (image_transform.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dataset_file.h"
#include "image_transform.h"
#include "jpeg_decoder.h"
#include "sources.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime::data_internal {
namespace {

// The most images one tree may hold, so that the listing's memory (each image's name and 8
// bytes) is bounded.
constexpr std::int64_t kMaxImages = std::int64_t{1} << 31;
// The largest JPEG file read, so that one Read's memory is bounded; a photograph is a few MiB.
constexpr std::int64_t kMaxFileBytes = std::int64_t{64} << 20;

// A directory open for listing; closes it on destruction.
class DirectoryListing {
 public:
  // Opens the directory `path`, following a symbolic link; errors name it as `what` ("imagefolder
  // directory /data/train"). Non-blocking, so that a FIFO in its place is refused, not waited on.
  static absl::StatusOr<DirectoryListing> Open(const std::string& path, const std::string& what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ErrnoError(errno, absl::StrCat("open ", what));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      const int error = errno;
      ::close(fd);
      return ErrnoError(error, absl::StrCat("fstat ", what));
    }
    if (!S_ISDIR(info.st_mode)) {
      ::close(fd);
      return absl::InvalidArgumentError(absl::StrCat(what, ": not a directory"));
    }
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
      const int error = errno;
      ::close(fd);
      return ErrnoError(error, absl::StrCat("opendir ", what));
    }
    return DirectoryListing(dir, path);
  }

  DirectoryListing(DirectoryListing&& other) noexcept
      : dir_(std::exchange(other.dir_, nullptr)), path_(std::move(other.path_)) {}
  DirectoryListing& operator=(DirectoryListing&&) = delete;
  DirectoryListing(const DirectoryListing&) = delete;
  DirectoryListing& operator=(const DirectoryListing&) = delete;
  ~DirectoryListing() {
    if (dir_ != nullptr) ::closedir(dir_);
  }

  int fd() const { return ::dirfd(dir_); }

  // The next entry, or nullptr at the end (with *error OK) or on an error.
  const struct dirent* Next(absl::Status* error) {
    errno = 0;
    const struct dirent* entry = ::readdir(dir_);
    if (entry == nullptr && errno != 0) *error = ErrnoError(errno, absl::StrCat("readdir ", path_));
    return entry;
  }

 private:
  DirectoryListing(DIR* dir, std::string path) : dir_(dir), path_(std::move(path)) {}

  DIR* dir_;
  std::string path_;
};

// The file type of `entry`, with fstatat (following a symbolic link) where readdir does not say
// or says it is a link; the errno-derived code naming `path` when fstatat fails.
absl::StatusOr<mode_t> EntryType(int at, const struct dirent& entry, const std::string& path) {
  if (entry.d_type != DT_LNK && entry.d_type != DT_UNKNOWN) return DTTOIF(entry.d_type);
  struct stat info {};
  if (::fstatat(at, entry.d_name, &info, 0) != 0) {
    return ErrnoError(errno, absl::StrCat("stat ", path));
  }
  return info.st_mode & S_IFMT;
}

bool IsHidden(const char* name) { return name[0] == '.'; }

bool IsJpegName(const std::string& name) {
  return absl::EndsWithIgnoreCase(name, ".jpg") || absl::EndsWithIgnoreCase(name, ".jpeg");
}

// The listed tree: classes in order, and every image's file name, class by class, packed into one
// string (about 30 bytes an ImageNet image, not a std::string's 60).
struct Tree {
  std::vector<std::string> classes;
  std::vector<std::int64_t> class_first;  // the first sample of each class; class_first[0] == 0
  std::string names;                      // image i's name is names[name_end[i-1], name_end[i])
  std::vector<std::int64_t> name_end;

  std::int64_t images() const { return static_cast<std::int64_t>(name_end.size()); }
  absl::string_view Name(std::int64_t i) const {
    const std::int64_t begin = i == 0 ? 0 : name_end[static_cast<std::size_t>(i - 1)];
    return absl::string_view(names).substr(
        static_cast<std::size_t>(begin),
        static_cast<std::size_t>(name_end[static_cast<std::size_t>(i)] - begin));
  }
};

absl::StatusOr<std::vector<std::string>> ListClasses(const std::string& dir) {
  WAVEPOOL_ASSIGN_OR_RETURN(
      DirectoryListing listing,
      DirectoryListing::Open(dir, absl::StrCat("imagefolder directory ", dir)));
  std::vector<std::string> classes;
  absl::Status error;
  while (const struct dirent* entry = listing.Next(&error)) {
    if (IsHidden(entry->d_name)) continue;
    const std::string path = absl::StrCat(dir, "/", entry->d_name);
    absl::StatusOr<mode_t> type = EntryType(listing.fd(), *entry, path);
    // A dangling symbolic link is not a directory; anything else unreadable is an error.
    if (!type.ok() && type.status().code() == absl::StatusCode::kNotFound) continue;
    WAVEPOOL_RETURN_IF_ERROR(type.status());
    if (*type == S_IFDIR) classes.emplace_back(entry->d_name);
  }
  WAVEPOOL_RETURN_IF_ERROR(error);
  if (classes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "imagefolder ", dir,
        ": no class directories; the images of each class go in a subdirectory of their own "
        "(DIR/CLASS/IMAGE.jpg)"));
  }
  std::sort(classes.begin(), classes.end());  // std::string compares bytes as unsigned char
  return classes;
}

// Appends the images of class directory DIR/`class_name` to *tree, in byte order of name.
absl::Status ListImages(const std::string& dir, const std::string& class_name, Tree* tree) {
  const std::string path = absl::StrCat(dir, "/", class_name);
  WAVEPOOL_ASSIGN_OR_RETURN(
      DirectoryListing listing,
      DirectoryListing::Open(path, absl::StrCat("imagefolder class directory ", path)));
  std::vector<std::string> names;
  absl::Status error;
  while (const struct dirent* entry = listing.Next(&error)) {
    std::string name = entry->d_name;
    if (IsHidden(entry->d_name) || !IsJpegName(name)) continue;
    const std::string file = absl::StrCat(path, "/", name);
    if (file.size() >= PATH_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("imagefolder image ", file, ": the path is ",
                                                     file.size(), " bytes, over PATH_MAX (",
                                                     PATH_MAX, ")"));
    }
    WAVEPOOL_ASSIGN_OR_RETURN(mode_t type, EntryType(listing.fd(), *entry, file));
    if (type != S_IFREG) {
      return absl::InvalidArgumentError(
          absl::StrCat("imagefolder image ", file, ": not a regular file"));
    }
    if (tree->images() + static_cast<std::int64_t>(names.size()) >= kMaxImages) {
      return absl::InvalidArgumentError(absl::StrCat(
          "imagefolder ", dir, ": more than ", kMaxImages, " images; at most that many are read"));
    }
    names.push_back(std::move(name));
  }
  WAVEPOOL_RETURN_IF_ERROR(error);
  if (names.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "imagefolder class directory ", path,
        " holds no images (files named *.jpg or *.jpeg); every class needs at least one"));
  }
  std::sort(names.begin(), names.end());  // std::string compares bytes as unsigned char
  for (const std::string& name : names) {
    tree->names += name;
    tree->name_end.push_back(static_cast<std::int64_t>(tree->names.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tree> ListTree(const std::string& dir) {
  Tree tree;
  WAVEPOOL_ASSIGN_OR_RETURN(tree.classes, ListClasses(dir));
  for (const std::string& class_name : tree.classes) {
    tree.class_first.push_back(tree.images());
    WAVEPOOL_RETURN_IF_ERROR(ListImages(dir, class_name, &tree));
  }
  return tree;
}

// Immutable after construction: Read may be called from any number of threads at once, each
// decoding into buffers of its own without a lock.
class ImageFolderSource final : public SampleSource {
 public:
  ImageFolderSource(SampleSpec spec, std::string dir, Tree tree)
      : spec_(std::move(spec)), dir_(std::move(dir)), tree_(std::move(tree)) {}

  const SampleSpec& spec() const override { return spec_; }
  std::int64_t size() const override { return tree_.images(); }
  std::string Describe() const override {
    return absl::StrCat("imagefolder ", dir_, " (", size(), " images, ", tree_.classes.size(),
                        " classes)");
  }

  absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const override {
    WAVEPOOL_RETURN_IF_ERROR(CheckSampleIndex(*this, index));
    const std::int64_t class_index =
        std::upper_bound(tree_.class_first.begin(), tree_.class_first.end(), index) -
        tree_.class_first.begin() - 1;
    const std::string path = absl::StrCat(
        dir_, "/", tree_.classes[static_cast<std::size_t>(class_index)], "/", tree_.Name(index));
    WAVEPOOL_ASSIGN_OR_RETURN(RgbImage image, Decode(path));
    ResizeCropNormalise(image, spec_.shape[1], spec_.shape[2], static_cast<float*>(input));
    *label = class_index;
    return absl::OkStatus();
  }

 private:
  // Reads and decodes one image; every error names the file.
  absl::StatusOr<RgbImage> Decode(const std::string& path) const {
    absl::StatusOr<std::unique_ptr<DatasetFile>> opened = DatasetFile::Open(path);
    if (!opened.ok()) {  // the message names the path
      return absl::Status(opened.status().code(),
                          absl::StrCat("imagefolder: ", opened.status().message()));
    }
    const DatasetFile& file = **opened;
    if (file.size() == 0 || file.size() > kMaxFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat("imagefolder image ", path, ": ", file.size(),
                                                     " bytes; a JPEG must have 1 to ",
                                                     kMaxFileBytes, " bytes"));
    }
    std::vector<unsigned char> bytes(static_cast<std::size_t>(file.size()));
    WAVEPOOL_RETURN_IF_ERROR(file.ReadAt(0, file.size(), bytes.data()));
    absl::StatusOr<RgbImage> image = DecodeJpeg(
        bytes.data(), bytes.size(), ResizedShorterSide(std::min(spec_.shape[1], spec_.shape[2])));
    if (!image.ok()) {
      return absl::Status(image.status().code(),
                          absl::StrCat("imagefolder image ", path, ": ", image.status().message()));
    }
    return image;
  }

  // Constant after construction.
  const SampleSpec spec_;
  const std::string dir_;
  const Tree tree_;
};

// Whether a model taking `spec` can train on this tree: RGB images {3, H, W} of any size up to
// the largest JPEG side, one class per class directory.
bool Fits(const SampleSpec& spec, std::int64_t classes) {
  return spec.kind == SampleSpec::Kind::kFeatures && spec.shape.size() == 3 && spec.shape[0] == 3 &&
         spec.shape[1] <= kMaxJpegSide && spec.shape[2] <= kMaxJpegSide && spec.classes == classes;
}

}  // namespace

absl::StatusOr<SampleSourcePtr> OpenImageFolderSource(const std::string& dir,
                                                      const SampleSpec& spec) {
  WAVEPOOL_ASSIGN_OR_RETURN(Tree tree, ListTree(dir));
  const auto classes = static_cast<std::int64_t>(tree.classes.size());
  if (!Fits(spec, classes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "imagefolder ", dir, " serves samples of features [3,H,W] (H and W up to ", kMaxJpegSide,
        "), ", classes, " classes (its class directories), but the model takes ", spec.ToString()));
  }
  return std::make_shared<const ImageFolderSource>(spec, dir, std::move(tree));
}

}  // namespace wavepool::runtime::data_internal
