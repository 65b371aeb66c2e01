// The examples of docs/cli.md are the binary's real output: every code block that starts with a
// `$ ` line is a shell session, run here command by command and compared line by line with the
// block, so that the documentation cannot drift from the program.
//
// The rules for docs/cli.md:
// - `$ CMD` runs CMD with /bin/sh in a fresh directory, `wavepool` being the binary under test;
//   the lines up to the next `$ ` line are what it prints, stdout and stderr together.
//   `$ echo $?` prints the status of the command before it.
// - A line `...` in the expected output stands for any number of lines (at least one).
// - Trailing spaces are ignored.
// - An HTML comment on the line before a block's opening fence tells the test about the block:
//   `<!-- doc-test: file NAME -->`: the block is a file the sessions use, written as NAME in
//   their directory; `<!-- doc-test: skip REASON -->`: the session is not run (its output
//   depends on the machine); `<!-- doc-test: needs PROGRAM -->`: it runs only where PROGRAM is
//   on the PATH.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_support.h"
#include "tests/cli/subprocess.h"

namespace wavepool::cli {
namespace {

using ::wavepool::cli::testing::MakeTestDir;
using ::wavepool::cli::testing::ProcessResult;
using ::wavepool::cli::testing::ReadSourceFile;
using ::wavepool::cli::testing::RunProcess;
using ::wavepool::cli::testing::WriteFile;

constexpr char kDoc[] = "docs/cli.md";
constexpr char kElision[] = "...";

struct Step {
  std::string command;
  std::vector<std::string> expected;
};

struct Session {
  int line = 0;  // of the opening fence in docs/cli.md
  std::vector<Step> steps;
  std::string skip;   // why it is not run, if it is not
  std::string needs;  // a program it needs on the PATH
};

struct DocFile {
  std::string name;
  std::string text;
};

struct Doc {
  std::vector<Session> sessions;
  std::vector<DocFile> files;
};

std::string StripRight(const std::string& line) {
  return std::string(absl::StripTrailingAsciiWhitespace(line));
}

// The directive of `<!-- doc-test: KIND ARGUMENT -->`, or {"", ""}.
std::pair<std::string, std::string> Directive(const std::string& line) {
  absl::string_view view = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&view, "<!-- doc-test:") || !absl::ConsumeSuffix(&view, "-->")) {
    return {"", ""};
  }
  const std::string text(absl::StripAsciiWhitespace(view));
  const size_t space = text.find(' ');
  if (space == std::string::npos) return {text, ""};
  return {text.substr(0, space), std::string(absl::StripAsciiWhitespace(text.substr(space)))};
}

Session ReadSession(int fence_line, const std::vector<std::string>& body) {
  Session session;
  session.line = fence_line;
  for (const std::string& line : body) {
    if (absl::StartsWith(line, "$ ")) {
      session.steps.push_back(Step{line.substr(2), {}});
    } else if (!session.steps.empty()) {
      session.steps.back().expected.push_back(StripRight(line));
    }
  }
  return session;
}

Doc ReadDoc() {
  Doc doc;
  const std::vector<std::string> lines = absl::StrSplit(ReadSourceFile(kDoc), '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!absl::StartsWith(lines[i], "```")) continue;
    size_t end = i + 1;
    while (end < lines.size() && !absl::StartsWith(lines[end], "```")) ++end;
    const std::vector<std::string> body(lines.begin() + static_cast<long>(i) + 1,
                                        lines.begin() + static_cast<long>(end));
    const auto [kind, argument] =
        i > 0 ? Directive(lines[i - 1]) : std::pair<std::string, std::string>();
    if (kind == "file") {
      doc.files.push_back({argument, absl::StrCat(absl::StrJoin(body, "\n"), "\n")});
    } else if (!body.empty() && absl::StartsWith(body.front(), "$ ")) {
      Session session = ReadSession(static_cast<int>(i) + 1, body);
      if (kind == "skip") session.skip = argument;
      if (kind == "needs") session.needs = argument;
      doc.sessions.push_back(std::move(session));
    }
    i = end;
  }
  return doc;
}

const Doc& TheDoc() {
  static const Doc* const doc = new Doc(ReadDoc());
  return *doc;
}

