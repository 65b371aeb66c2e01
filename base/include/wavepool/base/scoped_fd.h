// One owned file descriptor, closed when its owner goes out of scope, so that every path out of a
// function (an early error return included) closes what the function opened.
#ifndef WAVEPOOL_BASE_SCOPED_FD_H_
#define WAVEPOOL_BASE_SCOPED_FD_H_

namespace wavepool {

// A ScopedFd owns at most one descriptor and closes it on destruction. Move-only: exactly one
// ScopedFd owns a descriptor at a time, and a moved-from ScopedFd owns nothing. Not synchronised:
// one thread at a time uses a ScopedFd (the descriptor itself may be read by several threads
// while no one closes or moves it).
//
//   ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
//   if (!fd.valid()) return ErrnoError(errno, absl::StrCat("open ", path));
class ScopedFd {
 public:
  // Owns nothing.
  ScopedFd() = default;
  // Takes ownership of `fd`. A negative `fd` (a failed open's -1) owns nothing, so the result of
  // a system call can be wrapped before it is checked; errno is left as the call set it.
  explicit ScopedFd(int fd) : fd_(fd < 0 ? -1 : fd) {}
  ~ScopedFd();

  ScopedFd(ScopedFd&& other) noexcept : fd_(other.Release()) {}
  // Closes the descriptor this owned, then takes over `other`'s.
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  bool valid() const { return fd_ >= 0; }
  // The descriptor, still owned by this ScopedFd; -1 when it owns none.
  int get() const { return fd_; }

  // Gives up ownership without closing: the caller now owns the returned descriptor (-1 if none).
  [[nodiscard]] int Release();

  // Closes now and returns 0, or close's errno: a file system that writes back late (NFS)
  // reports a failed write only here, so a writer that must know checks it. The descriptor is
  // gone either way (Linux frees it even when close fails, so it is never retried) and this
  // ScopedFd owns nothing afterwards. 0 when it owned nothing.
  int Close();

 private:
  int fd_ = -1;
};

}  // namespace wavepool

#endif  // WAVEPOOL_BASE_SCOPED_FD_H_
