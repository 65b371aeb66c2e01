// Watch streams: the API server's newline-delimited watch events, decoded
// ({"type":"ADDED","object":{...}}).
#ifndef WAVEPOOL_KUBE_WATCH_H_
#define WAVEPOOL_KUBE_WATCH_H_

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/kube/transport.h"

namespace wavepool::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object; for kBookmark only its kind, apiVersion and metadata.resourceVersion; for kError
  // the metav1.Status.
  nlohmann::json object;
};

// One line of a watch stream. InvalidArgument (naming the problem) for a line that is not a watch
// event.
absl::StatusOr<WatchEvent> DecodeWatchEvent(std::string_view line);

// The events of one watch request. Next is called from one thread at a time; Stop from any.
class WatchStream {
 public:
  explicit WatchStream(std::unique_ptr<LineReader> reader);

  // The next ADDED, MODIFIED, DELETED or BOOKMARK event. nullopt: the server ended the stream
  // (its timeout, or it restarted): watch again from the last resourceVersion seen. An ERROR
  // event is returned as its status (IsGone for 410: the resourceVersion is too old, list again).
  // Unavailable: the connection broke. Cancelled: Stop() was called.
  absl::StatusOr<std::optional<WatchEvent>> Next();

  void Stop();

 private:
  std::unique_ptr<LineReader> reader_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_WATCH_H_
