// Records core/v1 Events about objects, as client-go's tools/record does for controllers:
//
//   EventRecorder recorder(client, "wavepool-controller", pod_name);
//   recorder.Event(job, EventType::kWarning, "PlanFailed", "spec.gpus: must be >= 1, got 0");
//
// Each Event is named "<object name>.<unix nanoseconds in hex>" in the object's namespace
// ("default" for cluster-scoped objects) and carries involvedObject, source {component, host},
// reportingComponent/reportingInstance, firstTimestamp, lastTimestamp and count. The same
// object, type, reason and message again is not a new Event: the existing one gets count + 1
// and a new lastTimestamp by a merge PATCH (client-go's EventCorrelator de-duplication; an Event
// that has meanwhile disappeared is created anew).
//
// Recording never blocks and never fails for the caller: Event only queues (a bounded queue; when
// it is full the event is dropped and a line logged), one thread writes, and API errors are
// logged. An EventRecorder is safe for concurrent use; the destructor writes what is queued (each
// request bounded by the client's timeout) and joins the thread. `client` outlives it.
#ifndef WAVEPOOL_KUBE_EVENT_RECORDER_H_
#define WAVEPOOL_KUBE_EVENT_RECORDER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"

namespace wavepool::kube {

enum class EventType { kNormal, kWarning };

class EventRecorder {
 public:
  struct Options {
    std::size_t queue_capacity = 1000;  // events waiting to be written
    std::size_t cache_size = 4096;      // Events remembered for de-duplication (least recent go)
    std::function<void(std::string_view)> log;  // empty: standard error
    Clock* clock = nullptr;  // stamps the Events' times (WallNow); nullptr: RealClock()
  };

  // `component` is source.component and reportingComponent; `host` source.host and
  // reportingInstance.
  EventRecorder(Client& client, std::string component, std::string host);
  EventRecorder(Client& client, std::string component, std::string host, Options options);
  ~EventRecorder();

  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // `object` is the object itself (its apiVersion, kind and metadata are used) or an
  // ObjectReference (apiVersion, kind, namespace, name, uid, fieldPath). An object without a name
  // is logged and dropped.
  void Event(const nlohmann::json& object, EventType type, std::string_view reason,
             std::string_view message);

  // Blocks until every event queued before the call has been written or has failed.
  void Flush();

  // Events dropped because the queue was full or the object had no name.
  std::size_t dropped() const;

 private:
  struct Pending {
    nlohmann::json involved;  // the ObjectReference
    std::string type;
    std::string reason;
    std::string message;
    WallTime time;
  };
  struct Recorded {
    std::string ns;
    std::string name;
    std::int64_t count = 0;
    std::list<std::string>::iterator lru;  // position in lru_
  };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  void Write(const Pending& pending) ABSL_LOCKS_EXCLUDED(mu_);
  bool Create(const Pending& pending, const std::string& key);
  std::string NextName(const std::string& object_name, WallTime time);
  void Remember(const std::string& key, Recorded recorded);
  void Log(std::string_view message) const;

  // Constant after construction.
  Client& client_;
  const std::string component_;
  const std::string host_;
  const Options options_;
  Clock& clock_;

  // The writer thread's own: de-duplication cache and name uniqueness.
  std::unordered_map<std::string, Recorded> recorded_;
  std::list<std::string> lru_;  // most recent first
  std::int64_t last_name_nanos_ = 0;

  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  std::uint64_t queued_total_ ABSL_GUARDED_BY(mu_) = 0;
  std::uint64_t done_total_ ABSL_GUARDED_BY(mu_) = 0;
  std::size_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_EVENT_RECORDER_H_
