// Gradient rules of the element-wise operators: arithmetic with numpy
// broadcasting (each operand's gradient is summed back to its shape), math
// functions and activations. Formulas: the table in gradient_rules.cc.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

namespace {

// `mask` (a boolean tensor) as 0/1 of `dtype`.
std::string AsNumber(GraphEmitter& e, const std::string& mask, ir::DType dtype) {
  return e.Cast(mask, dtype);
}

// dX = dY·f for a unary operator, f of X's shape.
void SetUnary(NodeGradient& n, const std::string& factor) {
  n.SetGradient(0, n.emit().Op("Mul", {n.dY(0), factor}));
}

}  // namespace

absl::Status Clip(NodeGradient& n) {
  // Bounds: inputs 1 and 2 from opset 11 (each optional), attributes min and
  // max before. The gradient passes where min < X < max (strictly, as Relu's
  // and torch's hardtanh/ReLU6 do); a bound given as a tensor takes dY where
  // it was chosen.
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  std::string low, high;
  if (n.node().opset >= 11) {
    if (n.HasInput(1)) low = n.X(1);
    if (n.HasInput(2)) high = n.X(2);
  } else {
    if (n.node().FindAttribute("min") != nullptr) low = e.Scalar(n.node().GetFloat("min", 0), t);
    if (n.node().FindAttribute("max") != nullptr) high = e.Scalar(n.node().GetFloat("max", 0), t);
  }
  std::string inside;
  if (!low.empty()) inside = e.Op("Greater", {n.X(0), low});
  if (!high.empty()) {
    std::string below = e.Op("Less", {n.X(0), high});
    inside = inside.empty() ? below : e.Op("And", {inside, below});
  }
  if (n.Needs(0)) {
    n.SetGradient(0, inside.empty() ? n.dY(0) : e.Op("Where", {inside, n.dY(0), e.Scalar(0, t)}));
  }
  const std::string zero = e.Scalar(0, t);
  if (n.HasInput(1) && n.Needs(1)) {
    // X ≤ min gives min (unless max is lower still: then max wins).
    // (Not of Greater/Less: LessOrEqual and GreaterOrEqual need opset 12.)
    std::string chosen = e.Op("Not", {e.Op("Greater", {n.X(0), low})});
    if (!high.empty()) chosen = e.Op("And", {chosen, e.Op("Not", {e.Op("Greater", {low, high})})});
    std::string g = e.Op("Where", {chosen, n.dY(0), zero});
    n.SetGradient(1, e.SumToShape(g, n.YDims(0), n.XDims(1)));
  }
  if (n.HasInput(2) && n.Needs(2)) {
    std::string chosen = e.Op("Not", {e.Op("Less", {n.X(0), high})});
    if (!low.empty()) chosen = e.Op("Or", {chosen, e.Op("Greater", {low, high})});
    std::string g = e.Op("Where", {chosen, n.dY(0), zero});
    n.SetGradient(2, e.SumToShape(g, n.YDims(0), n.XDims(2)));
  }
  return absl::OkStatus();
}

absl::Status CastBack(NodeGradient& n) {
  // Only float-to-float casts are on the gradient path (an integer output
  // carries no gradient): dY is cast back to X's type.
  n.SetGradient(0, n.emit().Cast(n.dY(0), n.XType(0)));
  return absl::OkStatus();
}

absl::Status Pow(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  // The exponent may be an integer tensor (opset 12+): it is used as X's type.
  std::string b = n.XType(1) == t ? n.X(1) : e.Cast(n.X(1), t);
  if (n.Needs(0)) {
    // B·A^(B−1), which is finite at A = 0 for B ≥ 1 (B·Y/A would not be).
    std::string power = e.Op("Pow", {n.X(0), e.Op("Sub", {b, e.Scalar(1, t)})});
    std::string g = e.Op("Mul", {n.dY(0), e.Op("Mul", {b, power})});
    n.SetGradient(0, e.SumToShape(g, n.YDims(0), n.XDims(0)));
  }
  if (n.Needs(1)) {
    // Y·ln A; 0 where A = 0 (the limit torch takes too).
    std::string zero = e.Scalar(0, t);
    std::string ln = e.Op("Mul", {n.Y(0), e.Op("Log", {n.X(0)})});
    ln = e.Op("Where", {e.Op("Equal", {n.X(0), zero}), zero, ln});
    std::string g = e.Op("Mul", {n.dY(0), ln});
    n.SetGradient(1, e.SumToShape(g, n.YDims(0), n.XDims(1)));
  }
  return absl::OkStatus();
}

