// Progress on one refreshing line of the terminal, on stderr,
// and only when it is a terminal and the user did not ask for --quiet, so that
// logs and pipes stay clean:
//   - a search's generations: "generation N  best X us  feasible  elapsed Ys",
//     with "of 10.0s [####----]" when it runs to a time budget;
//   - a task whose total is known, as a bar with rate and ETA:
//       "loading model  [########--------]  52%  1.2 GiB of 2.3 GiB  410.0 MiB/s  ETA 3s"
//   - a task whose total is not known, as a spinner and a count:
//       "coarsening  /  12,000".
// The libraries never print: they take a callback (SearchOptions::on_progress,
// onnx_io::LoadOptions::on_progress, ...) and this class makes it.
#ifndef AUTOPAR_TOOLS_CLI_PROGRESS_REPORTER_H_
#define AUTOPAR_TOOLS_CLI_PROGRESS_REPORTER_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "search/search.h"

namespace autopar::tools {

/// What a task counts, for its numbers.
enum class ProgressUnit { kBytes, kCount };

/// `done` of `total` so far; `total` <= 0 when unknown. The shape of every
/// library's progress callback.
using TaskCallback = std::function<void(int64_t done, int64_t total)>;

class ProgressReporter {
 public:
  /// Reports on stderr when it is a terminal and not `quiet`.
  explicit ProgressReporter(bool quiet);
  /// Reports on `out` when `enabled` (tests).
  ProgressReporter(std::FILE* out, bool enabled) : out_(out), enabled_(enabled) {}
  /// Finishes the line.
  ~ProgressReporter() { Finish(); }
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  bool enabled() const { return enabled_; }

  /// For SearchOptions::on_progress: empty when disabled. With a positive
  /// `time_budget_s` (an anytime search's total) the line ends in
  /// "of 10.0s [####----]". Valid while the reporter lives.
  std::function<void(const search::Progress&)> Callback(double time_budget_s = 0);

  /// For a library's (done, total) progress callback, shown under `label`:
  /// empty when disabled. The task's clock starts at its first report, which
  /// also finishes the line of whatever was shown before. Valid while the
  /// reporter lives.
  TaskCallback Task(std::string label, ProgressUnit unit);

  /// Shows the last progress if the throttle held it back and ends the line,
  /// so that what is printed next starts on a line of its own. Idempotent.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;

  /// The task being shown, and what the throttle held back.
  struct TaskState {
    int id = 0;
    std::string label;
    ProgressUnit unit = ProgressUnit::kBytes;
    Clock::time_point start;
    int64_t done = 0;
    int64_t total = 0;
    int frame = 0;            // of the spinner
    int64_t shown_done = -1;  // the numbers on the terminal now
    int64_t shown_total = -1;
  };

  void Report(const search::Progress& progress);
  void Print(const search::Progress& progress);
  void ReportTask(int id, const std::string& label, ProgressUnit unit, int64_t done, int64_t total);
  void PrintTask();
  /// Whether the throttle lets a line through `elapsed_s` after the start.
  bool Due(double elapsed_s) const;
  /// Writes "\r<line>" and erases what a longer line left.
  void Redraw(const std::string& line, double elapsed_s);

  std::FILE* out_;
  bool enabled_;
  bool printed_ = false;
  double last_printed_s_ = 0;
  std::optional<search::Progress> pending_;  // held back by the throttle
  double time_budget_s_ = 0;
  std::optional<TaskState> task_;
  int next_task_id_ = 0;
  bool task_pending_ = false;  // task_ holds numbers not shown yet
};

/// "[#####-----]": `width` cells, `fraction` of them full (clamped to [0, 1]).
std::string ProgressBar(double fraction, int width);

/// "3s", "1m05s", "2h03m": an ETA or elapsed time on a terminal.
std::string FormatEta(double seconds);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_CLI_PROGRESS_REPORTER_H_
