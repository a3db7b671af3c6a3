#include "tools/progress_reporter.h"

#include <unistd.h>

namespace autopar::tools {
namespace {

/// A terminal redrawn more often than this only flickers.
constexpr double kMinIntervalS = 0.1;

}  // namespace

ProgressReporter::ProgressReporter(bool quiet)
    : out_(stderr), enabled_(!quiet && isatty(fileno(stderr)) != 0) {}

std::function<void(const search::Progress&)> ProgressReporter::Callback() {
  if (!enabled_) return nullptr;
  return [this](const search::Progress& progress) { Report(progress); };
}

void ProgressReporter::Report(const search::Progress& progress) {
  if (printed_ && progress.elapsed_s - last_printed_s_ < kMinIntervalS) {
    pending_ = progress;
    return;
  }
  Print(progress);
}

void ProgressReporter::Print(const search::Progress& progress) {
  // Carriage return, the line, then erase whatever a longer line left.
  std::fprintf(out_, "\rgeneration %lld  best %.1f us  %s  elapsed %.1fs\x1b[K",
               static_cast<long long>(progress.iteration), progress.best_step_time_us,
               progress.feasible ? "feasible" : "over memory", progress.elapsed_s);
  std::fflush(out_);
  printed_ = true;
  last_printed_s_ = progress.elapsed_s;
  pending_.reset();
}

void ProgressReporter::Finish() {
  if (pending_) Print(*pending_);
  if (!printed_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  printed_ = false;
}

}  // namespace autopar::tools
