// SampleOrder: each epoch a bijection of the dataset, a different one per epoch, computed from
// (seed, step, position) alone.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "wavepool/runtime/batch_loader.h"

namespace wavepool::runtime {
namespace {

// The dataset indices of epoch `epoch`, read step by step through positions.
std::vector<std::int64_t> Epoch(const SampleOrder& order, std::int64_t size, std::int64_t epoch) {
  std::vector<std::int64_t> indices;
  for (std::int64_t g = epoch * size; g < (epoch + 1) * size; ++g) {
    indices.push_back(order.Index(g / order.samples_per_step(), g % order.samples_per_step()));
  }
  return indices;
}

TEST(SampleOrder, EveryEpochIsAPermutationOfTheDataset) {
  for (const std::int64_t size : {1, 2, 7, 1000, 50000}) {
    // Steps of 3 samples never line up with the epochs (except for size 1).
    const SampleOrder order(/*seed=*/42, size, /*samples_per_step=*/3);
    for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<bool> seen(static_cast<std::size_t>(size));
      for (const std::int64_t index : Epoch(order, size, epoch)) {
        ASSERT_GE(index, 0) << "size " << size;
        ASSERT_LT(index, size) << "size " << size;
        ASSERT_FALSE(seen[static_cast<std::size_t>(index)])
            << "size " << size << " epoch " << epoch << " repeats " << index;
        seen[static_cast<std::size_t>(index)] = true;
      }
    }
  }
}

TEST(SampleOrder, ConsecutiveEpochsAreDifferentShuffles) {
  for (const std::int64_t size : {7, 1000, 50000}) {
    const SampleOrder order(9, size, 64);
    std::vector<std::int64_t> previous = Epoch(order, size, 0);
    for (std::int64_t epoch = 1; epoch < 4; ++epoch) {
      const std::vector<std::int64_t> current = Epoch(order, size, epoch);
      EXPECT_NE(current, previous) << "size " << size << " epoch " << epoch;
      previous = current;
    }
  }
  // Shuffled, not near the identity: few samples keep their place (about one expected).
  const std::vector<std::int64_t> epoch = Epoch(SampleOrder(9, 50000, 64), 50000, 0);
  int fixed = 0;
  for (std::size_t i = 0; i < epoch.size(); ++i) fixed += epoch[i] == static_cast<std::int64_t>(i);
  EXPECT_LT(fixed, 20);
}

TEST(SampleOrder, DependsOnTheSeedAndTheGlobalPositionOnly) {
  const SampleOrder a(5, 1000, 8);
  const SampleOrder same(5, 1000, 8);
  const SampleOrder halves(5, 1000, 4);  // the same sequence cut into steps of 4
  const SampleOrder other_seed(6, 1000, 8);
  int differ = 0;
  for (std::int64_t step = 0; step < 300; ++step) {  // past two epochs
    for (std::int64_t p = 0; p < 8; ++p) {
      EXPECT_EQ(a.Index(step, p), same.Index(step, p));
      EXPECT_EQ(a.Index(step, p), halves.Index(2 * step + p / 4, p % 4));
      differ += a.Index(step, p) != other_seed.Index(step, p);
    }
  }
  EXPECT_GT(differ, 2000);
}

}  // namespace
}  // namespace wavepool::runtime
