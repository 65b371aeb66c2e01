// How `wavepool` reports a command line it cannot parse: an unknown subcommand or flag is named
// with the closest known ones, so that a typo reads as one.
#ifndef WAVEPOOL_CLI_USAGE_H_
#define WAVEPOOL_CLI_USAGE_H_

#include <ostream>

#include "CLI/CLI.hpp"

namespace wavepool::cli {

// Reports `error`, thrown by `app.parse`, and returns the exit status. A request for help
// prints it to `out` (0). Otherwise one message goes to `err` (2): for a word the command line
// does not know, the first in order (an unknown subcommand, an unknown flag, an argument a
// subcommand does not take), "wavepool plan: unknown flag --gpu; did you mean --gpus?" (the closest
// subcommands or flags of the subcommand it follows, planner::ClosestNames), for a flag given
// before its subcommand the subcommands that take it, else CLI11's own message; then how to get
// help.
int ReportParseError(const CLI::App& app, const CLI::ParseError& error, std::ostream& out,
                     std::ostream& err);

}  // namespace wavepool::cli

#endif  // WAVEPOOL_CLI_USAGE_H_
