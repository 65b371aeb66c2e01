// Image references as container runtimes parse them (image_reference.h).
#include "wavepool/controller/image_reference.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::controller {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(ImageReference, SplitsRegistryPathTagAndDigest) {
  ASSERT_OK_AND_ASSIGN(ImageReference full,
                       ParseImageReference("registry.example:5000/team/worker:1.2@" + kDigest));
  EXPECT_EQ(full.domain, "registry.example:5000");
  EXPECT_EQ(full.path, "team/worker");
  EXPECT_EQ(full.tag, "1.2");
  EXPECT_EQ(full.digest, kDigest);

  ASSERT_OK_AND_ASSIGN(ImageReference short_name, ParseImageReference("busybox"));
  EXPECT_EQ(short_name.domain, "");
  EXPECT_EQ(short_name.path, "busybox");
  EXPECT_EQ(short_name.tag, "");

  // A first component without '.' or ':' is a path on Docker Hub, not a registry.
  ASSERT_OK_AND_ASSIGN(ImageReference hub, ParseImageReference("pytorch/pytorch:2.1-cuda12"));
  EXPECT_EQ(hub.domain, "");
  EXPECT_EQ(hub.path, "pytorch/pytorch");
  ASSERT_OK_AND_ASSIGN(ImageReference local, ParseImageReference("localhost/worker"));
  EXPECT_EQ(local.domain, "localhost");
}

TEST(ImageReference, AcceptsWhatRuntimesAccept) {
  for (const std::string& image :
       {std::string("worker:1"), std::string("team/a.b-c__d---e/f_g:TAG_1.x-y"),
        std::string("[::1]:5000/worker"), std::string("worker@") + kDigest,
        std::string("Registry.Example/worker"), std::string("w:") + std::string(128, 't')}) {
    EXPECT_OK(ParseImageReference(image).status()) << image;
  }
}

TEST(ImageReference, RefusesMalformedReferencesNamingThePart) {
  const struct {
    std::string image;
    std::string part;
  } cases[] = {
      {"", "must not be empty"},
      {"worker :1", "white space"},
      {"Worker:1", "path component \"Worker\""},
      {"team//worker", "path component \"\""},
      {"team/-worker", "path component \"-worker\""},
      {"team/worker.", "path component \"worker.\""},
      {"worker:", "tag \"\""},
      {"worker:.1", "tag \".1\""},
      {"worker:" + std::string(129, 't'), "tag"},
      {"registry.example:port/worker", "registry port \"port\""},
      {"-registry.example/worker", "registry host"},
      {"worker@sha256:abc", "digest \"sha256:abc\""},
      {"worker@" + std::string(64, 'a'), "digest"},
      {":1", "no repository name"},
      {std::string(256, 'a'), "at most 255 characters"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(ParseImageReference(c.image),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.part)))
        << c.image;
  }
}

}  // namespace
}  // namespace wavepool::controller
