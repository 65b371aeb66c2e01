// `wavepool profile`: measures each layer's forward and backward time with the runtime's LibTorch
// modules at a few batch sizes and writes the planner's profile CSV, which `wavepool plan
// --profile FILE` then plans with (docs/cli.md, "wavepool profile").
//
// This command lives in its own library (wavepool_cli_profile), apart from wavepool::cli, so that
// only the `wavepool` binary links LibTorch; this header pulls in none of it.
#ifndef WAVEPOOL_CLI_PROFILE_COMMAND_H_
#define WAVEPOOL_CLI_PROFILE_COMMAND_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace wavepool::cli {

struct ProfileFlags {
  std::string model;        // a built-in model name
  std::string layer_table;  // or a layer-table file (docs/planner.md)
  std::string batch_sizes;  // "1,2,4,8": strictly ascending, each >= 1
  std::string out;          // the profile CSV to write
  int warmup = 2;
  int repeats = 5;
  int threads = 0;             // LibTorch intra-op threads; 0: its default
  std::string device = "cpu";  // cpu, cuda or cuda:N
};

// Registers the `profile` subcommand on `app`, storing its flags in `flags` (which must outlive
// it).
CLI::App* AddProfileCommand(CLI::App* app, ProfileFlags* flags);

// Runs the command: progress and a summary go to `out`, errors to `err`. Returns the exit status:
// 0; 2 for a bad flag (an unknown model, empty, zero or unsorted batch sizes, an --out that
// cannot be written; the message names the flag); 1 when the model cannot be profiled (a layer
// table the runtime cannot execute, a LibTorch error while timing).
int RunProfile(const ProfileFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_PROFILE_COMMAND_H_
