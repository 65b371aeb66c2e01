// Waiting in tests for what other threads or processes will do (informer caches catching up, a
// server answering, a binary writing a file): polls a predicate on the real clock. The timeout
// only keeps a broken component from hanging the test; it is never a statement about speed.
//   EXPECT_TRUE(Eventually([&] { return cache.Get("ns/a").has_value(); }));
#ifndef WAVEPOOL_TESTS_SUPPORT_EVENTUALLY_H_
#define WAVEPOOL_TESTS_SUPPORT_EVENTUALLY_H_

#include <chrono>
#include <functional>
#include <thread>

namespace wavepool::testing {

// Calls `done` every `interval` until it returns true or `timeout` passes, then once more; returns
// its last answer.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::nanoseconds timeout = std::chrono::seconds(30),
                       std::chrono::nanoseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(interval);
  }
  return done();
}

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_EVENTUALLY_H_
