// report.html's "Pipeline step" section: a training step split over devices
// (pipeline/training_split.h) drawn as the step that will run — the
// stage-level prediction of costmodel/pipeline_schedule.h whose per-device
// order plan.json gives the runner — rather than the node-level simulation
// the placement was searched with (the report's Timeline section).
//
// It shows the schedule, M and the predicted step; a Gantt timeline with one
// lane per device and one box per run of the predicted timeline (a forward
// or backward stage for one micro-batch, or the device's update), the kinds
// in three colours, each box labelled with its stage id, kind and
// micro-batch and its tooltip adding start and duration; and per device its
// busy time, peak memory against capacity and the most micro-batches it
// stashes at once. A step has stages x M runs plus one update per device, a
// few thousand at most, so every run is its own box (no aggregation as in
// report_html.h's Note [Timeline aggregation]). The boxes are HTML elements
// placed in percent of the step, so their labels stay legible at any zoom.
// Output follows report_html.h's Note [Deterministic report].
#ifndef AUTOPAR_TOOLS_ARTIFACTS_REPORT_PIPELINE_H_
#define AUTOPAR_TOOLS_ARTIFACTS_REPORT_PIPELINE_H_

#include <string>

#include "costmodel/cluster.h"
#include "pipeline/training_split.h"

namespace autopar::tools {

/// Box colours of the three kinds of run.
inline constexpr char kForwardRunColour[] = "#4e79a7";   // blue
inline constexpr char kBackwardRunColour[] = "#f28e2b";  // orange
inline constexpr char kUpdateRunColour[] = "#59a14f";    // green

/// The section's CSS rules (the report's <style> holds them).
std::string PipelineStepStyle();

/// Appends the "Pipeline step" section for `split` on `cluster`: the kind of
/// each run comes from split.stages[stage].kind, everything else from
/// split.predicted.
void WritePipelineStep(const pipeline::SplitTrainingStep& split, const costmodel::Cluster& cluster,
                       std::string& out);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_REPORT_PIPELINE_H_
