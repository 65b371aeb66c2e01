// Deterministic initial weights and per-sample random streams of the runtime's layer modules.
//
// Every random draw a layer makes is seeded from (model seed, layer name, what it is for): a
// parameter's path inside its layer, or a dropout mask's (step, global sample). Nothing is drawn
// from a shared generator, so that a layer's weights and masks do not depend on which other layers
// were built, in which order, or how a batch is split over ranks.
#ifndef WAVEPOOL_RUNTIME_SRC_MODELS_INIT_H_
#define WAVEPOOL_RUNTIME_SRC_MODELS_INIT_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace wavepool::runtime::internal {

// SplitMix64's finaliser: a bijective 64-bit mix, so that nearby inputs give unrelated seeds.
std::uint64_t Mix64(std::uint64_t value);
// Combines a running seed with one more value (order matters).
std::uint64_t MixSeed(std::uint64_t seed, std::uint64_t value);
// FNV-1a over the bytes of `text`: stable across builds, platforms and standard libraries (unlike
// std::hash).
std::uint64_t HashName(std::string_view text);

// A CPU generator seeded with `seed`.
torch::Generator MakeGenerator(std::uint64_t seed);

// The initial values of one layer's parameters, each drawn from its own generator seeded with
// (seed, layer name, parameter path). A value type; Scope("conv1") prefixes the paths of a
// sub-module's parameters ("conv1.weight").
class InitScope {
 public:
  InitScope(std::uint64_t seed, std::string layer);

  InitScope Scope(std::string_view child) const;
  // The seed of "<layer>.<prefix><name>".
  std::uint64_t SeedOf(std::string_view name) const;

  // torch.nn's default for Conv2d and Linear weights, kaiming_uniform_(a = sqrt(5)): uniform in
  // +-1/sqrt(fan_in); and for their biases the same bound.
  torch::Tensor KaimingUniform(std::string_view name, torch::IntArrayRef shape,
                               std::int64_t fan_in) const;
  // N(0, std^2), as BERT initialises its embedding tables (std 0.02).
  torch::Tensor Normal(std::string_view name, torch::IntArrayRef shape, double std) const;

 private:
  InitScope(std::uint64_t seed, std::string layer, std::string prefix);

  std::uint64_t seed_;
  std::string layer_;
  std::string prefix_;  // "" or "conv1."
};

}  // namespace wavepool::runtime::internal

#endif  // WAVEPOOL_RUNTIME_SRC_MODELS_INIT_H_
