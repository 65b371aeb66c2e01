// One CUDA MPS control daemon per shared GPU, so that foreground and background processes run
// their kernels concurrently on it; background clients get the below-normal client priority
// (launch_policy.h). Where MPS is missing the agent runs without it and says so.
//
// Not thread-safe: the agent starts and stops it from one thread; the queries are const.
#ifndef WAVEPOOL_AGENT_MPS_CONTROL_H_
#define WAVEPOOL_AGENT_MPS_CONTROL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "wavepool/agent/command_runner.h"

namespace wavepool::agent {

struct MpsGpu {
  std::uint32_t index = 0;
  std::string uuid;
};

enum class MpsMode { kAuto, kOn, kOff };

class MpsControl {
 public:
  struct Options {
    std::string directory;  // the agent's host directory: pipes in <directory>/mps/<gpu>/pipe
    std::string control_program = "nvidia-cuda-mps-control";
    MpsMode mode = MpsMode::kAuto;
  };
  // Borrows `runner`, which must outlive this object.
  MpsControl(Options options, CommandRunner* runner);
  ~MpsControl();

  // Starts a daemon for every GPU (`nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES set to
  // the GPU's UUID and its own pipe and log directories). A daemon a previous agent left (its
  // control pipe is there and answers get_server_list) is adopted instead; a dead one's control
  // files are removed first. The directories are made without following links (a pod may plant
  // one): a GPU whose directory is a link runs without MPS, with the reason. In kAuto a missing
  // program turns MPS off; in kOn it is an error for the GPU. A GPU whose daemon fails runs without
  // MPS.
  void Start(const std::vector<MpsGpu>& gpus);
  // Asks every daemon to quit ("quit" on its control pipe).
  void Stop();

  // The pipe directory a GPU's clients must use (CUDA_MPS_PIPE_DIRECTORY), empty without MPS.
  std::string PipeDirectory(std::uint32_t gpu_index) const;
  // GPUs with a running daemon.
  std::size_t running() const { return pipes_.size(); }
  // One line for the agent's status: "MPS on 2 of 2 GPUs", "MPS off: nvidia-cuda-mps-control not
  // found", "MPS on 1 of 2 GPUs; GPU 1: <error>".
  std::string Status() const;

 private:
  std::vector<std::string> Environment(const MpsGpu& gpu) const;
  // Takes over a daemon a previous agent left on `gpu`; false when there is none that answers.
  bool Adopt(const MpsGpu& gpu, const std::string& pipe_directory);

  Options options_;
  CommandRunner* runner_;
  std::vector<MpsGpu> gpus_;
  std::map<std::uint32_t, std::string> pipes_;   // running daemons
  std::map<std::uint32_t, std::string> errors_;  // GPUs without one, and why
  std::string off_reason_;
  std::size_t adopted_ = 0;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_MPS_CONTROL_H_