absl::Status Sqrt(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string twice = e.Op("Mul", {n.Y(0), e.Scalar(2, n.YType(0))});
  n.SetGradient(0, e.Op("Div", {n.dY(0), twice}));
  return absl::OkStatus();
}

absl::Status Log(NodeGradient& n) {
  n.SetGradient(0, n.emit().Op("Div", {n.dY(0), n.X(0)}));
  return absl::OkStatus();
}

absl::Status Reciprocal(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  SetUnary(n, e.Op("Neg", {e.Op("Mul", {n.Y(0), n.Y(0)})}));
  return absl::OkStatus();
}

absl::Status Abs(NodeGradient& n) {
  SetUnary(n, n.emit().Op("Sign", {n.X(0)}));
  return absl::OkStatus();
}

absl::Status LeakyRelu(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  const float alpha = n.node().GetFloat("alpha", 0.01f);
  std::string positive = e.Op("Greater", {n.X(0), e.Scalar(0, t)});
  SetUnary(n, e.Op("Where", {positive, e.Scalar(1, t), e.Scalar(alpha, t)}));
  return absl::OkStatus();
}

absl::Status Elu(NodeGradient& n) {
  // X ≤ 0: Y = α(eˣ − 1), so dY/dX = eˣ·α = Y + α.
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  const float alpha = n.node().GetFloat("alpha", 1.0f);
  std::string positive = e.Op("Greater", {n.X(0), e.Scalar(0, t)});
  std::string negative_slope = e.Op("Add", {n.Y(0), e.Scalar(alpha, t)});
  SetUnary(n, e.Op("Where", {positive, e.Scalar(1, t), negative_slope}));
  return absl::OkStatus();
}

absl::Status Erf(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  std::string square = e.Op("Mul", {n.X(0), n.X(0)});
  std::string bell = e.Op("Exp", {e.Op("Neg", {square})});
  SetUnary(n, e.Op("Mul", {bell, e.Scalar(2.0 / std::sqrt(M_PI), t)}));
  return absl::OkStatus();
}

absl::Status Softplus(NodeGradient& n) {
  SetUnary(n, n.emit().Op("Sigmoid", {n.X(0)}));
  return absl::OkStatus();
}

absl::Status HardSigmoid(NodeGradient& n) {
  // Y = max(0, min(1, αX + β)): slope α where 0 < αX + β < 1.
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  const float alpha = n.node().GetFloat("alpha", 0.2f);
  const float beta = n.node().GetFloat("beta", 0.5f);
  std::string z = e.Op("Add", {e.Op("Mul", {n.X(0), e.Scalar(alpha, t)}), e.Scalar(beta, t)});
  std::string inside =
      e.Op("And", {e.Op("Greater", {z, e.Scalar(0, t)}), e.Op("Less", {z, e.Scalar(1, t)})});
  SetUnary(n, e.Op("Where", {inside, e.Scalar(alpha, t), e.Scalar(0, t)}));
  return absl::OkStatus();
}

absl::Status HardSwish(NodeGradient& n) {
  // Y = X·max(0, min(1, X/6 + 1/2)): 0 below −3, 1 above 3, X/3 + 1/2
  // between (torch's hardswish_backward, bounds included the same way).
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  std::string middle = e.Op("Add", {e.Op("Div", {n.X(0), e.Scalar(3, t)}), e.Scalar(0.5, t)});
  std::string upper =
      e.Op("Where", {e.Op("Greater", {n.X(0), e.Scalar(3, t)}), e.Scalar(1, t), middle});
  SetUnary(n, e.Op("Where", {e.Op("Less", {n.X(0), e.Scalar(-3, t)}), e.Scalar(0, t), upper}));
  return absl::OkStatus();
}

