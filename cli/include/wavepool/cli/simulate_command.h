// `wavepool simulate`: a discrete-event simulation of a GPU cluster running a trace of foreground
// and background jobs under the exclusive data-parallel, burst-parallel and wavepool policies
// (wavepool/simulate/simulator.h, docs/simulate.md). The trace is generated from a seed or read
// from a CSV file; the report compares the policies on it: cluster throughput (samples/s, GPU
// utilisation), foreground completion time and slowdown, background progress.
#ifndef WAVEPOOL_CLI_SIMULATE_COMMAND_H_
#define WAVEPOOL_CLI_SIMULATE_COMMAND_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"
#include "wavepool/simulate/simulator.h"
#include "wavepool/simulate/trace.h"

namespace wavepool::cli {

struct SimulateFlags {
  std::string trace;        // a CSV trace (docs/simulate.md); empty: generate one
  std::string write_trace;  // where to write the simulated trace as CSV; empty: nowhere
  // The generated trace: scalars here, lists as their flags' text (empty: TraceOptions' default).
  simulate::TraceOptions generate;
  std::string models;              // "vgg16,resnet50:2": a model and its weight (default 1)
  std::string foreground_gpus;     // "2,4,8"
  std::string foreground_batches;  // "32,64"
  std::string foreground_steps;    // "MIN:MAX"
  std::string background_batches;
  std::string background_steps;
  // The cluster and the policies' parameters (nodes, GPUs per node, device, SLO, ...).
  simulate::SimulationOptions options;
  std::string policies = "exclusive-dp,burst,wavepool";
  bool json = false;
};

// Registers `simulate` on `app`, storing its flags in `flags`, which must outlive `app`.
CLI::App* AddSimulateCommand(CLI::App* app, SimulateFlags* flags);

// Runs the command: the report (a table, or with --json the document of simulate/report.h) goes
// to `out`, errors to `err` as one line starting `wavepool simulate: ` that names the flag, or
// the trace file with its line and column. Returns 0, or 1 on any error: a flag's value out of
// range or malformed, a bad or unreadable trace, a job that can never run on the cluster, a
// trace that cannot be written (then nothing is simulated).
int RunSimulate(const SimulateFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_SIMULATE_COMMAND_H_
