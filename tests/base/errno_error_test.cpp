// errno to Status: the message names the operation and carries errno's text; the code says what
// the caller should do next, with a full disk always ResourceExhausted and errno 0 never OK.
#include "wavepool/base/errno_error.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool {
namespace {

using ::wavepool::testing::StatusIs;

TEST(ErrnoError, MessageIsTheOperationThenErrnoText) {
  const absl::Status status = ErrnoError(ENOENT, "open /data/train.bin");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound,
                               std::string("open /data/train.bin: ") + std::strerror(ENOENT)));
}

TEST(ErrnoError, CodesFollowWhatTheCallerShouldDoNext) {
  EXPECT_EQ(ErrnoError(ENOENT, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError(EACCES, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError(EPERM, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError(EAGAIN, "x").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoError(EINVAL, "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrnoError(EEXIST, "x").code(), absl::StatusCode::kAlreadyExists);
}

TEST(ErrnoError, AFullDiskQuotaOrFileSizeLimitIsResourceExhausted) {
  for (const int error_number : {ENOSPC, EDQUOT, EFBIG}) {
    EXPECT_THAT(ErrnoError(error_number, "write /ckpt/step-3/rank-0"),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         std::string("write /ckpt/step-3/rank-0: ") + std::strerror(error_number)))
        << error_number;
  }
}

TEST(ErrnoError, OtherwiseAgreesWithAbseil) {
  for (int error_number = 1; error_number < 134; ++error_number) {
    if (error_number == ENOSPC || error_number == EDQUOT || error_number == EFBIG) continue;
    const absl::Status ours = ErrnoError(error_number, "call");
    const absl::Status theirs = absl::ErrnoToStatus(error_number, "call");
    EXPECT_EQ(ours, theirs) << error_number;
  }
}

TEST(ErrnoError, ZeroIsNeverOk) {
  const absl::Status status = ErrnoError(0, "close fd 3");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(std::string(status.message()), ::testing::StartsWith("close fd 3: "));
}

TEST(ErrnoError, AnUnknownErrnoStillNamesTheOperation) {
  const absl::Status status = ErrnoError(99999, "ioctl /dev/nvidia0");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), ::testing::StartsWith("ioctl /dev/nvidia0: "));
}

TEST(ErrnoError, TheCallerMayChooseTheCode) {
  EXPECT_THAT(ErrnoError(absl::StatusCode::kInvalidArgument, EACCES, "--out: cannot write /p"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       std::string("--out: cannot write /p: ") + std::strerror(EACCES)));
  // An OK code would turn the failure into success: it becomes Unknown.
  EXPECT_EQ(ErrnoError(absl::StatusCode::kOk, EIO, "read").code(), absl::StatusCode::kUnknown);
}

TEST(ErrnoError, ConvertsARealFailedCall) {
  errno = 0;
  const int fd = ::open("/nonexistent-wavepool-dir/file", O_RDONLY);
  const int saved = errno;
  ASSERT_LT(fd, 0);
  EXPECT_THAT(ErrnoError(saved, "open /nonexistent-wavepool-dir/file"),
              StatusIs(absl::StatusCode::kNotFound,
                       ::testing::HasSubstr("open /nonexistent-wavepool-dir/file: ")));
}

}  // namespace
}  // namespace wavepool