absl::Status Gelu(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  const ir::DType t = n.XType(0);
  const std::string& x = n.X(0);
  auto c = [&](double v) { return e.Scalar(v, t); };
  auto mul = [&](const std::string& a, const std::string& b) { return e.Op("Mul", {a, b}); };
  auto add = [&](const std::string& a, const std::string& b) { return e.Op("Add", {a, b}); };
  const std::string approximate = n.node().GetString("approximate", "none");
  if (approximate == "none") {
    // Φ(x) + x·φ(x), Φ = (1 + erf(x/√2))/2, φ = exp(−x²/2)/√(2π).
    std::string cdf = mul(add(c(1), e.Op("Erf", {mul(x, c(M_SQRT1_2))})), c(0.5));
    std::string pdf = mul(e.Op("Exp", {mul(mul(x, x), c(-0.5))}), c(0.5 * M_2_SQRTPI * M_SQRT1_2));
    SetUnary(n, add(cdf, mul(x, pdf)));
    return absl::OkStatus();
  }
  if (approximate == "tanh") {
    // Y = x(1 + tanh u)/2, u = √(2/π)(x + 0.044715x³):
    // dY/dx = (1 + tanh u)/2 + x(1 − tanh² u)·√(2/π)(1 + 3·0.044715x²)/2.
    const double k = M_2_SQRTPI * M_SQRT1_2;  // √(2/π)
    std::string square = mul(x, x);
    std::string u = mul(mul(x, add(c(1), mul(square, c(0.044715)))), c(k));
    std::string th = e.Op("Tanh", {u});
    std::string first = mul(add(c(1), th), c(0.5));
    std::string sech2 = e.Op("Sub", {c(1), mul(th, th)});
    std::string du = mul(add(c(1), mul(square, c(3 * 0.044715))), c(0.5 * k));
    SetUnary(n, add(first, mul(mul(x, sech2), du)));
    return absl::OkStatus();
  }
  return n.Unsupported(absl::StrCat("Gelu approximate='", approximate, "' is not an ONNX form"));
}

absl::Status SumInputs(NodeGradient& n) {
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.Needs(i)) SetReduced(n, i, n.dY(0));
  }
  return absl::OkStatus();
}

absl::Status MeanInputs(NodeGradient& n) {
  GraphEmitter& e = n.emit();
  std::string share =
      e.Op("Div", {n.dY(0), e.Scalar(static_cast<double>(n.num_inputs()), n.YType(0))});
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.Needs(i)) SetReduced(n, i, share);
  }
  return absl::OkStatus();
}

absl::Status MaxMinInputs(NodeGradient& n) {
  // Each input equal to Y takes dY; inputs tied for the extreme share it
  // equally (torch's maximum/minimum do the same for two).
  GraphEmitter& e = n.emit();
  const ir::DType t = n.YType(0);
  if (n.num_inputs() == 1) {
    n.SetGradient(0, n.dY(0));
    return absl::OkStatus();
  }
  std::vector<std::string> chosen;
  for (int i = 0; i < n.num_inputs(); ++i) {
    chosen.push_back(AsNumber(e, e.Op("Equal", {n.X(i), n.Y(0)}), t));
  }
  std::string ties = e.Op("Sum", chosen, {}, "ties");  // ≥ 1 everywhere, of Y's shape
  std::string share = e.Op("Div", {n.dY(0), ties});
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.Needs(i)) SetReduced(n, i, e.Op("Mul", {share, chosen[i]}));
  }
  return absl::OkStatus();
}

absl::Status Dropout(NodeGradient& n) {
  // The inference form is the identity. The training form (training_mode
  // true from opset 12, is_test = 0 before opset 7) draws a random mask the
  // gradient would need; it is refused.
  if (n.node().opset < 7 && n.node().GetInt("is_test", 0) == 0) {
    return n.Unsupported("Dropout in training form (is_test = 0) has no gradient rule");
  }
  if (n.HasInput(2)) {
    const std::optional<std::vector<int64_t>>& mode = n.XInts(2);
    if (!mode.has_value() || mode->size() != 1) {
      return n.Unsupported("Dropout's training_mode is not a constant");
    }
    if ((*mode)[0] != 0) {
      return n.Unsupported("Dropout in training form (training_mode = true) has no gradient rule");
    }
  }
  n.SetGradient(0, n.dY(0));
  return absl::OkStatus();
}

}  // namespace autopar::training::rules
