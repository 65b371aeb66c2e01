// `wavepool plan`: plans a model on a device and prints the plan as a table, a strategy
// comparison, or the Plan document the runtime consumes.
#ifndef WAVEPOOL_CLI_PLAN_COMMAND_H_
#define WAVEPOOL_CLI_PLAN_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace wavepool::cli {

struct PlanFlags {
  std::string model;        // a built-in model name
  std::string layer_table;  // or a layer-table file (docs/planner.md)
  std::string profile;      // a measured profile CSV; default: the shipped one when it fits
  bool analytic = false;    // ignore shipped profiles, use the analytical cost model
  std::string precision = "mixed";
  std::string device = "a100";
  std::string network;  // a network preset or file (JSON or YAML); default: the device's
  int gpus = 1;
  std::int64_t global_batch = 0;
  double amp_limit = 2.0;
  std::string gpu_counts = "PowersOfTwo";
  std::string strategy = "Auto";
  std::string tick_tock = "Auto";
  std::string cpu_split = "Auto";
  std::string preload = "Auto";
  std::string weight_compression = "Auto";
  std::string optimizer = "SGD";
  std::int64_t dataset_samples = 1'280'000;
  // How the workers train (the Plan's `training`): optimizer steps (0: the plan names none),
  // learning rate, the seed of weights, data and sample order, and a checkpoint every N steps
  // (0: none).
  std::int64_t steps = 0;
  double learning_rate = 0.01;
  std::int64_t seed = 0;
  std::int64_t checkpoint_interval_steps = 0;
  std::string job;  // "namespace/name" written into the plan
  bool compare = false;
  bool json = false;
  bool layers = false;
};

// Registers the `plan` subcommand on `app`, storing its flags in `flags` (which must outlive it).
CLI::App* AddPlanCommand(CLI::App* app, PlanFlags* flags);

// Runs the command: the plan goes to `out`, errors to `err`. Returns the exit status: 0, or 1
// when the request cannot be planned (the message says why).
int RunPlan(const PlanFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_PLAN_COMMAND_H_
