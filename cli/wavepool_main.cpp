// The wavepool command: parses flags and runs a subcommand.
#include <iostream>

#include "CLI/CLI.hpp"
#include "wavepool/cli/codec_command.h"
#include "wavepool/cli/plan_command.h"
#include "wavepool/cli/profile_command.h"
#include "wavepool/cli/run_command.h"
#include "wavepool/cli/simulate_command.h"
#include "wavepool/cli/usage.h"
#include "wavepool/cli/version.h"

int main(int argc, char** argv) {
  CLI::App app{"wavepool: shared GPU clusters that train faster and fuller"};
  app.name("wavepool");  // messages name the command, not the path it was run by
  app.require_subcommand(1);
  wavepool::cli::PlanFlags plan_flags;
  CLI::App* plan = wavepool::cli::AddPlanCommand(&app, &plan_flags);
  wavepool::cli::ProfileFlags profile_flags;
  CLI::App* profile = wavepool::cli::AddProfileCommand(&app, &profile_flags);
  wavepool::cli::CodecFlags codec_flags;
  CLI::App* codec = wavepool::cli::AddCodecCommand(&app, &codec_flags);
  wavepool::local::RunOptions run_options;
  CLI::App* run = wavepool::cli::AddRunCommand(&app, &run_options);
  wavepool::cli::SimulateFlags simulate_flags;
  CLI::App* simulate = wavepool::cli::AddSimulateCommand(&app, &simulate_flags);
  CLI::App* version = app.add_subcommand("version", "Print the version");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return wavepool::cli::ReportParseError(app, e, std::cout, std::cerr);
  }
  if (*version) {
    std::cout << "wavepool " << wavepool::cli::Version() << "\n";
    return 0;
  }
  if (*plan) return wavepool::cli::RunPlan(plan_flags, std::cout, std::cerr);
  if (*profile) return wavepool::cli::RunProfile(profile_flags, std::cout, std::cerr);
  if (*codec) return wavepool::cli::RunCodec(codec_flags, std::cout, std::cerr);
  if (*run) return wavepool::cli::RunRun(run_options, std::cout, std::cerr);
  if (*simulate) return wavepool::cli::RunSimulate(simulate_flags, std::cout, std::cerr);
  return 2;
}
