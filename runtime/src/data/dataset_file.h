// One file of a dataset on disk, read record by record with pread (never whole), so that each
// rank touches only the samples it trains on (scalednn-data-movement §IV-A).
//
// Thread safety: ReadAt may be called concurrently from any number of threads (pread keeps no file
// position). Ownership: a DatasetFile owns its descriptor and closes it on destruction.
#ifndef WAVEPOOL_RUNTIME_SRC_DATA_DATASET_FILE_H_
#define WAVEPOOL_RUNTIME_SRC_DATA_DATASET_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace wavepool::runtime::data_internal {

class DatasetFile {
 public:
  // Opens `path` read-only. The errno-derived code (NotFound, PermissionDenied, ...) naming the
  // path when open or fstat fails; InvalidArgument when it is not a regular file.
  static absl::StatusOr<std::unique_ptr<DatasetFile>> Open(std::string path);
  ~DatasetFile();
  DatasetFile(const DatasetFile&) = delete;
  DatasetFile& operator=(const DatasetFile&) = delete;

  const std::string& path() const { return path_; }
  // Bytes in the file when it was opened.
  std::int64_t size() const { return size_; }

  // Reads exactly `length` bytes at byte `offset` into `buffer`. DataLoss naming the path and the
  // offset where the data ended when the file is shorter than it was at open; the errno-derived
  // code naming the path and offset when pread fails.
  // REQUIRES: offset >= 0, length >= 0, `buffer` holds `length` bytes.
  absl::Status ReadAt(std::int64_t offset, std::int64_t length, void* buffer) const;

 private:
  DatasetFile(std::string path, int fd, std::int64_t size);

  // Constant after construction.
  const std::string path_;
  const int fd_;
  const std::int64_t size_;
};

// The big-endian 32-bit word at `bytes` (the idx format's header fields).
std::uint32_t BigEndian32(const unsigned char* bytes);

}  // namespace wavepool::runtime::data_internal

#endif  // WAVEPOOL_RUNTIME_SRC_DATA_DATASET_FILE_H_
