// Weight codec throughput on one core (scalednn-data-movement §IV-C): encode and decode of 16 MiB
// of float32 weights (4 Mi values drawn like trained weights, N(0, 0.05)) through the in-place
// forms the runtime calls, in bytes of float32 per second. BM_Copy, a memcpy of the same 16 MiB,
// is the memory system's ceiling on this machine. Figures: docs/performance.md.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::runtime {
namespace {

constexpr std::size_t kInputBytes = std::size_t{16} << 20;
constexpr std::size_t kValues = kInputBytes / sizeof(float);

const std::vector<float>& Weights() {
  static const std::vector<float> weights = [] {
    std::mt19937 random(42);
    std::normal_distribution<float> weight(0.0f, 0.05f);
    std::vector<float> values(kValues);
    for (float& v : values) v = weight(random);
    return values;
  }();
  return weights;
}

void BM_Encode(benchmark::State& state) {
  const std::vector<float>& weights = Weights();
  std::vector<std::uint8_t> stream(EncodedWeightBytes(weights.size()));
  for (auto _ : state) {
    absl::Status status = EncodeWeightsInto(weights, absl::MakeSpan(stream));
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(stream.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kInputBytes));
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  absl::StatusOr<std::vector<std::uint8_t>> stream = EncodeWeights(Weights());
  if (!stream.ok()) {
    state.SkipWithError(std::string(stream.status().message()).c_str());
    return;
  }
  std::vector<float> values(kValues);
  for (auto _ : state) {
    absl::Status status = DecodeWeightsInto(*stream, absl::MakeSpan(values));
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(values.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kInputBytes));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

void BM_Copy(benchmark::State& state) {
  const std::vector<float>& weights = Weights();
  std::vector<float> copy(kValues);
  for (auto _ : state) {
    std::memcpy(copy.data(), weights.data(), kInputBytes);
    benchmark::DoNotOptimize(copy.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kInputBytes));
}
BENCHMARK(BM_Copy)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavepool::runtime

BENCHMARK_MAIN();
