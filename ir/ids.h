// Strong integer ids for the IR arena. A NodeId cannot be passed where a ValueId
// is expected, and both are plain 32-bit indices (cheap to copy, hash and sort).
#ifndef AUTOPAR_IR_IDS_H_
#define AUTOPAR_IR_IDS_H_

#include <cstdint>
#include <functional>
#include <limits>

namespace autopar::ir {

/// An index into one of the Graph's arenas, typed by `Tag` so that ids of
/// different arenas do not mix. The default-constructed id is invalid.
template <typename Tag>
class Id {
 public:
  static constexpr uint32_t kInvalid = std::numeric_limits<uint32_t>::max();

  constexpr Id() = default;
  constexpr explicit Id(uint32_t index) : index_(index) {}

  constexpr uint32_t index() const { return index_; }
  constexpr bool valid() const { return index_ != kInvalid; }

  friend constexpr bool operator==(Id a, Id b) { return a.index_ == b.index_; }
  friend constexpr auto operator<=>(Id a, Id b) { return a.index_ <=> b.index_; }

  template <typename H>
  friend H AbslHashValue(H h, Id id) {
    return H::combine(std::move(h), id.index_);
  }

 private:
  uint32_t index_ = kInvalid;
};

struct NodeTag {};
struct ValueTag {};
using NodeId = Id<NodeTag>;
using ValueId = Id<ValueTag>;

}  // namespace autopar::ir

#endif  // AUTOPAR_IR_IDS_H_
