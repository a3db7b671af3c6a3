// Gradient rules of the element-wise operators: arithmetic with numpy
// broadcasting (each operand's gradient is summed back to its shape), math
// functions and activations. Formulas: the table in gradient_rules.cc.
#include "training/gradient_rules_internal.h"

namespace autopar::training::rules {

namespace {

// Sets input i's gradient to `g` (of the output's shape) summed back to input
// i's shape.
void SetReduced(NodeGradient& n, int i, const std::string& g) {
  n.SetGradient(i, n.emit().SumToShape(g, n.YDims(0), n.XDims(i)));
}

}  // namespace

absl::Status Add(NodeGradient& n) {
  for (int i = 0; i < 2; ++i) {
    if (n.Needs(i)) SetReduced(n, i, n.dY(0));
  }
  return absl::OkStatus();
}

absl::Status Sub(NodeGradient& n) {
  if (n.Needs(0)) SetReduced(n, 0, n.dY(0));
  if (n.Needs(1)) SetReduced(n, 1, n.emit().Op("Neg", {n.dY(0)}));
  return absl::OkStatus();
}

absl::Status Mul(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  if (n.Needs(0)) SetReduced(n, 0, e.Op("Mul", {n.dY(0), n.X(1)}));
  if (n.Needs(1)) SetReduced(n, 1, e.Op("Mul", {n.dY(0), n.X(0)}));
  return absl::OkStatus();
}

absl::Status Div(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  if (n.Needs(0)) SetReduced(n, 0, e.Op("Div", {n.dY(0), n.X(1)}));
  if (n.Needs(1)) {
    // d(A/B)/dB = −A/B² = −Y/B.
    std::string t = e.Op("Div", {e.Op("Mul", {n.dY(0), n.Y(0)}), n.X(1)});
    SetReduced(n, 1, e.Op("Neg", {t}));
  }
  return absl::OkStatus();
}

absl::Status Neg(NodeGradient& n) {
  n.SetGradient(0, n.emit().Op("Neg", {n.dY(0)}));
  return absl::OkStatus();
}

absl::Status Identity(NodeGradient& n) {
  n.SetGradient(0, n.dY(0));
  return absl::OkStatus();
}

absl::Status Relu(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string positive = e.Op("Greater", {n.Y(0), e.Scalar(0, n.YType(0))});
  n.SetGradient(0, e.Op("Mul", {n.dY(0), e.Cast(positive, n.YType(0))}));
  return absl::OkStatus();
}

absl::Status Sigmoid(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string one_minus = e.Op("Sub", {e.Scalar(1, n.YType(0)), n.Y(0)});
  n.SetGradient(0, e.Op("Mul", {n.dY(0), e.Op("Mul", {n.Y(0), one_minus})}));
  return absl::OkStatus();
}

absl::Status Tanh(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string square = e.Op("Mul", {n.Y(0), n.Y(0)});
  std::string one_minus = e.Op("Sub", {e.Scalar(1, n.YType(0)), square});
  n.SetGradient(0, e.Op("Mul", {n.dY(0), one_minus}));
  return absl::OkStatus();
}

absl::Status Exp(NodeGradient& n) {
  n.SetGradient(0, n.emit().Op("Mul", {n.dY(0), n.Y(0)}));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
