#include "wavepool/kube/work_queue.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/simulated_clock.h"

namespace wavepool::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::Optional;

WorkQueue::Options SimulatedOptions(testing::SimulatedClock& clock) {
  WorkQueue::Options options;
  options.clock = &clock;
  return options;
}

TEST(WorkQueue, DeduplicatesWaitingKeysAndKeepsFirstAddOrder) {
  WorkQueue queue;
  queue.Add("b");
  queue.Add("a");
  queue.Add("b");
  queue.Add("c");
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 3u);
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) {
    auto key = queue.Get();
    ASSERT_TRUE(key.has_value());
    order.push_back(*key);
    queue.Done(*key);
  }
  EXPECT_THAT(order, ElementsAre("b", "a", "c"));
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueue, KeyAddedWhileProcessingIsQueuedAgainOnlyAfterDone) {
  WorkQueue queue;
  queue.Add("a");
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Add("a");  // while "a" is being processed
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 0u) << "a key being processed must not be handed out again";
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueue, ShutDownHandsOutWhatWasQueuedThenReturnsNullopt) {
  WorkQueue queue;
  queue.Add("a");
  queue.ShutDown();
  queue.Add("b");  // ignored after shut-down
  EXPECT_TRUE(queue.ShuttingDown());
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueue, ShutDownWakesBlockedWorkers) {
  WorkQueue queue;
  std::vector<std::thread> workers;
  std::atomic<int> ended{0};
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      while (auto key = queue.Get()) queue.Done(*key);
      ++ended;
    });
  }
  queue.ShutDown();
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(ended.load(), 3);
}

TEST(WorkQueue, ShutDownWithDrainWaitsForKeysInFlight) {
  WorkQueue queue;
  queue.Add("a");
  queue.Add("b");
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    queue.ShutDownWithDrain();
    drained = true;
  });
  // "b" is still handed out during the drain; the drain cannot end while "a" and "b" are held.
  ASSERT_THAT(queue.Get(), Optional(std::string("b")));
  EXPECT_FALSE(drained.load());
  queue.Done("b");
  EXPECT_FALSE(drained.load());
  queue.Done("a");
  drainer.join();
  EXPECT_TRUE(drained.load());
  EXPECT_EQ(queue.Get(), std::nullopt);
}

TEST(WorkQueue, ConcurrentWorkersNeverHoldTheSameKeyAtOnce) {
  WorkQueue queue;
  constexpr int kWorkers = 4;
  constexpr int kKeys = 5;
  constexpr int kAddsPerProducer = 400;
  std::mutex mu;
  std::set<std::string> in_flight;
  std::map<std::string, int> processed;
  std::atomic<int> overlaps{0};

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.Get()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!in_flight.insert(*key).second) ++overlaps;
          ++processed[*key];
        }
        std::this_thread::yield();  // widen the window another worker could slip into
        {
          std::lock_guard<std::mutex> lock(mu);
          in_flight.erase(*key);
        }
        queue.Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kAddsPerProducer; ++i)
        queue.Add("key-" + std::to_string((i + p) % kKeys));
    });
  }
  for (auto& producer : producers) producer.join();
  queue.ShutDownWithDrain();
  queue.ShutDown();
  for (auto& worker : workers) worker.join();

  EXPECT_EQ(overlaps.load(), 0);
  // Every key was added after the last time it could have been processed, so each was
  // processed at least once; de-duplication means far fewer than 800 runs in total.
  ASSERT_EQ(processed.size(), static_cast<std::size_t>(kKeys));
  for (const auto& [key, runs] : processed) EXPECT_GE(runs, 1) << key;
}

TEST(WorkQueue, AddAfterWaitsForTheSimulatedClock) {
  testing::SimulatedClock clock;
  WorkQueue queue(SimulatedOptions(clock));
  queue.AddAfter("late", milliseconds(50));
  queue.AddAfter("later", milliseconds(80));
  queue.AddAfter("late", milliseconds(500));  // the earlier time wins
  clock.Advance(milliseconds(49));
  queue.Add("now");
  // "late" is not due at 49 ms, so the key added now comes first.
  EXPECT_THAT(queue.Get(), Optional(std::string("now")));
  clock.Advance(milliseconds(1));
  EXPECT_THAT(queue.Get(), Optional(std::string("late")));
  clock.Advance(milliseconds(29));
  queue.Add("marker");
  EXPECT_THAT(queue.Get(), Optional(std::string("marker")));
  clock.Advance(milliseconds(1));
  EXPECT_THAT(queue.Get(), Optional(std::string("later")));
}

TEST(WorkQueue, AddRateLimitedBacksOffExponentiallyUntilForget) {
  testing::SimulatedClock clock;
  WorkQueue queue(SimulatedOptions(clock));
  // 5 ms, 10 ms, 20 ms, 40 ms: each retry is handed out exactly when its delay ends, not before.
  for (const milliseconds delay :
       {milliseconds(5), milliseconds(10), milliseconds(20), milliseconds(40)}) {
    queue.AddRateLimited("a");
    clock.Advance(delay - milliseconds(1));
    queue.Add("probe");
    ASSERT_THAT(queue.Get(), Optional(std::string("probe"))) << "after " << delay.count() << " ms";
    queue.Done("probe");
    clock.Advance(milliseconds(1));
    ASSERT_THAT(queue.Get(), Optional(std::string("a")));
    queue.Done("a");
  }
  EXPECT_EQ(queue.NumRequeues("a"), 4);
  queue.Forget("a");
  EXPECT_EQ(queue.NumRequeues("a"), 0);
  queue.AddRateLimited("a");  // back to 5 ms
  clock.Advance(milliseconds(5));
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
}

TEST(WorkQueue, BucketHoldsTheHundredAndFirstKeyForATenthOfASecond) {
  testing::SimulatedClock clock;
  WorkQueue queue(SimulatedOptions(clock));
  for (int i = 0; i < 101; ++i) queue.AddRateLimited("key-" + std::to_string(i));
  // The first 100 keys wait their own 5 ms; the 101st finds the 10 qps bucket empty: 100 ms.
  clock.Advance(milliseconds(5));
  for (int i = 0; i < 100; ++i) {
    ASSERT_THAT(queue.Get(), Optional("key-" + std::to_string(i)));
  }
  clock.Advance(milliseconds(94));  // 99 ms
  queue.Add("probe");
  EXPECT_THAT(queue.Get(), Optional(std::string("probe")));
  clock.Advance(milliseconds(1));  // 100 ms
  EXPECT_THAT(queue.Get(), Optional(std::string("key-100")));
}

TEST(WorkQueue, LongBackoffIsCappedAtThousandSeconds) {
  testing::SimulatedClock clock;
  WorkQueue queue(SimulatedOptions(clock));
  // 5 ms * 2^18 > 1000 s: the 19th and later retries wait exactly 1000 s.
  for (int i = 0; i < 25; ++i) queue.AddRateLimited("a");  // only the earliest stays queued
  // The first call's 5 ms delay is the one waiting; hand it out and fail again.
  clock.Advance(milliseconds(5));
  ASSERT_THAT(queue.Get(), Optional(std::string("a")));
  queue.Done("a");
  queue.AddRateLimited("a");  // 26th failure: capped
  clock.Advance(seconds(1000) - milliseconds(1));
  queue.Add("probe");
  EXPECT_THAT(queue.Get(), Optional(std::string("probe")));
  clock.Advance(milliseconds(1));
  EXPECT_THAT(queue.Get(), Optional(std::string("a")));
}

}  // namespace
}  // namespace wavepool::kube
