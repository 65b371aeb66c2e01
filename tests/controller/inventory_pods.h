// The pods an Inventory counts on each GPU, for comparing inventories in tests.
#ifndef WAVEPOOL_TESTS_CONTROLLER_INVENTORY_PODS_H_
#define WAVEPOOL_TESTS_CONTROLLER_INVENTORY_PODS_H_

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "wavepool/controller/placement.h"

namespace wavepool::controller {

// The pods on each GPU, by UUID, in pod-name order.
inline std::map<std::string, std::vector<std::string>> PodsByGpu(const Inventory& inv) {
  std::map<std::string, std::vector<std::string>> pods;
  for (const Inventory::Gpu& gpu : inv.gpus()) {
    std::vector<std::string>& on_gpu = pods[gpu.uuid];
    for (const std::size_t h : gpu.holders) on_gpu.push_back(inv.assignment(h).pod);
    std::sort(on_gpu.begin(), on_gpu.end());
  }
  return pods;
}

}  // namespace wavepool::controller

#endif  // WAVEPOOL_TESTS_CONTROLLER_INVENTORY_PODS_H_
