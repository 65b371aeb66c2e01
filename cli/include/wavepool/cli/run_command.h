// `wavepool run JOB.yaml [MORE.yaml ...]`: local mode (docs/local-mode.md). The flags map onto
// wavepool::local::RunOptions; the work is wavepool::local::RunLocally's.
#ifndef WAVEPOOL_CLI_RUN_COMMAND_H_
#define WAVEPOOL_CLI_RUN_COMMAND_H_

#include <ostream>

#include "CLI/CLI.hpp"
#include "wavepool/local/local_run.h"

namespace wavepool::cli {

// Registers `run` on `app`, storing its flags in `options`, which must outlive `app`.
CLI::App* AddRunCommand(CLI::App* app, local::RunOptions* options);

// Runs local mode; its exit status (local_run.h). Live bars when stdout is a terminal.
int RunRun(local::RunOptions options, std::ostream& out, std::ostream& err);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_RUN_COMMAND_H_
