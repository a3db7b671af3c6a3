// plan.json's "training" object: what a training step's models are and how
// to drive them (tools/runner/train.mjs reads it; the README documents every
// field), e.g.
//   {"models": {"init": "step/init.onnx", "gradient": "step/gradient.onnx",
//               "update": "step/update.onnx"},
//    "loss": {"spec": "cross-entropy:logits", "output": "loss", "input": "labels",
//             "classes": 10},
//    "data_inputs": [{"name": "x", "dtype": "float32", "shape": [2, 8]}, ...],
//    "optimizer": {"name": "adam", "learning_rate": 0.001, ...,
//                  "step_input": "optimizer.step"},
//    "weights": [{"name": "fc.weight", "dtype": "float32", "shape": [4, 8],
//                 "bytes": 128, "initial": "fc.weight.initial",
//                 "gradient": "fc.weight_grad",
//                 "update": {"weight": ..., "gradient": ..., "output": ...,
//                            "state": [{"name": ..., "output": ...}]}}, ...],
//    "frozen": [...], "nodes": {"forward": 12, "backward": 40},
//    "node_origin": {"grad/MatMul": "MatMul_3", ...},
//    "update_origin": {"update/Mul": "MatMul_3", ...}}
// ("node_origin": each node of the gradient model that is not a source node →
// the source node it works for, training::TrainingStep::node_origin;
// "update_origin": each node of the update model → the first reader of the
// weight it updates, training::UpdateModel::node_origin. The two models'
// node names are disjoint: tools/fidelity/measure_step.mjs times both into
// one node-times file, costmodel/node_times.h)
#ifndef AUTOPAR_TOOLS_ARTIFACTS_TRAINING_JSON_H_
#define AUTOPAR_TOOLS_ARTIFACTS_TRAINING_JSON_H_

#include <string>

#include "nlohmann/json.hpp"
#include "pipeline/training_split.h"
#include "training/training_step.h"

namespace autopar::tools {

/// Where the step's models are written, relative to the output folder.
inline constexpr char kInitModelPath[] = "step/init.onnx";
inline constexpr char kGradientModelPath[] = "step/gradient.onnx";
inline constexpr char kUpdateModelPath[] = "step/update.onnx";

/// The "training" object of plan.json for `step`, built with `options`;
/// with `split`, each weight's "device" and the "pipeline" object:
///   {"schedule": "1f1b", "microbatches": 8, "devices": [0, 1],
///    "stages": [{"id": 0, "kind": "forward", "device": 0,
///                "file": "stages/s0.onnx", "inputs": [...], "outputs": [...],
///                "after": [...], "per_microbatch": true,
///                "predicted_us": 812.5}, ...,
///               {"id": 4, "kind": "update", "device": 0,
///                "file": "step/update_d0.onnx", "weights": [...],
///                "per_microbatch": false, "predicted_us": 40.1}, ...],
///    "order": [{"device": 0, "runs": [[0, 0], [0, 1], [3, 0], ...]}, ...],
///    "predicted": {"step_us": ..., "peak_memory_bytes": [...],
///                  "max_stashes": [...]}}
/// ("order": each device's (stage, micro-batch) runs in the order it runs
/// them; "peak_memory_bytes" and "max_stashes" per device of "devices").
nlohmann::ordered_json TrainingStepJson(const training::TrainingStep& step,
                                        const training::TrainingOptions& options,
                                        const pipeline::SplitTrainingStep* split = nullptr);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_TRAINING_JSON_H_
