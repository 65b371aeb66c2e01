// An owned descriptor is closed exactly once: when its owner goes out of scope or is assigned
// over, never by a moved-from owner, never after Release, and Close reports close's result.
#include "wavepool/base/scoped_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>
#include <utility>

#include "gtest/gtest.h"

namespace wavepool {
namespace {

static_assert(!std::is_copy_constructible_v<ScopedFd>);
static_assert(!std::is_copy_assignable_v<ScopedFd>);
static_assert(std::is_nothrow_move_constructible_v<ScopedFd>);
static_assert(std::is_nothrow_move_assignable_v<ScopedFd>);

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Both ends of a new pipe: descriptors nothing else in the test owns.
std::pair<int, int> Pipe() {
  int ends[2] = {-1, -1};
  EXPECT_EQ(::pipe2(ends, O_CLOEXEC), 0) << "errno " << errno;
  return {ends[0], ends[1]};
}

TEST(ScopedFd, ClosesItsDescriptorWhenItGoesOutOfScope) {
  const auto [read_end, write_end] = Pipe();
  {
    ScopedFd fd(read_end);
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(fd.get(), read_end);
    EXPECT_TRUE(IsOpen(read_end));
  }
  EXPECT_FALSE(IsOpen(read_end));
  ::close(write_end);
}

TEST(ScopedFd, AFailedCallsResultOwnsNothing) {
  errno = 0;
  ScopedFd fd(::open("/nonexistent/wavepool-scoped-fd", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(errno, ENOENT);  // left as open set it, for the caller's error message
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(fd.get(), -1);
  EXPECT_FALSE(ScopedFd().valid());
  EXPECT_FALSE(ScopedFd(-7).valid());
  EXPECT_EQ(ScopedFd(-7).get(), -1);
}

TEST(ScopedFd, MovingHandsOverOwnershipAndTheMovedFromOneClosesNothing) {
  const auto [read_end, write_end] = Pipe();
  ScopedFd outer;
  {
    ScopedFd inner(read_end);
    outer = std::move(inner);
    EXPECT_FALSE(inner.valid());  // NOLINT(bugprone-use-after-move): moved-from is specified
  }
  EXPECT_TRUE(IsOpen(read_end));
  EXPECT_EQ(outer.get(), read_end);
  ScopedFd constructed(std::move(outer));
  EXPECT_EQ(constructed.get(), read_end);
  EXPECT_FALSE(outer.valid());  // NOLINT(bugprone-use-after-move)
  // Assigning over an owner closes what it owned.
  constructed = ScopedFd(write_end);
  EXPECT_FALSE(IsOpen(read_end));
  EXPECT_TRUE(IsOpen(write_end));
  EXPECT_EQ(constructed.get(), write_end);
}

TEST(ScopedFd, SelfMoveAssignmentKeepsTheDescriptor) {
  const auto [read_end, write_end] = Pipe();
  ScopedFd fd(read_end);
  ScopedFd& alias = fd;
  fd = std::move(alias);
  EXPECT_EQ(fd.get(), read_end);
  EXPECT_TRUE(IsOpen(read_end));
  ::close(write_end);
}

TEST(ScopedFd, ReleaseHandsTheDescriptorBackOpen) {
  const auto [read_end, write_end] = Pipe();
  int released = -1;
  {
    ScopedFd fd(read_end);
    released = fd.Release();
    EXPECT_FALSE(fd.valid());
  }
  EXPECT_EQ(released, read_end);
  EXPECT_TRUE(IsOpen(read_end));
  ::close(read_end);
  ::close(write_end);
}

TEST(ScopedFd, CloseClosesOnceAndReportsSuccess) {
  const auto [read_end, write_end] = Pipe();
  ScopedFd fd(read_end);
  EXPECT_EQ(fd.Close(), 0);
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(IsOpen(read_end));
  EXPECT_EQ(fd.Close(), 0);  // owns nothing: nothing to close, nothing failed
  ::close(write_end);
}

TEST(ScopedFd, CloseReportsCloseErrno) {
  const auto [read_end, write_end] = Pipe();
  ScopedFd fd(read_end);
  ASSERT_EQ(::close(read_end), 0);  // behind its back: close(2) now fails with EBADF
  EXPECT_EQ(fd.Close(), EBADF);
  EXPECT_FALSE(fd.valid());
  ::close(write_end);
}

}  // namespace
}  // namespace wavepool
