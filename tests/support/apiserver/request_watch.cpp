// Watches as kube-apiserver streams them (k8s.io/apiserver pkg/endpoints/handlers/watch.go): a
// chunked 200 answer with one JSON watch event per line, {"type":"ADDED","object":{...}};
// BOOKMARK events when the client allows them; an ERROR event carrying the Status (410 Expired
// for a start that left the history) and then the end of the stream; the end of the stream at
// timeoutSeconds; a broken connection when the store drops its watches.
#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/apiserver/api_handler.h"
#include "tests/support/apiserver/api_status.h"
#include "tests/support/apiserver/table.h"

namespace wavepool::testing::apiserver {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// How often a quiet watch looks at its connection (a client that went away, a server stop).
constexpr milliseconds kPollInterval{200};

const char* EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
    case EventType::kBookmark:
      return "BOOKMARK";
  }
  return "ERROR";
}

// Encodes events for one watch; a Table watch sends each object as a one-row Table, with the
// column definitions only in the first one (watch.go sets NoHeaders after the first event).
class EventEncoder {
 public:
  EventEncoder(const ResourceInfo& resource, const TableRequest& table)
      : resource_(resource), table_(table) {}

  std::string Encode(const std::string& type, const nlohmann::json& object) {
    nlohmann::json encoded = object;
    if (table_.as_table && type != "ERROR") {
      if (type == "BOOKMARK") {
        encoded = ToTable(resource_, {}, nullptr, table_.include);
        encoded["rows"] = nlohmann::json::array();
        encoded["metadata"] = object.value("metadata", nlohmann::json::object());
      } else {
        encoded = ToTable(resource_, {object}, nullptr, table_.include);
      }
      if (headers_sent_) encoded["columnDefinitions"] = nullptr;
      headers_sent_ = true;
    }
    std::string line = nlohmann::json{{"type", type}, {"object", encoded}}.dump();
    line.push_back('\n');
    return line;
  }

  nlohmann::json Bookmark(std::int64_t resource_version) const {
    return {{"kind", resource_.kind},
            {"apiVersion", resource_.GroupVersion()},
            {"metadata", {{"resourceVersion", std::to_string(resource_version)}}}};
  }

 private:
  const ResourceInfo& resource_;
  const TableRequest table_;
  bool headers_sent_ = false;
};

absl::StatusOr<std::chrono::seconds> WatchTimeout(const HttpRequest& request,
                                                  std::chrono::seconds fallback) {
  const std::string text = request.Query("timeoutSeconds");
  if (text.empty()) return fallback;
  char* end = nullptr;
  const long long seconds = std::strtoll(text.c_str(), &end, 10);
  if (end == nullptr || *end != '\0' || seconds < 0) {
    return BadRequestFailure(absl::StrCat("invalid value for query parameter timeoutSeconds: \"",
                                          text, "\": must be a non-negative integer"));
  }
  // timeoutSeconds=0 means no timeout requested: the server's own limit applies.
  return seconds == 0 ? fallback : std::chrono::seconds(seconds);
}

HttpResponse StreamHead() {
  HttpResponse head;
  head.status = 200;
  head.content_type = "application/json";
  return head;
}

}  // namespace

void ApiHandler::Watch(const HttpRequest& request, const Target& target, HttpResponder& responder) {
  absl::StatusOr<TableRequest> table = ParseTableRequest(request);
  absl::StatusOr<ListQuery> query = ParseListQuery(request);
  absl::StatusOr<bool> bookmarks = ParseBoolQuery(request, "allowWatchBookmarks");
  absl::StatusOr<std::chrono::seconds> timeout =
      WatchTimeout(request, options_.default_watch_timeout);
  for (const absl::Status& status :
       {table.status(), query.status(), bookmarks.status(), timeout.status()}) {
    if (!status.ok()) {
      responder.Send(FailureResponse(status));
      return;
    }
  }
  // The deprecated watch of one object: a watch of the collection narrowed to its name.
  if (!target.path.name.empty()) {
    const std::string by_name = absl::StrCat("metadata.name=", target.path.name);
    query->field_selector =
        query->field_selector.empty() ? by_name : absl::StrCat(query->field_selector, ",", by_name);
  }
  EventEncoder encoder(target.resource, *table);
  absl::StatusOr<std::unique_ptr<StoreWatch>> watch =
      store_.Watch(target.resource, target.ns, *query);
  if (!watch.ok()) {
    // A start outside the history is not an HTTP failure: the stream opens and says 410 in an
    // ERROR event (watch.go, the watch cache), which is what reflectors look for.
    if (HttpCodeOf(watch.status()) != 410) {
      responder.Send(FailureResponse(watch.status()));
      return;
    }
    if (responder.StartStream(StreamHead()) &&
        responder.WriteChunk(encoder.Encode("ERROR", StatusBodyOf(watch.status())))) {
      responder.EndStream();
    }
    return;
  }
  StoreWatch& events = **watch;
  if (!responder.StartStream(StreamHead())) {
    events.Stop();
    return;
  }
  const auto deadline = steady_clock::now() + *timeout;
  auto next_bookmark = steady_clock::now() + options_.bookmark_interval;
  while (!responder.Cancelled()) {
    const auto now = steady_clock::now();
    if (now >= deadline) {
      responder.EndStream();
      break;
    }
    auto wait = std::min<steady_clock::duration>(deadline - now, kPollInterval);
    if (*bookmarks) wait = std::min<steady_clock::duration>(wait, next_bookmark - now);
    wait = std::max<steady_clock::duration>(wait, steady_clock::duration::zero());
    absl::StatusOr<std::optional<StoreEvent>> next =
        events.Next(std::chrono::duration_cast<milliseconds>(wait));
    if (!next.ok()) {
      if (next.status().code() == absl::StatusCode::kAborted) {
        responder.Abort();  // DropWatches: the client sees a broken connection
      } else if (next.status().code() == absl::StatusCode::kCancelled) {
        responder.EndStream();
      } else if (responder.WriteChunk(encoder.Encode("ERROR", StatusBodyOf(next.status())))) {
        responder.EndStream();
      }
      break;
    }
    bool written = true;
    if (next->has_value()) {
      const StoreEvent& event = **next;
      if (event.type != EventType::kBookmark || *bookmarks) {
        written = responder.WriteChunk(encoder.Encode(EventTypeName(event.type), event.object));
        if (event.type == EventType::kBookmark) {
          next_bookmark = steady_clock::now() + options_.bookmark_interval;
        }
      }
    }
    if (written && *bookmarks && steady_clock::now() >= next_bookmark) {
      written = responder.WriteChunk(
          encoder.Encode("BOOKMARK", encoder.Bookmark(events.BookmarkVersion())));
      next_bookmark = steady_clock::now() + options_.bookmark_interval;
    }
    if (!written) break;
  }
  events.Stop();
}

}  // namespace wavepool::testing::apiserver
