#include "wavepool/cli/usage.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/planner/names.h"

namespace wavepool::cli {
namespace {

// "wavepool plan", "wavepool codec encode": the command a parsed subcommand chain names.
std::string CommandName(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr; app = app->get_parent()) names.insert(names.begin(), app->get_name());
  return absl::StrJoin(names, " ");
}

// The deepest subcommand the command line named (the app itself when none).
const CLI::App* DeepestParsed(const CLI::App& app) {
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  return current;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::vector<std::string> FlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

// The subcommands (of `app`, recursively, in the order they were added) that take `flag`.
std::vector<const CLI::App*> SubcommandsTaking(const CLI::App& app, const std::string& flag) {
  std::vector<const CLI::App*> found;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const std::vector<std::string> flags = FlagNames(*sub);
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) found.push_back(sub);
    for (const CLI::App* deeper : SubcommandsTaking(*sub, flag)) found.push_back(deeper);
  }
  return found;
}

// "a", "a and b", "a, b and c".
std::string JoinAnd(const std::vector<std::string>& items) {
  if (items.size() <= 1) return absl::StrJoin(items, "");
  return absl::StrCat(absl::StrJoin(items.begin(), items.end() - 1, ", "), " and ", items.back());
}

// The message for a flag `at` does not take: given before its subcommand, the subcommands that
// take it; else the closest flags of `at`.
std::string UnknownFlag(const CLI::App& app, const CLI::App& at, const std::string& word) {
  const std::string command = CommandName(&at);
  const std::string flag = word.substr(0, word.find('='));  // --gpu=8
  if (&at == &app) {
    const std::vector<const CLI::App*> takers = SubcommandsTaking(app, flag);
    if (!takers.empty()) {
      std::vector<std::string> names;
      for (const CLI::App* taker : takers) {
        names.push_back(absl::StrCat("`", CommandName(taker), "`"));
      }
      return absl::StrCat(command, ": ", flag, " is a flag of ", JoinAnd(names),
                          ": give the subcommand first (", CommandName(takers.front()), " ", flag,
                          " ...)");
    }
  }
  return absl::StrCat(command, ": unknown flag ", flag,
                      planner::DidYouMean(flag, FlagNames(at), ""));
}

// The message for the first word `at` did not take, or "" when it took every word. Words are
// judged in order, so that "wavepool plna --model x" is about "plna", the word that went wrong.
std::string UnknownWord(const CLI::App& app, const CLI::App& at) {
  const std::vector<std::string> left = at.remaining();
  if (left.empty()) return "";
  const std::string& word = left.front();
  if (absl::StartsWith(word, "-")) return UnknownFlag(app, at, word);
  const std::string command = CommandName(&at);
  const std::vector<std::string> subcommands = SubcommandNames(at);
  if (!subcommands.empty() && at.get_subcommands().empty()) {
    return absl::StrCat(command, ": unknown subcommand '", word, "'; the subcommands are ",
                        absl::StrJoin(subcommands, ", "), planner::DidYouMean(word, subcommands));
  }
  return absl::StrCat(command, ": unexpected argument '", word, "': `", command,
                      "` takes flags only");
}

}  // namespace

int ReportParseError(const CLI::App& app, const CLI::ParseError& error, std::ostream& out,
                     std::ostream& err) {
  if (error.get_exit_code() == 0) return app.exit(error, out, err);  // --help
  const CLI::App* at = DeepestParsed(app);
  std::string message = UnknownWord(app, *at);
  if (message.empty() && !SubcommandNames(*at).empty() && at->get_subcommands().empty()) {
    message = absl::StrCat(CommandName(at),
                           ": give a subcommand: ", absl::StrJoin(SubcommandNames(*at), ", "));
  }
  if (message.empty()) return app.exit(error, out, err) == 0 ? 0 : 2;
  err << message << "\nRun `" << CommandName(at) << " --help` for more information.\n";
  return 2;
}

}  // namespace wavepool::cli
