#include "init.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <utility>

namespace wavepool::runtime::internal {

std::uint64_t Mix64(std::uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

std::uint64_t MixSeed(std::uint64_t seed, std::uint64_t value) {
  return Mix64(Mix64(seed) ^ value);
}

std::uint64_t HashName(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;  // FNV prime
  }
  return hash;
}

torch::Generator MakeGenerator(std::uint64_t seed) { return at::detail::createCPUGenerator(seed); }

InitScope::InitScope(std::uint64_t seed, std::string layer)
    : InitScope(seed, std::move(layer), std::string()) {}

InitScope::InitScope(std::uint64_t seed, std::string layer, std::string prefix)
    : seed_(seed), layer_(std::move(layer)), prefix_(std::move(prefix)) {}

InitScope InitScope::Scope(std::string_view child) const {
  return InitScope(seed_, layer_, prefix_ + std::string(child) + ".");
}

std::uint64_t InitScope::SeedOf(std::string_view name) const {
  const std::string path = layer_ + "." + prefix_ + std::string(name);
  return MixSeed(seed_, HashName(path));
}

torch::Tensor InitScope::KaimingUniform(std::string_view name, torch::IntArrayRef shape,
                                        std::int64_t fan_in) const {
  // gain sqrt(2 / (1 + a^2)) with a = sqrt(5) is sqrt(1/3); bound = gain * sqrt(3 / fan_in).
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  torch::Generator generator = MakeGenerator(SeedOf(name));
  return torch::empty(shape, torch::kFloat32).uniform_(-bound, bound, generator);
}

torch::Tensor InitScope::Normal(std::string_view name, torch::IntArrayRef shape, double std) const {
  torch::Generator generator = MakeGenerator(SeedOf(name));
  return torch::empty(shape, torch::kFloat32).normal_(0.0, std, generator);
}

}  // namespace wavepool::runtime::internal
