// One conversion from a failed system call's errno to an absl::Status, so that every message
// reads "<what>: <errno text>" (`open /data/train.bin: No such file or directory`) and a full disk
// means the same code everywhere.
#ifndef WAVEPOOL_BASE_ERRNO_ERROR_H_
#define WAVEPOOL_BASE_ERRNO_ERROR_H_

#include <string_view>

#include "absl/status/status.h"

namespace wavepool {

// The code ErrnoError gives `error_number`: ResourceExhausted for a full disk, a quota or the
// file-size limit (ENOSPC, EDQUOT, EFBIG: free space, then retry), absl::ErrnoToStatusCode
// otherwise (NotFound for ENOENT, PermissionDenied for EACCES and EPERM, Unavailable for EAGAIN,
// ...), and Unknown for 0 (a call that failed without setting errno), so that an error is never
// turned into OK.
absl::StatusCode ErrnoCode(int error_number);

// The error "<what>: <errno text>" with ErrnoCode(error_number). `what` names the operation and
// its object ("open /data/train.bin", "agent socket /run/wavepool/agent.sock: bind"). The errno
// text comes from a thread-safe strerror. Pass errno's value saved right after the failed call:
// anything in between (close, a log line) may change errno.
absl::Status ErrnoError(int error_number, std::string_view what);

// The same message with `code` chosen by the caller, for an operation whose callers should react
// to every failure alike (a CLI flag that names a file it cannot write: InvalidArgument). An OK
// `code` becomes Unknown: a failed call is never reported as success.
absl::Status ErrnoError(absl::StatusCode code, int error_number, std::string_view what);

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_ERRNO_ERROR_H_
