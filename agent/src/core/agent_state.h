// The Agent's private state (agent.h declares Agent::Task and Agent::Gpu): shared by the files
// that implement the Agent, its sessions in agent.cpp and its control loop in control_loop.cpp.
// Both structs are guarded by the Agent's mu_; a Task lives from its Register to its session's
// close, a Gpu as long as the Agent.
#ifndef WAVEPOOL_AGENT_SRC_CORE_AGENT_STATE_H_
#define WAVEPOOL_AGENT_SRC_CORE_AGENT_STATE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "wavepool/agent/agent.h"

namespace wavepool::agent {

struct Agent::Task {
  SessionId session = 0;
  TaskLabels labels;
  std::int32_t pid = 0;
  SlotGrant slot;
  std::uint32_t requested_credits = 0;
  std::uint32_t credit_limit = 0;
  std::uint32_t batch_size = 0;                // background: as registered
  std::uint32_t recommended_batch_size = 0;    // background: 0 = keep
  std::unique_ptr<BackgroundAdvisor> advisor;  // background
  std::unique_ptr<SlowdownFeedback> feedback;  // foreground
  TaskMetrics* metrics = nullptr;              // owned by the AgentMetrics
  std::deque<MemorySample> memory;             // the worker's allocator samples, recent
  // What each of the task's waves holds (ReportWaveMemory; tick-tock's tick and tock), recent.
  std::map<std::uint8_t, std::deque<MemorySample>> wave_memory;
  // The last ReportIteration, published as the task's progress in the GPUNode.
  std::optional<ReportIteration> last_iteration;
};

struct Agent::Gpu {
  GpuInfo info;
  std::unique_ptr<GateSegment> gate;
  GpuMetrics* metrics = nullptr;  // owned by the AgentMetrics
  std::deque<GpuSample> samples;  // the wave window
  std::optional<MemoryWave> wave;
  std::optional<Seconds> phase_offset;
  std::optional<double> phase_offset_ratio;
  std::optional<double> foreground_occupancy, background_occupancy;
  MonotonicTime last_wave;  // the clock's epoch before the first
  MonotonicTime last_advice;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_SRC_CORE_AGENT_STATE_H_
