#include "tools/cli/progress_reporter.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/cli/cli_output.h"

namespace autopar::tools {
namespace {

/// A terminal redrawn more often than this only flickers.
constexpr double kMinIntervalS = 0.1;
/// A rate measured over less time than this is noise; no ETA before it.
constexpr double kMinRateIntervalS = 0.5;
constexpr int kBarWidth = 24;
constexpr char kSpinner[] = {'|', '/', '-', '\\'};

std::string FormatAmount(int64_t amount, ProgressUnit unit) {
  return unit == ProgressUnit::kBytes ? FormatBytes(amount) : FormatCount(amount);
}

}  // namespace

std::string ProgressBar(double fraction, int width) {
  const double clamped = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0);
  const int full = static_cast<int>(clamped * width);
  return absl::StrCat("[", std::string(full, '#'), std::string(width - full, '-'), "]");
}

std::string FormatEta(double seconds) {
  const int64_t s =
      std::isfinite(seconds) ? static_cast<int64_t>(std::ceil(std::max(0.0, seconds))) : 0;
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
}

ProgressReporter::ProgressReporter(bool quiet)
    : out_(stderr), enabled_(!quiet && isatty(fileno(stderr)) != 0) {}

std::function<void(const search::Progress&)> ProgressReporter::Callback(double time_budget_s) {
  if (!enabled_) return nullptr;
  time_budget_s_ = time_budget_s;
  return [this](const search::Progress& progress) { Report(progress); };
}

TaskCallback ProgressReporter::Task(std::string label, ProgressUnit unit) {
  if (!enabled_) return nullptr;
  return [this, id = next_task_id_++, label = std::move(label), unit](int64_t done, int64_t total) {
    ReportTask(id, label, unit, done, total);
  };
}

bool ProgressReporter::Due(double elapsed_s) const {
  return !printed_ || elapsed_s - last_printed_s_ >= kMinIntervalS;
}

void ProgressReporter::Redraw(const std::string& line, double elapsed_s) {
  // Carriage return, the line, then erase whatever a longer line left.
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  std::fflush(out_);
  printed_ = true;
  last_printed_s_ = elapsed_s;
}

void ProgressReporter::Report(const search::Progress& progress) {
  if (!Due(progress.elapsed_s)) {
    pending_ = progress;
    return;
  }
  Print(progress);
}

void ProgressReporter::Print(const search::Progress& progress) {
  std::string line =
      absl::StrFormat("generation %lld  best %.1f us  %s  elapsed %.1fs",
                      static_cast<long long>(progress.iteration), progress.best_step_time_us,
                      progress.feasible ? "feasible" : "over memory", progress.elapsed_s);
  if (time_budget_s_ > 0) {
    absl::StrAppendFormat(&line, " of %.1fs %s", time_budget_s_,
                          ProgressBar(progress.elapsed_s / time_budget_s_, kBarWidth));
  }
  Redraw(line, progress.elapsed_s);
  pending_.reset();
}

void ProgressReporter::ReportTask(int id, const std::string& label, ProgressUnit unit, int64_t done,
                                  int64_t total) {
  if (!task_ || task_->id != id) {
    Finish();  // the line of the search or task before
    task_ = TaskState{.id = id, .label = label, .unit = unit, .start = Clock::now()};
  }
  if (done == task_->shown_done && total == task_->shown_total) return;  // nothing new
  task_->done = done;
  task_->total = total;
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - task_->start).count();
  // The end of a known total is always shown: the line then stays complete.
  const bool complete = total > 0 && done >= total;
  if (!complete && !Due(elapsed_s)) {
    task_pending_ = true;
    return;
  }
  PrintTask();
}

void ProgressReporter::PrintTask() {
  TaskState& task = *task_;
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - task.start).count();
  std::string line = absl::StrCat(task.label, "  ");
  if (task.total <= 0) {
    // Total unknown: a spinner and the count so far.
    absl::StrAppend(&line, std::string(1, kSpinner[task.frame++ % 4]), "  ",
                    FormatAmount(task.done, task.unit));
  } else {
    const double fraction = static_cast<double>(task.done) / static_cast<double>(task.total);
    absl::StrAppendFormat(&line, "%s %3.0f%%  %s of %s", ProgressBar(fraction, kBarWidth),
                          100 * std::min(fraction, 1.0), FormatAmount(task.done, task.unit),
                          FormatAmount(task.total, task.unit));
    if (elapsed_s >= kMinRateIntervalS && task.done > 0) {
      const double rate = static_cast<double>(task.done) / elapsed_s;
      absl::StrAppend(&line, "  ",
                      task.unit == ProgressUnit::kBytes
                          ? FormatBytes(static_cast<int64_t>(rate)) + "/s"
                          : absl::StrCat(FormatCount(static_cast<int64_t>(rate)), "/s"));
      if (task.done < task.total) {
        absl::StrAppend(&line, "  ETA ",
                        FormatEta(static_cast<double>(task.total - task.done) / rate));
      }
    }
  }
  Redraw(line, elapsed_s);
  task.shown_done = task.done;
  task.shown_total = task.total;
  task_pending_ = false;
}

void ProgressReporter::Finish() {
  if (pending_) Print(*pending_);
  if (task_ && task_pending_) PrintTask();
  task_.reset();
  task_pending_ = false;
  if (!printed_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  printed_ = false;
  last_printed_s_ = 0;
}

}  // namespace autopar::tools
