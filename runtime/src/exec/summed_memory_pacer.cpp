#include "summed_memory_pacer.h"

namespace wavepool::runtime {

class SummedMemoryPacers::View final : public ForwardingLaunchPacer {
 public:
  View(const SummedMemoryPacers& owner, int index)
      : ForwardingLaunchPacer(*owner.pacer_), owner_(owner), index_(index) {}

  void ReportMemory(std::uint64_t allocated_bytes) override {
    owner_.bytes_[static_cast<std::size_t>(index_)].store(allocated_bytes,
                                                          std::memory_order_relaxed);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < owner_.views_.size(); ++i) {
      sum += owner_.bytes_[i].load(std::memory_order_relaxed);
    }
    ForwardingLaunchPacer::ReportMemory(sum);
    ForwardingLaunchPacer::ReportWaveMemory(index_, allocated_bytes);
  }

 private:
  const SummedMemoryPacers& owner_;
  const int index_;
};

SummedMemoryPacers::SummedMemoryPacers(LaunchPacer* pacer, int views)
    : pacer_(pacer), bytes_(new std::atomic<std::uint64_t>[static_cast<std::size_t>(views)]) {
  for (int i = 0; i < views; ++i) {
    bytes_[static_cast<std::size_t>(i)].store(0, std::memory_order_relaxed);
    views_.push_back(std::make_unique<View>(*this, i));
  }
}

SummedMemoryPacers::~SummedMemoryPacers() = default;

LaunchPacer* SummedMemoryPacers::view(int i) const {
  return views_[static_cast<std::size_t>(i)].get();
}

}  // namespace wavepool::runtime