// Whether `actual` reads as `expected`, where a "..." line stands for one or more lines.
bool Matches(const std::vector<std::string>& expected, size_t e,
             const std::vector<std::string>& actual, size_t a) {
  if (e == expected.size()) return a == actual.size();
  if (expected[e] == kElision) {
    for (size_t next = a + 1; next <= actual.size(); ++next) {
      if (Matches(expected, e + 1, actual, next)) return true;
    }
    return false;
  }
  return a < actual.size() && expected[e] == actual[a] && Matches(expected, e + 1, actual, a + 1);
}

std::vector<std::string> OutputLines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (std::string& line : lines) line = StripRight(line);
  return lines;
}

std::string ShellQuote(const std::string& text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

ProcessResult Shell(const std::string& dir, const std::string& command) {
  const std::string bin = std::filesystem::path(WAVEPOOL_BINARY).parent_path().string();
  return RunProcess("/bin/sh",
                    {"-c", absl::StrCat("cd ", ShellQuote(dir), " && PATH=", ShellQuote(bin),
                                        ":\"$PATH\" && ", command, " 2>&1")});
}

bool OnPath(const std::string& program) {
  const ProcessResult found = RunProcess("/bin/sh", {"-c", "command -v " + program});
  return found.exited && found.exit_status == 0;
}

class DocsExamples : public ::testing::TestWithParam<size_t> {};

TEST_P(DocsExamples, PrintWhatTheBinaryPrints) {
  const Session& session = TheDoc().sessions[GetParam()];
  SCOPED_TRACE(absl::StrCat(kDoc, ":", session.line));
  if (!session.skip.empty()) GTEST_SKIP() << session.skip;
  if (!session.needs.empty() && !OnPath(session.needs)) GTEST_SKIP() << "no " << session.needs;
  const std::string dir = MakeTestDir();
  for (const DocFile& file : TheDoc().files) WriteFile(dir, file.name, file.text);
  int status = 0;
  for (const Step& step : session.steps) {
    std::vector<std::string> actual;
    if (step.command == "echo $?") {
      actual = {absl::StrCat(status)};
    } else {
      const ProcessResult run = Shell(dir, step.command);
      ASSERT_TRUE(run.exited) << step.command << "\n" << run;
      status = run.exit_status;
      actual = OutputLines(run.out);
    }
    EXPECT_TRUE(Matches(step.expected, 0, actual, 0))
        << "$ " << step.command << "\n--- docs/cli.md says:\n"
        << absl::StrJoin(step.expected, "\n") << "\n--- the binary prints:\n"
        << absl::StrJoin(actual, "\n");
  }
}

std::vector<size_t> SessionIndices() {
  std::vector<size_t> indices;
  for (size_t i = 0; i < TheDoc().sessions.size(); ++i) indices.push_back(i);
  return indices;
}

INSTANTIATE_TEST_SUITE_P(CliMd, DocsExamples, ::testing::ValuesIn(SessionIndices()),
                         [](const ::testing::TestParamInfo<size_t>& session) {
                           return absl::StrCat("line", TheDoc().sessions[session.param].line);
                         });

TEST(DocsExamplesFile, HasSessionsAndTheFilesTheyUse) {
  EXPECT_GE(TheDoc().sessions.size(), 10u);
  for (const Session& session : TheDoc().sessions) {
    EXPECT_FALSE(session.steps.empty()) << "line " << session.line;
  }
}

TEST(DocsExamplesMatching, ElisionStandsForOneOrMoreLines) {
  EXPECT_TRUE(Matches({"a", "...", "d"}, 0, {"a", "b", "c", "d"}, 0));
  EXPECT_TRUE(Matches({"a", "...", "d"}, 0, {"a", "b", "d"}, 0));
  EXPECT_FALSE(Matches({"a", "...", "d"}, 0, {"a", "d"}, 0));
  EXPECT_FALSE(Matches({"a", "b"}, 0, {"a", "b", "c"}, 0));
  EXPECT_FALSE(Matches({"a", "c"}, 0, {"a", "b"}, 0));
  EXPECT_TRUE(Matches({"...", "x"}, 0, {"w", "x", "y", "x"}, 0));
}

}  // namespace
}  // namespace wavepool::cli
