// The loss of a training step, and where its backward pass starts:
//   output:NAME         a scalar output of the model is the loss (a model
//                       exported with its loss and labels inputs);
//   cross-entropy:LOGITS  torch.nn.CrossEntropyLoss (mean over the batch and
//                       any further dims; classes on axis 1) against a new
//                       int64 labels input of LOGITS' shape without axis 1;
//   mse:OUTPUT          torch.nn.MSELoss (mean) against a new target input of
//                       OUTPUT's shape and dtype.
// The added losses seed the backward pass with their own derivative
// (softmax(x) − onehot(labels), 2(y − t)), divided by the count: the loss
// nodes themselves need no rules.
#ifndef AUTOPAR_TRAINING_LOSS_H_
#define AUTOPAR_TRAINING_LOSS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "training/graph_emitter.h"

namespace autopar::training {

enum class LossKind : uint8_t { kOutput, kCrossEntropy, kMse };

struct LossSpec {
  LossKind kind = LossKind::kOutput;
  /// The loss output, the logits or the output compared with the target.
  std::string value;
  /// Cross-entropy's labels or mse's target input (--labels): the model's
  /// own input of that name when it has one (int64 labels of the logits'
  /// shape without axis 1; a target of the output's dtype and shape), else a
  /// new input; empty: a new input "labels" or "target".
  std::string labels_name;
};

/// Parses "output:NAME", "cross-entropy:LOGITS" or "mse:OUTPUT".
absl::StatusOr<LossSpec> ParseLossSpec(std::string_view text);
/// The inverse of ParseLossSpec.
std::string LossSpecText(const LossSpec& spec);

struct WrittenLoss {
  /// The scalar loss value.
  std::string loss;
  /// The labels or target input (the model's own, or added); empty for
  /// output:.
  std::string input;
  /// The graph input the loss added, when the model had none of that name.
  std::optional<onnx::ValueInfoProto> added_input;
  /// Cross-entropy's number of classes (the logits' axis 1); 0 otherwise.
  int64_t classes = 0;
  /// Where the backward pass starts: (forward value, its gradient).
  std::vector<std::pair<ir::ValueId, std::string>> seeds;
};

/// Writes `spec`'s loss nodes (and its seeds) through `emit`, reading
/// `graph`'s static shapes. Errors: the value does not exist, is not a
/// floating-point tensor, is not a scalar (output:), has too few dims; the
/// --labels input has the wrong dtype or shape; the added input's name is
/// taken.
absl::StatusOr<WrittenLoss> WriteLoss(const ir::Graph& graph, const LossSpec& spec,
                                      GraphEmitter& emit);

}  // namespace autopar::training

#endif  // AUTOPAR_TRAINING_LOSS_H_
