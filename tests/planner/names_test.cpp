// Matching typed names and suggesting the closest known ones (names.h), and the lookups that use
// them: models and devices.
#include "wavepool/planner/names.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::IsEmpty;
using ::wavepool::testing::StatusIs;

TEST(Names, CaseDashesAndUnderscoresDoNotMatter) {
  EXPECT_EQ(NameKey("VGG-16"), "vgg16");
  EXPECT_TRUE(SameName("vgg-16", "vgg16"));
  EXPECT_TRUE(SameName("Wide-ResNet101-2", "wide_resnet101_2"));
  EXPECT_TRUE(SameName("A100_40GB", "a100-40gb"));
  EXPECT_FALSE(SameName("vgg16", "vgg19"));
}

TEST(Names, ClosestNamesAreTyposPrefixesAndExtensions) {
  const std::vector<std::string> subcommands = {"plan", "profile", "codec", "version"};
  EXPECT_THAT(ClosestNames("plna", subcommands), ElementsAre("plan"));  // two letters swapped
  EXPECT_THAT(ClosestNames("profle", subcommands), ElementsAre("profile"));
  EXPECT_THAT(ClosestNames("deploy", subcommands), IsEmpty());
  const std::vector<std::string> flags = {"--gpus", "--global-batch", "--model", "--layers"};
  EXPECT_THAT(ClosestNames("--gpu", flags), ElementsAre("--gpus"));
  EXPECT_THAT(ClosestNames("--batch", flags), ElementsAre("--global-batch"));  // a part of it
  // A typo's fix is enough: names that merely extend the word are left out beside it.
  EXPECT_THAT(ClosestNames("--gpu", {"--gpu-counts", "--gpus"}), ElementsAre("--gpus"));
  EXPECT_THAT(ClosestNames("a10", {"a100-40gb", "a100-sxm4", "a100"}), ElementsAre("a100"));
  // Several at the same distance keep their order; closer ones come first.
  EXPECT_THAT(ClosestNames("x100", {"v100", "a100-40gb", "h100", "a100"}),
              ElementsAre("v100", "h100", "a100"));
  EXPECT_THAT(ClosestNames("vgg16bn", {"vgg16", "resnet50"}), ElementsAre("vgg16"));
  EXPECT_EQ(DidYouMean("plna", subcommands), "; did you mean 'plan'?");
  EXPECT_EQ(DidYouMean("x100", {"v100", "h100"}, "\""), "; did you mean \"v100\" or \"h100\"?");
  EXPECT_EQ(DidYouMean("zzz", subcommands), "");
}

TEST(Names, ModelsAreMatchedLikeDevices) {
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg, BuiltinModel("VGG-16"));
  EXPECT_EQ(vgg.name(), "vgg16");
  ASSERT_OK_AND_ASSIGN(const ModelGraph wrn, BuiltinModel("WRN101-2"));  // the alias
  EXPECT_EQ(wrn.name(), "wide_resnet101_2");
  ASSERT_OK_AND_ASSIGN(const DeviceSpec device, FindDevice("A100_40GB"));
  EXPECT_EQ(device.name, "a100-40gb");
  ASSERT_OK_AND_ASSIGN(const DeviceSpec alias, FindDevice("H100-SXM"));
  EXPECT_EQ(alias.name, "h100");
  EXPECT_THAT(BuiltinModel("vgg19"),
              StatusIs(absl::StatusCode::kNotFound, EndsWith("; did you mean 'vgg16'?")));
  EXPECT_THAT(FindDevice("x100"),
              StatusIs(absl::StatusCode::kNotFound, EndsWith("; did you mean \"v100\", \"h100\" or "
                                                             "\"a100\"?")));
  EXPECT_THAT(FindDevice("a10"),
              StatusIs(absl::StatusCode::kNotFound, EndsWith("; did you mean \"a100\"?")));
}

}  // namespace
}  // namespace wavepool::planner
