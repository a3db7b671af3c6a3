// The capped-chunk cutter that SGP's contiguous segments (steps 2 and 4c, on
// the units) and its interleaved chunks of the nodes (step 7b) share: an
// order of work items cut into consecutive chunks, each chunk on a given
// device with its work within a cap, the caps as small as they can be. It
// works on prefix sums of the work along the order (one array per device
// kind), so a chunk's work is one subtraction and its end one binary search,
// and takes an optional memory bound per chunk (SegmentEnds' furthest ends,
// memory_profile.h). One copy: both callers bisect on the first cap with
// the same greedy fill and the same growing caps.
#ifndef AUTOPAR_SEARCH_CAPPED_CHUNKS_H_
#define AUTOPAR_SEARCH_CAPPED_CHUNKS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace autopar::search {

/// One chunk's device as the cutter sees it.
struct ChunkDevice {
  /// Work along the order on this device: n + 1 non-decreasing prefix sums,
  /// the first 0. Must outlive the cutter.
  const std::vector<double>* prefix_us = nullptr;
  /// Optional memory bound: a chunk that starts at position b ends at
  /// (*memory_ends)[b] at the latest. nullptr: no bound. Must outlive the
  /// cutter.
  const std::vector<uint32_t>* memory_ends = nullptr;
};

/// What a chunk that can take nothing means while positions remain.
enum class EmptyChunk {
  kAllowed,  // it stays empty and the next chunk goes on from there
  kFails,    // the cut fails: every chunk must take work (a segment per device)
};

struct ChunkCaps {
  /// The first chunk's cap on its work.
  double first_us = 0;
  /// Chunk j's cap is first_us · (1 + growth · j / max(1, J - 1)): the last
  /// chunk's is (1 + growth) times the first's.
  double growth = 0;
  EmptyChunk empty = EmptyChunk::kAllowed;
};

class CappedChunker {
 public:
  /// Chunk j runs on chunks[j]; all share one order of n positions.
  explicit CappedChunker(absl::Span<const ChunkDevice> chunks);

  /// Greedy maximal chunks: chunk j takes the longest run of the order from
  /// where chunk j - 1 ended whose work is within its cap and, when given,
  /// its memory bound; chunks after the last position are empty. True when
  /// the chunks cover the order (and, with EmptyChunk::kFails, none that
  /// had positions left took nothing). ends() holds the chunks' ends either
  /// way (up to a failing chunk).
  bool Fill(const ChunkCaps& caps);

  /// The least first cap for which Fill covers the order with `growth` and
  /// `empty`: bisection between 0 and the largest whole-order work of any
  /// chunk's device, 64 steps or until within 1e-9 of it; then ends() is
  /// the fill at that cap. False when no cap covers it (the memory bounds
  /// do not allow it).
  bool Balance(double growth, EmptyChunk empty);

  /// Chunk j is [ends()[j - 1], ends()[j]) of the order, chunk 0 from 0.
  const std::vector<uint32_t>& ends() const { return ends_; }

 private:
  std::vector<ChunkDevice> chunks_;
  uint32_t n_ = 0;
  std::vector<uint32_t> ends_;  // reused by every probe of the bisection
};

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_CAPPED_CHUNKS_H_
