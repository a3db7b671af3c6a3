// A search's progress on one refreshing line of the terminal (issue 8):
// "generation N  best X us  feasible  elapsed Ys", rewritten in place on
// stderr while an iterative search (TGA) runs — nothing when stderr is not a
// terminal or the user asked for --quiet, so that logs and pipes stay clean.
#ifndef AUTOPAR_TOOLS_PROGRESS_REPORTER_H_
#define AUTOPAR_TOOLS_PROGRESS_REPORTER_H_

#include <cstdio>
#include <functional>
#include <optional>

#include "search/search.h"

namespace autopar::tools {

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

  /// For SearchOptions::on_progress: empty when disabled. Valid while the
  /// reporter lives.
  std::function<void(const search::Progress&)> Callback();

  /// Shows the last progress if the throttle held it back and ends the line,
  /// so that what is printed next starts on a line of its own. Idempotent.
  void Finish();

 private:
  void Report(const search::Progress& progress);
  void Print(const search::Progress& progress);

  std::FILE* out_;
  bool enabled_;
  bool printed_ = false;
  double last_printed_s_ = 0;
  std::optional<search::Progress> pending_;  // held back by the throttle
};

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_PROGRESS_REPORTER_H_
