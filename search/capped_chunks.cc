// The capped-chunk cutter (see capped_chunks.h).
#include "search/capped_chunks.h"

#include <algorithm>
#include <limits>

namespace autopar::search {
namespace {

constexpr int kBisectionSteps = 64;

}  // namespace

CappedChunker::CappedChunker(absl::Span<const ChunkDevice> chunks)
    : chunks_(chunks.begin(), chunks.end()),
      n_(chunks.empty() ? 0 : static_cast<uint32_t>(chunks[0].prefix_us->size() - 1)),
      ends_(chunks.size(), 0) {}

bool CappedChunker::Fill(const ChunkCaps& caps) {
  const double last = static_cast<double>(std::max<size_t>(1, chunks_.size() - 1));
  uint32_t begin = 0;
  for (size_t j = 0; j < chunks_.size(); ++j) {
    uint32_t end = begin;
    if (begin < n_) {
      const std::vector<double>& prefix = *chunks_[j].prefix_us;
      const double cap_us = caps.first_us * (1 + caps.growth * static_cast<double>(j) / last);
      end = static_cast<uint32_t>(
          std::upper_bound(prefix.begin() + begin + 1, prefix.end(), prefix[begin] + cap_us) -
          prefix.begin() - 1);
      if (chunks_[j].memory_ends != nullptr) end = std::min((*chunks_[j].memory_ends)[begin], end);
      if (end == begin && caps.empty == EmptyChunk::kFails) return false;
    }
    ends_[j] = end;
    begin = end;
  }
  return begin == n_;
}

bool CappedChunker::Balance(double growth, EmptyChunk empty) {
  if (!Fill({.first_us = std::numeric_limits<double>::infinity(),
             .growth = growth,
             .empty = empty})) {
    return false;
  }
  double low = 0, high = 0;
  for (const ChunkDevice& chunk : chunks_) high = std::max(high, (*chunk.prefix_us)[n_]);
  for (int step = 0; step < kBisectionSteps && high - low > 1e-9 * high; ++step) {
    const double mid = (low + high) / 2;
    (Fill({.first_us = mid, .growth = growth, .empty = empty}) ? high : low) = mid;
  }
  // At the largest whole-order work no cap binds, so this covers the order
  // as the unbounded fill did.
  return Fill({.first_us = high, .growth = growth, .empty = empty});
}

}  // namespace autopar::search
