#include "wavepool/cli/run_command.h"

#include <unistd.h>

namespace wavepool::cli {

CLI::App* AddRunCommand(CLI::App* app, local::RunOptions* options) {
  CLI::App* run = app->add_subcommand(
      "run", "Train TrainingJob manifests on this machine (an in-process agent, local workers)");
  run->add_option("manifests", options->manifests, "TrainingJob manifests (YAML or JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_option("--out", options->out_dir,
                  "Directory of report.json and the logs (default ./wavepool-run-<job>-<time>)");
  run->add_option("--checkpoint-root", options->checkpoint_root,
                  "Checkpoints of each job, kept across runs to resume")
      ->capture_default_str();
  run->add_flag("--fresh", options->fresh, "Delete the jobs' checkpoints first");
  run->add_option("--devices", options->devices,
                  "The agent's GPUs: simulated[:N], nvml (this machine's) or auto")
      ->capture_default_str();
  run->add_option("--gpus", options->gpus,
                  "GPUs to use (default: simulated, as many as the foreground jobs need; NVML, "
                  "all)");
  run->add_option("--device", options->device, "The GPU the plans predict for")
      ->capture_default_str();
  run->add_option("--data", options->data, "synthetic, cifar10:DIR, mnist:DIR or imagefolder:DIR")
      ->capture_default_str();
  run->add_option("--metrics-port", options->metrics_port,
                  "Serve the agent's /metrics on 127.0.0.1:PORT during the run")
      ->check(CLI::Range(0, 65535));
  run->add_option("--threads", options->threads, "Intra-op threads of every worker")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--worker", options->worker_binary,
                  "The wavepool-worker to start (default: next to wavepool)");
  return run;
}

int RunRun(local::RunOptions options, std::ostream& out, std::ostream& err) {
  options.tty = isatty(STDOUT_FILENO) == 1;
  return local::RunLocally(options, out, err);
}

}  // namespace wavepool::cli
