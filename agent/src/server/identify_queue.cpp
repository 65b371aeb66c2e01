#include "server/identify_queue.h"

#include <algorithm>
#include <utility>

namespace wavepool::agent::internal {

IdentifyQueue::IdentifyQueue(SessionHandler* handler, std::size_t threads,
                             std::function<void()> wake)
    : handler_(handler), wake_(std::move(wake)) {
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

IdentifyQueue::~IdentifyQueue() { Stop(); }

void IdentifyQueue::Submit(Request request) {
  absl::MutexLock lock(&mu_);
  waiting_.push_back(std::move(request));
}

void IdentifyQueue::Cancel(SessionId session) {
  absl::MutexLock lock(&mu_);
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [&](const Request& r) { return r.session == session; }),
                 waiting_.end());
}

std::vector<IdentifyQueue::Answer> IdentifyQueue::TakeAnswers() {
  absl::MutexLock lock(&mu_);
  return std::exchange(answers_, {});
}

void IdentifyQueue::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    waiting_.clear();
  }
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

bool IdentifyQueue::HasWorkOrStopping() const { return stopping_ || !waiting_.empty(); }

void IdentifyQueue::Work() {
  for (;;) {
    Request next;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &IdentifyQueue::HasWorkOrStopping));
      if (stopping_) return;
      next = std::move(waiting_.front());
      waiting_.pop_front();
    }
    // Unlocked: this is the call that may wait for the identity source.
    Answer answer{next.session, handler_->IdentifyPeer(next.peer, next.request)};
    {
      absl::MutexLock lock(&mu_);
      answers_.push_back(std::move(answer));
    }
    wake_();
  }
}

}  // namespace wavepool::agent::internal
