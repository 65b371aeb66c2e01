// Descriptors and mappings of the launch gate's sealed shared memory (gate_layout.h), used by the
// agent and by workers. Every segment is a memfd created with MFD_ALLOW_SEALING and sealed against
// resizing (F_SEAL_SHRINK | F_SEAL_GROW: nobody can make another process's mapping raise SIGBUS)
// and, once its single writer mapped it, against new writers (F_SEAL_FUTURE_WRITE | F_SEAL_SEAL:
// neither write(2), nor a writable mmap, nor re-opening it O_RDWR through /proc/<pid>/fd gives
// anyone else write access; the writer's own mapping keeps working).
//
// A ScopedFd (wavepool/base/scoped_fd.h) and a Mapping own what they hold and release it on
// destruction; they are movable, not copyable. A SharedFd may be shared by any number of threads
// (the descriptor is only read).
#ifndef WAVEPOOL_AGENT_CLIENT_GATE_MEMORY_H_
#define WAVEPOOL_AGENT_CLIENT_GATE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/base/scoped_fd.h"

namespace wavepool::agent {

// A descriptor shared by the messages and gates that refer to it; closed with the last owner.
// A message decoded from bytes alone holds a placeholder (an empty ScopedFd) until the
// transport adopts the descriptor that travelled with it (protocol.h, AdoptDescriptors).
using SharedFd = std::shared_ptr<const ScopedFd>;
inline SharedFd ShareFd(ScopedFd fd) { return std::make_shared<const ScopedFd>(std::move(fd)); }

// A MAP_SHARED mapping, unmapped on destruction.
class Mapping {
 public:
  // Maps `bytes` of `fd` from offset 0, read-only or read-write. The errno-derived code, naming
  // `what`, when mmap fails (EPERM for a writable mapping of a write-sealed segment).
  static absl::StatusOr<std::unique_ptr<Mapping>> Map(int fd, std::size_t bytes, bool writable,
                                                      const std::string& what);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  void* data() const { return address_; }
  std::size_t size() const { return bytes_; }

 private:
  Mapping(void* address, std::size_t bytes) : address_(address), bytes_(bytes) {}
  void* const address_;
  const std::size_t bytes_;
};

// The seals every gate segment carries before a second process may map it.
inline constexpr int kResizeSeals = 0x0002 | 0x0004;  // F_SEAL_SHRINK | F_SEAL_GROW
inline constexpr int kWriterSeals = 0x0001 | 0x0010;  // F_SEAL_SEAL | F_SEAL_FUTURE_WRITE
inline constexpr int kGateSeals = kResizeSeals | kWriterSeals;

// A memfd named `name` of exactly `bytes` (zero-filled), sealed against resizing, open
// read-write. The errno-derived code, naming the syscall, on failure.
absl::StatusOr<ScopedFd> CreateSealableSegment(const std::string& name, std::size_t bytes);
// Adds F_SEAL_FUTURE_WRITE | F_SEAL_SEAL: from now on only mappings made before stay writable.
// REQUIRES: `fd` is open for writing.
absl::Status SealAgainstNewWriters(int fd, const std::string& what);
// FailedPrecondition, naming `what`, unless `fd` is a sealable file of exactly `bytes` bytes that
// carries every seal of kGateSeals (so that mapping it can never fault, and nobody can gain
// write access to it any more).
absl::Status CheckSealed(int fd, std::size_t bytes, const std::string& what);

// A worker's own segment: created, mapped writable, then sealed against new writers, before its
// descriptor leaves the process.
struct OwnSegment {
  SharedFd fd;
  std::shared_ptr<Mapping> mapping;  // the only writable mapping there will ever be
};
absl::StatusOr<OwnSegment> CreateOwnSegment(const std::string& name, std::size_t bytes);

// --- Passing descriptors over the agent's unix stream socket (SCM_RIGHTS) -----------------------

// Descriptors waiting to travel with given bytes of an outgoing stream. Not thread-safe.
class OutgoingDescriptors {
 public:
  // `fds` travel with the byte at stream offset `position` (the first byte of their frame).
  // REQUIRES: positions added in increasing order.
  void Add(std::uint64_t position, std::vector<SharedFd> fds);
  // Sends a prefix of `data` (whose first byte is at stream offset `position`) like send(2) with
  // MSG_NOSIGNAL | MSG_DONTWAIT, attaching the descriptors due with its first byte and stopping
  // before the next byte that has descriptors of its own. Returns the bytes sent, or -1 and errno.
  long Send(int socket, std::uint64_t position, const char* data, std::size_t size);
  bool empty() const { return pending_.empty(); }

 private:
  std::deque<std::pair<std::uint64_t, std::vector<SharedFd>>> pending_;
};

// Receives like recv(2) (MSG_DONTWAIT), appending the descriptors that arrived (close-on-exec) to
// `received`. Returns the bytes received, 0 on EOF, or -1 and errno. Sets `*truncated` when the
// kernel dropped descriptors that did not fit (more than kMaxDescriptorsPerReceive at once).
inline constexpr std::size_t kMaxDescriptorsPerReceive = 64;
long ReceiveWithDescriptors(int socket, char* buffer, std::size_t size,
                            std::deque<ScopedFd>* received, bool* truncated);

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_GATE_MEMORY_H_
