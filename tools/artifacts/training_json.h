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
//    "frozen": [...], "nodes": {"forward": 12, "backward": 40}}
#ifndef AUTOPAR_TOOLS_ARTIFACTS_TRAINING_JSON_H_
#define AUTOPAR_TOOLS_ARTIFACTS_TRAINING_JSON_H_

#include <string>

#include "nlohmann/json.hpp"
#include "training/training_step.h"

namespace autopar::tools {

/// Where the step's models are written, relative to the output folder.
inline constexpr char kInitModelPath[] = "step/init.onnx";
inline constexpr char kGradientModelPath[] = "step/gradient.onnx";
inline constexpr char kUpdateModelPath[] = "step/update.onnx";

/// The "training" object of plan.json for `step`, built with `options`.
nlohmann::ordered_json TrainingStepJson(const training::TrainingStep& step,
                                        const training::TrainingOptions& options);

}  // namespace autopar::tools

#endif  // AUTOPAR_TOOLS_ARTIFACTS_TRAINING_JSON_H_
