#include "ir/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace autopar::ir {

Shape::Shape(std::vector<int64_t> dims) : has_rank_(true) {
  dims_.reserve(dims.size());
  for (int64_t d : dims) dims_.push_back(Dim{d, ""});
}

Shape Shape::FromDims(std::vector<Dim> dims) {
  Shape shape;
  shape.has_rank_ = true;
  shape.dims_ = std::move(dims);
  return shape;
}

bool Shape::IsStatic() const {
  if (!has_rank_) return false;
  for (const Dim& d : dims_) {
    if (!d.known()) return false;
  }
  return true;
}

std::vector<int64_t> Shape::Values() const {
  std::vector<int64_t> values;
  values.reserve(dims_.size());
  for (const Dim& d : dims_) values.push_back(d.value);
  return values;
}

std::optional<int64_t> Shape::NumElements() const {
  if (!IsStatic()) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : dims_) {
    std::optional<int64_t> product = CheckedMul(n, d.value);
    if (!product) return std::nullopt;
    n = *product;
  }
  return n;
}

std::string Shape::ToString() const {
  if (!has_rank_) return "unranked";
  return absl::StrCat("[",
                      absl::StrJoin(dims_, ",",
                                    [](std::string* out, const Dim& d) {
                                      if (d.known()) {
                                        absl::StrAppend(out, d.value);
                                      } else {
                                        absl::StrAppend(out, d.symbol.empty() ? "?" : d.symbol);
                                      }
                                    }),
                      "]");
}

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return std::nullopt;
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
  return result;
}

}  // namespace autopar::ir
