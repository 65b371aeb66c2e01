// CSV traces (trace.h): strict reading with errors that name the line, the column and the field,
// and the writer that reads back to the same trace.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/simulate/trace.h"

namespace wavepool::simulate {
namespace {

constexpr int kFields = 7;
constexpr const char* kFieldNames[kFields] = {
    "name", "role", "arrival_seconds", "model", "gpus", "global_batch", "steps"};

// Debian's abseil has its own string_view; the parser works in it.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// One field of a line: its text (trimmed) and the 1-based column it starts at.
struct Field {
  absl::string_view text;
  std::size_t column = 1;
};

class LineParser {
 public:
  LineParser(std::string_view source, std::size_t line) : source_(source), line_(line) {}

  absl::Status Error(const Field& field, int index, std::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: %s: %s", source_, line_,
                                                      field.column, kFieldNames[index], problem));
  }
  absl::Status LineError(std::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %s", source_, line_, problem));
  }

  absl::StatusOr<std::int64_t> Integer(const Field& f, int index, std::int64_t min) const {
    std::int64_t v = 0;
    if (!absl::SimpleAtoi(f.text, &v)) {
      return Error(f, index, absl::StrCat("must be an integer, got \"", f.text, "\""));
    }
    if (v < min) return Error(f, index, absl::StrCat("must be >= ", min, ", got ", v));
    return v;
  }

  absl::StatusOr<double> Seconds(const Field& f, int index) const {
    double v = 0;
    if (!absl::SimpleAtod(f.text, &v) || !std::isfinite(v)) {
      return Error(f, index, absl::StrCat("must be a finite number, got \"", f.text, "\""));
    }
    if (v < 0) return Error(f, index, absl::StrCat("must be >= 0, got ", f.text));
    return v;
  }

 private:
  std::string_view source_;
  std::size_t line_;
};

std::vector<Field> SplitFields(absl::string_view line) {
  std::vector<Field> fields;
  std::size_t start = 0;
  for (absl::string_view piece : absl::StrSplit(line, ',')) {
    Field f;
    const std::size_t lead = piece.size() - absl::StripLeadingAsciiWhitespace(piece).size();
    f.text = absl::StripAsciiWhitespace(piece);
    f.column = start + lead + 1;
    fields.push_back(f);
    start += piece.size() + 1;
  }
  return fields;
}

// Reads one job line into `job`. `previous_arrival` is the arrival of the line before (or 0).
absl::Status ParseJob(const LineParser& p, const std::vector<Field>& f, double previous_arrival,
                      const std::vector<std::string>& models, TraceJob* job) {
  if (f[0].text.empty()) return p.Error(f[0], 0, "must not be empty");
  if (f[0].text.find('"') != absl::string_view::npos) {
    return p.Error(f[0], 0, "quoted fields are not supported");
  }
  job->name = std::string(f[0].text);
  if (f[1].text == "Foreground") {
    job->role = api::Role::kForeground;
  } else if (f[1].text == "Background") {
    job->role = api::Role::kBackground;
  } else {
    return p.Error(f[1], 1,
                   absl::StrCat("must be Foreground or Background, got \"", f[1].text, "\""));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(double arrival, p.Seconds(f[2], 2));
  if (arrival < previous_arrival) {
    return p.Error(f[2], 2,
                   absl::StrCat("jobs must be in arrival order: ", f[2].text,
                                " is before the previous job's ", previous_arrival));
  }
  job->arrival_seconds = arrival;
  job->model = std::string(f[3].text);
  if (std::find(models.begin(), models.end(), job->model) == models.end()) {
    return p.Error(
        f[3], 3,
        absl::StrCat("unknown model \"", f[3].text, "\"; known: ", absl::StrJoin(models, ", ")));
  }
  absl::StatusOr<std::int64_t> gpus = p.Integer(f[4], 4, 1);
  absl::StatusOr<std::int64_t> batch = p.Integer(f[5], 5, 1);
  absl::StatusOr<std::int64_t> steps = p.Integer(f[6], 6, 1);
  for (const absl::Status& s : {gpus.status(), batch.status(), steps.status()}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  if (job->role == api::Role::kBackground && *gpus != 1) {
    return p.Error(f[4], 4, absl::StrCat("a Background job trains on 1 GPU, got ", *gpus));
  }
  if (*batch < *gpus) {
    return p.Error(f[5], 5, absl::StrCat("must be >= the job's ", *gpus, " GPUs, got ", *batch));
  }
  job->gpus = *gpus;
  job->global_batch = *batch;
  job->steps = *steps;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Trace> ParseTraceCsv(std::string_view source, std::string_view text) {
  const std::vector<std::string> models = planner::BuiltinModelNames();
  Trace trace;
  std::set<std::string> names;
  bool header_seen = false;
  std::size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(Absl(text), '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (absl::StripAsciiWhitespace(line).empty() || line.front() == '#') continue;
    const LineParser parser(source, line_number);
    if (!header_seen) {
      if (absl::StripAsciiWhitespace(line) != Absl(kTraceCsvHeader)) {
        return parser.LineError(
            absl::StrCat("the header must be \"", Absl(kTraceCsvHeader), "\", got \"", line, "\""));
      }
      header_seen = true;
      continue;
    }
    const std::vector<Field> fields = SplitFields(line);
    if (fields.size() != kFields) {
      return parser.LineError(absl::StrCat("expected ", kFields, " fields (", Absl(kTraceCsvHeader),
                                           "), got ", fields.size()));
    }
    TraceJob job;
    const double previous = trace.jobs.empty() ? 0 : trace.jobs.back().arrival_seconds;
    WAVEPOOL_RETURN_IF_ERROR(ParseJob(parser, fields, previous, models, &job));
    if (!names.insert(job.name).second) {
      return parser.Error(fields[0], 0, absl::StrCat("\"", job.name, "\" names an earlier job"));
    }
    trace.jobs.push_back(std::move(job));
  }
  if (!header_seen) {
    return absl::InvalidArgumentError(
        absl::StrCat(Absl(source), ": no header line (\"", Absl(kTraceCsvHeader), "\")"));
  }
  if (trace.jobs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(source), ": the trace has no job"));
  }
  return trace;
}

std::string FormatTraceCsv(const Trace& trace) {
  std::string out = absl::StrCat(Absl(kTraceCsvHeader), "\n");
  for (const TraceJob& j : trace.jobs) {
    absl::StrAppendFormat(&out, "%s,%s,%.17g,%s,%d,%d,%d\n", j.name, api::ToString(j.role),
                          j.arrival_seconds, j.model, j.gpus, j.global_batch, j.steps);
  }
  return out;
}

}  // namespace wavepool::simulate
