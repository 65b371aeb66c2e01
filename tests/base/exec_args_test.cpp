#include "wavepool/base/exec_args.h"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

TEST(ChildEnvironment, SetsOverridesOverThisProcesssEnvironment) {
  ASSERT_EQ(setenv("WAVEPOOL_EXEC_ARGS_KEPT", "a", 1), 0);
  ASSERT_EQ(setenv("WAVEPOOL_EXEC_ARGS_SET", "old", 1), 0);
  const std::vector<std::string> env =
      ChildEnvironment({{"WAVEPOOL_EXEC_ARGS_SET", "new"}, {"WAVEPOOL_EXEC_ARGS_ADDED", "x=y"}});
  EXPECT_THAT(env, Contains("WAVEPOOL_EXEC_ARGS_KEPT=a"));
  EXPECT_THAT(env, Contains("WAVEPOOL_EXEC_ARGS_SET=new"));
  EXPECT_THAT(env, Not(Contains("WAVEPOOL_EXEC_ARGS_SET=old")));
  EXPECT_THAT(env, Contains("WAVEPOOL_EXEC_ARGS_ADDED=x=y"));
  EXPECT_EQ(std::count_if(
                env.begin(), env.end(),
                [](const std::string& e) { return e.rfind("WAVEPOOL_EXEC_ARGS_SET=", 0) == 0; }),
            1);
  unsetenv("WAVEPOOL_EXEC_ARGS_KEPT");
  unsetenv("WAVEPOOL_EXEC_ARGS_SET");
}

TEST(ChildEnvironment, WithoutInheritingIsTheOverridesAlone) {
  EXPECT_THAT(ChildEnvironment({{"B", "2"}, {"A", "1"}}, /*inherit=*/false),
              ElementsAre("A=1", "B=2"));
}

TEST(ExecPointers, PointIntoTheStringsAndEndWithNull) {
  std::vector<std::string> strings = {"prog", "--flag"};
  const std::vector<char*> pointers = ExecPointers(strings);
  ASSERT_EQ(pointers.size(), 3u);
  EXPECT_EQ(pointers[0], strings[0].data());
  EXPECT_STREQ(pointers[1], "--flag");
  EXPECT_EQ(pointers[2], nullptr);
}

}  // namespace
}  // namespace wavepool
