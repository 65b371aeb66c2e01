#include "tests/api/api_fixtures.h"

#include "wavepool/api/defaults.h"

namespace wavepool::api::testing {

TrainingJob ValidForegroundJob() {
  TrainingJob job;
  job.metadata.name = "vgg";
  job.spec.role = Role::kForeground;
  job.spec.model.name = "vgg16";
  job.spec.global_batch_size = 32;
  job.spec.gpus = 8;
  job.spec.steps = 100;
  SetDefaults(&job);
  return job;
}

TrainingJob ValidBackgroundJob() {
  TrainingJob job;
  job.metadata.name = "rn";
  job.spec.role = Role::kBackground;
  job.spec.model.name = "resnet50";
  job.spec.global_batch_size = 64;
  job.spec.gpus = 1;
  job.spec.steps = 1000;
  job.spec.checkpoint.path = "/ckpt/rn";
  SetDefaults(&job);
  return job;
}

GpuNode ValidGpuNode() {
  GpuNode node;
  node.metadata.name = "node-a";
  node.spec.node_name = "node-a";
  GpuStatus gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-aaaa";
  gpu.model = "NVIDIA A100-SXM4-80GB";
  gpu.memory_bytes = 85899345920;
  gpu.occupancy = {0.5, 0.25};
  gpu.memory_wave = MemoryWave{60000000000, 20000000000, 0.25, 0.125, 25899345920};
  gpu.tasks.push_back({"team-a", "vgg", "vgg-0", Role::kForeground, 4242, std::nullopt});
  node.status.gpus.push_back(gpu);
  gpu.index = 1;
  gpu.uuid = "GPU-bbbb";
  gpu.tasks.clear();
  node.status.gpus.push_back(gpu);
  node.status.heartbeat_time = "2026-05-01T10:00:00Z";
  return node;
}

}  // namespace wavepool::api::testing
