// Persistence: a store reopened on the same directory has the same objects, CRDs and counter.
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/apiserver/store_test_util.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class StorePersistenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("wavepool-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<std::unique_ptr<ObjectStore>> OpenDir() {
    ObjectStore::Options options;
    options.data_dir = dir_.string();
    return ObjectStore::Open(options);
  }

  fs::path dir_;
};

TEST_F(StorePersistenceTest, ReopenRestoresObjectsAndCounter) {
  std::int64_t counter = 0;
  nlohmann::json kept;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, OpenDir());
    const ResourceInfo cms = Resource(*store, "", "v1", "configmaps");
    ASSERT_OK_AND_ASSIGN(
        WriteResult made,
        store->Create(cms, "default", Named("kept", {{"data", {{"k", "v"}}}}), {}));
    kept = made.object;
    ASSERT_OK(store->Create(cms, "default", Named("gone"), {}).status());
    ASSERT_OK(store->Delete(cms, "default", "gone", {}).status());
    ASSERT_OK(store->Create(Resource(*store, "", "v1", "nodes"), "", Named("n1"), {}).status());
    counter = store->CurrentResourceVersion();
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, OpenDir());
  EXPECT_EQ(store->CurrentResourceVersion(), counter);  // the deletion's version is not reused
  const ResourceInfo cms = Resource(*store, "", "v1", "configmaps");
  ASSERT_OK_AND_ASSIGN(nlohmann::json got, store->Get(cms, "default", "kept"));
  EXPECT_EQ(got, kept);
  EXPECT_FALSE(store->Get(cms, "default", "gone").ok());
  EXPECT_OK(store->Get(Resource(*store, "", "v1", "nodes"), "", "n1").status());
  ASSERT_OK_AND_ASSIGN(WriteResult next, store->Create(cms, "default", Named("next"), {}));
  EXPECT_EQ(RvNumber(next.object), counter + 1);
}

TEST_F(StorePersistenceTest, WatchesFromBeforeTheRestartAreExpired) {
  std::int64_t before = 0;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, OpenDir());
    before = store->CurrentResourceVersion();
    ASSERT_OK(store->Create(Resource(*store, "", "v1", "configmaps"), "default", Named("c"), {})
                  .status());
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, OpenDir());
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<StoreWatch> watch,
      store->Watch(Resource(*store, "", "v1", "configmaps"), "", FromVersion(before)));
  EXPECT_THAT(watch->Next(std::chrono::milliseconds(0)),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("too old resource version")));
}

TEST_F(StorePersistenceTest, CorruptObjectFileIsNamed) {
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, OpenDir());
    ASSERT_OK(store->Create(Resource(*store, "", "v1", "configmaps"), "default", Named("c"), {})
                  .status());
  }
  const fs::path file = dir_ / "objects" / "configmaps" / "default" / "c.json";
  ASSERT_TRUE(fs::exists(file));
  std::ofstream(file, std::ios::trunc) << "{not json";
  EXPECT_THAT(OpenDir(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(file.string())));
}

TEST_F(StorePersistenceTest, CorruptCounterIsNamed) {
  { ASSERT_OK(OpenDir().status()); }
  std::ofstream(dir_ / "resource_version", std::ios::trunc) << "many";
  EXPECT_THAT(OpenDir(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("resource_version")));
}

TEST_F(StorePersistenceTest, LeftoverTemporaryFilesAreIgnored) {
  { ASSERT_OK(OpenDir().status()); }
  const fs::path partial = dir_ / "objects" / "configmaps" / "default" / "half.json.tmp";
  fs::create_directories(partial.parent_path());
  std::ofstream(partial) << "{\"metad";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ObjectStore> store, OpenDir());
  EXPECT_FALSE(store->Get(Resource(*store, "", "v1", "configmaps"), "default", "half").ok());
}

TEST_F(StorePersistenceTest, UnusableDirectoryIsAnError) {
  std::ofstream(dir_) << "a file, not a directory";
  EXPECT_FALSE(OpenDir().ok());
  fs::remove(dir_);
}

}  // namespace
}  // namespace wavepool::testing::apiserver
