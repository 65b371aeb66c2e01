// The file behind a c10d FileStore, checked before LibTorch opens it. c10d reads the file as a
// sequence of (key, value) records, each string a u32 length in host order and that many bytes,
// and trusts every length: a file that is not such a sequence (another file at the path, a
// record cut short by a crash) makes it allocate up to 4 GiB and then spin at the end of the file
// forever, deaf to SIGTERM. The format is the same in LibTorch 1.13 and 2.x.
#ifndef WAVEPOOL_RUNTIME_SRC_DIST_FILE_STORE_FILE_H_
#define WAVEPOOL_RUNTIME_SRC_DIST_FILE_STORE_FILE_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"

namespace wavepool::runtime {

// OK when `path` does not exist (the store creates it) or holds whole records. Reads under the
// store's own shared lock (flock), so that a rank appending a record is not seen halfway, waiting
// at most `timeout` for it. InvalidArgument naming the path and the byte offset of the first
// record that does not fit, or a path that is not a regular file; DeadlineExceeded when the lock
// is held past `timeout`; errno's code for a file that cannot be opened or read.
absl::Status CheckFileStoreFile(const std::string& path, std::chrono::milliseconds timeout);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SRC_DIST_FILE_STORE_FILE_H_
