// The ObjectStore implementation, declared for its source files (object_store.cpp: reads and
// writes; store_delete.cpp: deletion, garbage collection, namespaces, graceful pods;
// store_list.cpp: lists; store_watch.cpp: watches). Not a public header.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_STORE_IMPL_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_STORE_IMPL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "tests/support/apiserver/field_selector.h"
#include "tests/support/apiserver/label_selector.h"
#include "tests/support/apiserver/object_store.h"
#include "tests/support/apiserver/store_core.h"

namespace wavepool::testing::apiserver::store_internal {

class StoreImpl final : public ObjectStore {
 public:
  explicit StoreImpl(std::shared_ptr<StoreCore> core) : core_(std::move(core)) {}
  ~StoreImpl() override;

  // After loading: serves persisted CRDs, re-arms grace timers, creates the initial namespaces,
  // starts the grace-period thread.
  absl::Status Initialize();

  std::vector<ResourceInfo> Resources() const override;
  std::optional<ResourceInfo> FindResource(std::string_view group, std::string_view version,
                                           std::string_view plural) const override;
  absl::StatusOr<nlohmann::json> Get(const ResourceInfo& resource, std::string_view ns,
                                     std::string_view name) const override;
  absl::StatusOr<ListResult> List(const ResourceInfo& resource, std::string_view ns,
                                  const ListQuery& query) const override;
  absl::StatusOr<WriteResult> Create(const ResourceInfo& resource, std::string_view ns,
                                     nlohmann::json object, const WriteOptions& options) override;
  absl::StatusOr<WriteResult> Update(const ResourceInfo& resource, std::string_view ns,
                                     std::string_view name, nlohmann::json object,
                                     std::string_view subresource,
                                     const WriteOptions& options) override;
  absl::StatusOr<WriteResult> Modify(const ResourceInfo& resource, std::string_view ns,
                                     std::string_view name, std::string_view subresource,
                                     const Mutation& mutate, const WriteOptions& options) override;
  absl::StatusOr<DeleteResult> Delete(const ResourceInfo& resource, std::string_view ns,
                                      std::string_view name, const DeleteRequest& request) override;
  absl::StatusOr<std::unique_ptr<StoreWatch>> Watch(const ResourceInfo& resource,
                                                    std::string_view ns,
                                                    const ListQuery& query) override;
  void DropWatches() override;
  void Compact() override;
  std::int64_t CurrentResourceVersion() const override;

 private:
  // object_store.cpp
  absl::StatusOr<WriteResult> CreateLocked(const ResourceInfo& resource, std::string_view ns,
                                           nlohmann::json object, const WriteOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  absl::StatusOr<WriteResult> UpdateLocked(const ResourceInfo& resource, std::string_view ns,
                                           std::string_view name, nlohmann::json object,
                                           std::string_view subresource,
                                           const WriteOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  // The stored object the update `proposed` leads to (status/main-resource split, immutable
  // metadata, generation, schema).
  absl::StatusOr<nlohmann::json> MergeUpdateLocked(
      const ResourceInfo& resource, const nlohmann::json& existing, nlohmann::json proposed,
      std::string_view subresource, const WriteOptions& options, std::vector<std::string>& warnings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  absl::Status CheckNamespaceLocked(const ResourceInfo& resource, std::string_view ns,
                                    std::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);

  // store_delete.cpp
  absl::StatusOr<DeleteResult> DeleteLocked(const ResourceInfo& resource, const std::string& key,
                                            const DeleteRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  // Removes the object now: dependents per `policy`, CRD instances, an emptied terminating
  // namespace. Returns the object as its DELETED event carries it.
  absl::StatusOr<nlohmann::json> RemoveLocked(const ResourceInfo& resource, const std::string& key,
                                              const std::string& policy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  void DeleteDependentsLocked(const std::string& owner_uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  void OrphanDependentsLocked(const std::string& owner_uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  void DeleteNamespaceContentsLocked(const std::string& ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  void MaybeFinishNamespaceLocked(const std::string& ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  void ArmGraceTimerLocked(const ResourceInfo& resource, const std::string& key,
                           std::int64_t grace_seconds) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu);
  void TimerLoop() ABSL_LOCKS_EXCLUDED(core_->mu);

  std::shared_ptr<StoreCore> core_;
  std::uint64_t timers_epoch_ ABSL_GUARDED_BY(core_->mu) = 0;  // bumped when a timer is armed
};

// The ResourceInfo of a stored group resource ("pods", "trainingjobs.wavepool.dev"): the
// built-in, or the CRD's storage version.
std::optional<ResourceInfo> InfoForStorageLocked(const StoreCore& core,
                                                 const std::string& group_resource)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);

// What a list or a watch selects: a namespace ("" for all) and the selectors (store_list.cpp).
struct Selection {
  std::string ns;
  std::string group_resource;
  LabelSelector labels;
  FieldSelector fields;

  // BadRequest (400) for a selector the server cannot parse or a field it does not index.
  static absl::StatusOr<Selection> Make(const ResourceInfo& resource, std::string_view ns,
                                        const ListQuery& query);
  bool Matches(const nlohmann::json& object) const;
};

}  // namespace wavepool::testing::apiserver::store_internal

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STORE_IMPL_H_
