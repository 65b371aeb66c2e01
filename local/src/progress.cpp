#include "progress.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace wavepool::local {

std::map<std::string, double> ForegroundSlowdowns(const agent::AgentStatus& status) {
  std::map<std::string, double> slowdowns;
  for (const agent::GpuStatus& gpu : status.gpus) {
    for (const agent::TaskStatus& t : gpu.tasks) {
      if (t.role != agent::Role::kForeground) continue;
      auto [it, added] =
          slowdowns.emplace(absl::StrCat(t.namespace_name, "/", t.job), t.foreground_slowdown);
      if (!added) it->second = std::max(it->second, t.foreground_slowdown);
    }
  }
  return slowdowns;
}

std::optional<StepLine> ParseStepLine(std::string_view line) {
  static const std::regex pattern(
      R"(^step (\d+)/(\d+) loss (\S+) samples/s (\S+) iteration (\S+) s \(compute (\S+), )"
      R"(transfer (\S+), all-reduce (\S+), data (\S+)\)( (tick|tock))?$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(line.begin(), line.end(), m, pattern)) return std::nullopt;
  StepLine s;
  try {
    s.step = std::stoll(m[1].str());
    s.steps = std::stoll(m[2].str());
    s.loss = std::stod(m[3].str());
    s.samples_per_second = std::stod(m[4].str());
    s.iteration_seconds = std::stod(m[5].str());
    s.compute_seconds = std::stod(m[6].str());
    s.transfer_seconds = std::stod(m[7].str());
    s.allreduce_seconds = std::stod(m[8].str());
    s.data_seconds = std::stod(m[9].str());
  } catch (const std::exception&) {  // a number out of range: not a line of ours
    return std::nullopt;
  }
  s.wave = m[11].str();
  return s;
}

ProgressDisplay::ProgressDisplay(std::ostream& out, bool tty, const Clock& clock)
    : out_(out), tty_(tty), clock_(clock) {}

std::string ProgressDisplay::Timestamp() const {
  const std::time_t now = std::chrono::system_clock::to_time_t(clock_.WallNow());
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof(text), "%H:%M:%S", &local);
  return text;
}

namespace {

std::string Eta(double seconds) {
  if (seconds < 0) return "--:--";
  const auto s = static_cast<long long>(seconds + 0.5);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string Slowdown(const JobView& job) {
  if (job.background || job.slowdown <= 0) return "";
  return absl::StrFormat("  slowdown %.2fx (SLO %.2fx)", job.slowdown, job.slowdown_limit);
}

}  // namespace

std::string ProgressDisplay::Bar(const JobView& job) const {
  constexpr int kWidth = 24;
  const int filled = job.steps > 0 ? static_cast<int>(kWidth * job.step / job.steps) : 0;
  return absl::StrFormat("%-22s %s [%s%s] %d/%d loss %.4f %.1f samples/s eta %s%s  %s", job.name,
                         job.background ? "bg" : "fg", std::string(filled, '#'),
                         std::string(kWidth - filled, '.'), job.step, job.steps, job.loss,
                         job.samples_per_second, Eta(job.eta_seconds), Slowdown(job), job.state);
}

std::string ProgressDisplay::Line(const JobView& job) const {
  return absl::StrFormat("%s %s (%s) %s step %d/%d loss %.4f %.1f samples/s eta %s%s", Timestamp(),
                         job.name, job.background ? "background" : "foreground", job.state,
                         job.step, job.steps, job.loss, job.samples_per_second,
                         Eta(job.eta_seconds), Slowdown(job));
}

void ProgressDisplay::Redraw(const std::vector<JobView>& jobs) {
  // Back to the first bar, then every bar on a cleared line.
  if (drawn_lines_ > 0) out_ << "\x1b[" << drawn_lines_ << "F";
  for (const JobView& job : jobs) out_ << "\x1b[2K" << Bar(job) << "\n";
  drawn_lines_ = static_cast<int>(jobs.size());
  out_ << std::flush;
  last_redraw_ = clock_.Now();
}

void ProgressDisplay::Update(const std::vector<JobView>& jobs) {
  const MonotonicTime now = clock_.Now();
  if (tty_) {
    if (!last_redraw_.has_value() || now - *last_redraw_ >= std::chrono::milliseconds(100)) {
      Redraw(jobs);
    }
    return;
  }
  for (const JobView& job : jobs) {
    Shown& shown = shown_[job.name];
    const std::int64_t tenth = std::max<std::int64_t>(1, job.steps / 10);
    const bool changed = job.state != shown.state;
    const bool advanced = job.step >= shown.step + tenth ||
                          (job.step > shown.step && now - shown.at >= std::chrono::seconds(10));
    if (!changed && !advanced) continue;
    out_ << Line(job) << "\n" << std::flush;
    shown = {job.state, job.step, now};
  }
}

void ProgressDisplay::Note(const std::string& line) {
  if (tty_ && drawn_lines_ > 0) {
    // Above the bars: move up, write, and let the next Update draw the bars below it again.
    out_ << "\x1b[" << drawn_lines_ << "F\x1b[J";
    drawn_lines_ = 0;
  }
  out_ << (tty_ ? "" : Timestamp() + " ") << line << "\n" << std::flush;
  last_redraw_.reset();
}

void ProgressDisplay::Finish(const std::vector<JobView>& jobs) {
  if (tty_) {
    Redraw(jobs);
    return;
  }
  for (const JobView& job : jobs) {
    if (shown_[job.name].state != job.state || shown_[job.name].step != job.step) {
      out_ << Line(job) << "\n";
    }
  }
  out_ << std::flush;
}

}  // namespace wavepool::local
