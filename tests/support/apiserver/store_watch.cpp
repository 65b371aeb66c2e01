// Watches replay the store's history from their start resourceVersion (the watch cache's
// behaviour): ADDED/MODIFIED/DELETED for the objects they select, DELETED when a modification
// takes an object out of the selection and ADDED when one brings it in. A start older than the
// history fails with 410 Expired, "too old resource version: <asked> (<oldest kept>)".
#include <algorithm>
#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/store_impl.h"

namespace wavepool::testing::apiserver::store_internal {
namespace {

class StoreWatchImpl final : public StoreWatch {
 public:
  StoreWatchImpl(std::shared_ptr<StoreCore> core, ResourceInfo resource, Selection selection,
                 std::int64_t start, std::uint64_t epoch, std::deque<StoreEvent> initial)
      : core_(std::move(core)),
        resource_(std::move(resource)),
        selection_(std::move(selection)),
        cursor_(start),
        epoch_(epoch),
        pending_(std::move(initial)) {}

  absl::StatusOr<std::optional<StoreEvent>> Next(std::chrono::milliseconds wait) override {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    absl::MutexLock lock(&core_->mu);
    for (;;) {
      if (stopped_) return absl::CancelledError("watch stopped");
      if (epoch_ != core_->drop_epoch) return absl::AbortedError("watch dropped by the server");
      if (!pending_.empty()) {
        StoreEvent event = std::move(pending_.front());
        pending_.pop_front();
        return std::optional<StoreEvent>(std::move(event));
      }
      if (cursor_ < core_->history_floor) {
        return ExpiredFailure(
            absl::StrCat("too old resource version: ", cursor_, " (", core_->history_floor, ")"));
      }
      if (std::optional<StoreEvent> event = ScanLocked(); event.has_value()) return event;
      const auto left = deadline - std::chrono::steady_clock::now();
      if (core_->changed.WaitWithTimeout(&core_->mu, absl::FromChrono(left))) {
        // One last look: a write may have landed with the timeout.
        if (stopped_ || epoch_ != core_->drop_epoch || cursor_ < core_->history_floor) continue;
        if (std::optional<StoreEvent> event = ScanLocked(); event.has_value()) return event;
        return std::optional<StoreEvent>();
      }
    }
  }

  std::int64_t BookmarkVersion() const override {
    absl::MutexLock lock(&core_->mu);
    return cursor_;
  }

  void Stop() override {
    absl::MutexLock lock(&core_->mu);
    stopped_ = true;
    core_->changed.SignalAll();
  }

 private:
  // The next event for this watch after the cursor, advancing the cursor past what it skips.
  std::optional<StoreEvent> ScanLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu) {
    auto it = std::upper_bound(
        core_->history.begin(), core_->history.end(), cursor_,
        [](std::int64_t rv, const HistoryEntry& e) { return rv < e.resource_version; });
    for (; it != core_->history.end(); ++it) {
      cursor_ = it->resource_version;
      if (std::optional<StoreEvent> event = Translate(*it); event.has_value()) return event;
    }
    cursor_ = std::max(cursor_, core_->resource_version);
    return std::nullopt;
  }

  std::optional<StoreEvent> Translate(const HistoryEntry& entry) const {
    if (entry.resource != resource_.GroupResource()) return std::nullopt;
    const bool now_in = selection_.Matches(entry.object);
    const bool was_in = entry.type == EventType::kModified && selection_.Matches(entry.previous);
    EventType type = entry.type;
    if (entry.type == EventType::kModified) {
      if (!now_in && !was_in) return std::nullopt;
      if (!was_in) type = EventType::kAdded;
      if (!now_in) type = EventType::kDeleted;
    } else if (!now_in) {
      return std::nullopt;
    }
    return StoreEvent{type, AsServed(resource_, entry.object), entry.resource_version};
  }

  std::shared_ptr<StoreCore> core_;
  const ResourceInfo resource_;
  const Selection selection_;
  std::int64_t cursor_ ABSL_GUARDED_BY(core_->mu);
  std::uint64_t epoch_ ABSL_GUARDED_BY(core_->mu);
  std::deque<StoreEvent> pending_ ABSL_GUARDED_BY(core_->mu);
  bool stopped_ ABSL_GUARDED_BY(core_->mu) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<StoreWatch>> StoreImpl::Watch(const ResourceInfo& resource,
                                                             std::string_view ns,
                                                             const ListQuery& query) {
  absl::StatusOr<Selection> selection = Selection::Make(resource, ns, query);
  if (!selection.ok()) return selection.status();
  absl::MutexLock lock(&core_->mu);
  absl::StatusOr<ResourceInfo> info = ResolveLocked(*core_, resource);
  if (!info.ok()) return info.status();
  std::deque<StoreEvent> initial;
  std::int64_t start = core_->resource_version;
  const std::string& rv = query.resource_version;
  if (rv.empty() || rv == "0") {
    // "Get State and Start at Most Recent": the current objects as ADDED, then the changes.
    auto bucket = core_->objects.find(info->GroupResource());
    if (bucket != core_->objects.end()) {
      for (const auto& [key, object] : bucket->second) {
        if (!selection->Matches(object)) continue;
        std::int64_t object_rv = 0;
        (void)absl::SimpleAtoi(MetaString(object, "resourceVersion"), &object_rv);
        initial.push_back({EventType::kAdded, AsServed(*info, object), object_rv});
      }
    }
  } else if (!absl::SimpleAtoi(rv, &start) || start < 0) {
    return BadRequestFailure(absl::StrCat("invalid resource version: \"", rv, "\""));
  }
  return std::unique_ptr<StoreWatch>(std::make_unique<StoreWatchImpl>(
      core_, *info, *std::move(selection), start, core_->drop_epoch, std::move(initial)));
}

std::int64_t StoreImpl::CurrentResourceVersion() const {
  absl::MutexLock lock(&core_->mu);
  return core_->resource_version;
}

void StoreImpl::DropWatches() {
  absl::MutexLock lock(&core_->mu);
  ++core_->drop_epoch;
  core_->changed.SignalAll();
}

void StoreImpl::Compact() {
  absl::MutexLock lock(&core_->mu);
  core_->history.clear();
  core_->history_floor = core_->resource_version;
  core_->changed.SignalAll();
}

}  // namespace wavepool::testing::apiserver::store_internal
