// Tensor shapes: a rank (possibly unknown) and dims that are known numbers,
// named symbols ("batch") or unknown ("?").
#ifndef AUTOPAR_IR_SHAPE_H_
#define AUTOPAR_IR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace autopar::ir {

/// One dimension. `value >= 0` when known; otherwise `symbol` may name it
/// (ONNX dim_param) or be empty (a dim nobody named: "?").
struct Dim {
  int64_t value = -1;
  std::string symbol;

  bool known() const { return value >= 0; }
  friend bool operator==(const Dim&, const Dim&) = default;
};

class Shape {
 public:
  /// Unknown rank.
  Shape() = default;
  /// Known rank, every dim known.
  explicit Shape(std::vector<int64_t> dims);
  Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}
  /// Known rank with the given (possibly unknown) dims.
  static Shape FromDims(std::vector<Dim> dims);

  bool has_rank() const { return has_rank_; }
  size_t rank() const { return dims_.size(); }
  const std::vector<Dim>& dims() const { return dims_; }
  std::vector<Dim>& mutable_dims() { return dims_; }
  const Dim& dim(size_t i) const { return dims_[i]; }

  /// Known rank and every dim known.
  bool IsStatic() const;
  /// Dims as numbers; only meaningful when IsStatic().
  std::vector<int64_t> Values() const;
  /// Product of the dims; nullopt when not static or when it overflows int64.
  std::optional<int64_t> NumElements() const;
  /// "[1,3,224,224]", "[batch,128]", "[?,3]"; "unranked" without a rank.
  std::string ToString() const;

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  bool has_rank_ = false;
  std::vector<Dim> dims_;
};

/// a * b, or nullopt on int64 overflow or a negative operand.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_SHAPE_H_
