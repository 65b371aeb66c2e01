// Writing a report file so that a reader never sees half of it.
#ifndef WAVEPOOL_LOCAL_ATOMIC_TEXT_FILE_H_
#define WAVEPOOL_LOCAL_ATOMIC_TEXT_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace wavepool::local {

// Writes `text` to `path` through `path`.tmp and a rename: the file is either the old one or the
// whole new one. Internal naming the file when writing or renaming fails (the temporary file is
// removed).
absl::Status WriteTextFileAtomically(const std::string& path, const std::string& text);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_ATOMIC_TEXT_FILE_H_
