#include "wavepool/agent/client/gate_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

static_assert(kResizeSeals == (F_SEAL_SHRINK | F_SEAL_GROW), "seal values");
static_assert(kWriterSeals == (F_SEAL_SEAL | F_SEAL_FUTURE_WRITE), "seal values");
// MFD_NOEXEC_SEAL (linux/memfd.h, Linux 6.3), which this system's headers may predate.
constexpr unsigned kMfdNoexecSeal = 0x0008U;

absl::Status Failed(int err, const std::string& what, const char* syscall) {
  return ErrnoError(err, absl::StrCat(what, ": ", syscall));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Mapping>> Mapping::Map(int fd, std::size_t bytes, bool writable,
                                                      const std::string& what) {
  void* address =
      mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return Failed(errno, what, writable ? "mmap (read-write)" : "mmap");
  return std::unique_ptr<Mapping>(new Mapping(address, bytes));
}

Mapping::~Mapping() { munmap(address_, bytes_); }

absl::StatusOr<ScopedFd> CreateSealableSegment(const std::string& name, std::size_t bytes) {
  // Never executable where the kernel knows the flag (Linux 6.3; a host may require it with
  // vm.memfd_noexec=2); older kernels reject the unknown flag with EINVAL.
  ScopedFd fd(memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | kMfdNoexecSeal));
  if (!fd.valid() && errno == EINVAL) {
    fd = ScopedFd(memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  }
  if (!fd.valid()) return Failed(errno, name, "memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return Failed(errno, name, "ftruncate");
  if (fcntl(fd.get(), F_ADD_SEALS, kResizeSeals) != 0) {
    return Failed(errno, name, "fcntl(F_ADD_SEALS, shrink|grow)");
  }
  return fd;
}

absl::Status SealAgainstNewWriters(int fd, const std::string& what) {
  if (fcntl(fd, F_ADD_SEALS, kWriterSeals) != 0) {
    return Failed(errno, what, "fcntl(F_ADD_SEALS, future-write|seal)");
  }
  return absl::OkStatus();
}

absl::Status CheckSealed(int fd, std::size_t bytes, const std::string& what) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": not a sealable memory segment (F_GET_SEALS failed)"));
  }
  if ((seals & kGateSeals) != kGateSeals) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: seals 0x%x, must include 0x%x (shrink, grow, future-write, seal)",
                        what, seals, kGateSeals));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return Failed(errno, what, "fstat");
  if (st.st_size != static_cast<off_t>(bytes)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: size %d bytes, must be %u", what, st.st_size, bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<OwnSegment> CreateOwnSegment(const std::string& name, std::size_t bytes) {
  WAVEPOOL_ASSIGN_OR_RETURN(ScopedFd fd, CreateSealableSegment(name, bytes));
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Mapping> mapping,
                            Mapping::Map(fd.get(), bytes, true, name));
  WAVEPOOL_RETURN_IF_ERROR(SealAgainstNewWriters(fd.get(), name));
  return OwnSegment{ShareFd(std::move(fd)), std::shared_ptr<Mapping>(std::move(mapping))};
}

void OutgoingDescriptors::Add(std::uint64_t position, std::vector<SharedFd> fds) {
  if (!fds.empty()) pending_.emplace_back(position, std::move(fds));
}

long OutgoingDescriptors::Send(int socket, std::uint64_t position, const char* data,
                               std::size_t size) {
  constexpr int kFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
  auto due = pending_.begin();
  if (due != pending_.end() && due->first > position) {
    // Stop before the bytes that carry descriptors: they must start a sendmsg of their own.
    size = std::min<std::size_t>(size, due->first - position);
    due = pending_.end();
  }
  if (due == pending_.end() || due->first != position) {
    return static_cast<long>(send(socket, data, size, kFlags));
  }
  if (pending_.size() > 1) size = std::min<std::size_t>(size, pending_[1].first - position);
  const std::vector<SharedFd>& fds = due->second;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{const_cast<char*>(data), size};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  for (std::size_t i = 0; i < fds.size(); ++i) {
    const int fd = fds[i]->get();
    std::memcpy(CMSG_DATA(header) + i * sizeof(int), &fd, sizeof fd);
  }
  const ssize_t sent = sendmsg(socket, &message, kFlags);
  if (sent > 0) pending_.pop_front();  // the descriptors went with the first byte
  return static_cast<long>(sent);
}

long ReceiveWithDescriptors(int socket, char* buffer, std::size_t size,
                            std::deque<ScopedFd>* received, bool* truncated) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptorsPerReceive)];
  iovec iov{buffer, size};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(socket, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return -1;
  if ((message.msg_flags & MSG_CTRUNC) != 0) *truncated = true;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      received->emplace_back(fd);
    }
  }
  return static_cast<long>(n);
}

}  // namespace wavepool::agent
