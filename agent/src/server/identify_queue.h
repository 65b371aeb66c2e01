// The first step of every Register, SessionHandler::IdentifyPeer, run off the socket server's
// event loop: it may wait for the identity source (the API server, for a pod it has not listed
// yet), and the loop must keep serving every other connection meanwhile. Requests wait in arrival
// order for one of a few threads of the queue's own; answers wait for the loop, which the `wake`
// callback tells that one is ready.
//
// Invariants (kept by the server): a waiting request belongs to an open connection that sent
// Register and has not been answered, and Cancel drops it when that connection closes; so at most
// Options::max_unregistered requests wait, plus one under way per thread.
//
// Thread safety: safe for concurrent use. Ownership: borrows the handler, which must outlive the
// queue; Stop (or the destructor) joins the threads, after the IdentifyPeer calls under way return.
#ifndef WAVEPOOL_AGENT_SRC_SERVER_IDENTIFY_QUEUE_H_
#define WAVEPOOL_AGENT_SRC_SERVER_IDENTIFY_QUEUE_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent::internal {

class IdentifyQueue {
 public:
  struct Request {
    SessionId session = 0;
    PeerCredentials peer;
    RegisterRequest request;  // without its descriptor: the connection keeps that
  };
  struct Answer {
    SessionId session = 0;
    absl::StatusOr<std::optional<WorkerIdentity>> identity;
  };

  // Starts `threads` threads. `wake` is called (from them) after each answer is stored.
  // REQUIRES: handler != nullptr, threads >= 1.
  IdentifyQueue(SessionHandler* handler, std::size_t threads, std::function<void()> wake);
  ~IdentifyQueue();
  IdentifyQueue(const IdentifyQueue&) = delete;
  IdentifyQueue& operator=(const IdentifyQueue&) = delete;

  void Submit(Request request);
  // Drops the request of `session` if no thread has taken it yet. An answer already under way is
  // still stored; the loop drops it when it finds no connection waiting for it.
  void Cancel(SessionId session);
  // The answers stored since the last call, oldest first.
  std::vector<Answer> TakeAnswers();
  // Lets the waiting requests go unanswered, waits for the calls under way and joins the
  // threads. Idempotent. REQUIRES: not called from IdentifyPeer.
  void Stop();

 private:
  void Work();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SessionHandler* const handler_;
  const std::function<void()> wake_;
  std::vector<std::thread> threads_;  // set in the constructor, joined by Stop

  absl::Mutex mu_;
  std::deque<Request> waiting_ ABSL_GUARDED_BY(mu_);
  std::vector<Answer> answers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_SERVER_IDENTIFY_QUEUE_H_
