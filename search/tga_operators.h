// TGA's genetic operators and initial genomes. They respect
// the graph: units are numbered in topological order, so a contiguous range
// of unit ids is a segment of that order, and a "boundary" is a position
// where the device changes from one unit to the next.
//
//  - SegmentCrossover: the child takes a segment of the order from one
//    parent and the rest from the other (two-point crossover on the order).
//  - MoveToNeighbourDevice: one end of a cut edge joins the device of the
//    other end — the move that can only shorten a transfer.
//  - ShiftBoundary / RelieveDevice: a boundary between two adjacent runs
//    moves, handing a block of units to the neighbouring run's device;
//    RelieveDevice picks a boundary of the hottest device (the busiest, or
//    the one over its memory) and shrinks it.
//  - OffloadBranch: a unit that shares a producer with another reader on
//    the same device, neither depending on the other — the head of a parallel
//    branch — moves, with the chain it heads, to another device, so that the
//    branches can run side by side.
//  - SplitOff: a block becomes a new segment on another device (how a plan
//    that uses few devices starts using more).
//  - MoveToRandomDevice: one unit anywhere (exploration only).
// Every operator draws from the Rng it is given, in a fixed order: the same
// seed yields the same genomes.
#ifndef AUTOPAR_SEARCH_TGA_OPERATORS_H_
#define AUTOPAR_SEARCH_TGA_OPERATORS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "costmodel/cost_graph.h"
#include "search/tga_evaluator.h"

namespace autopar::search {

/// The search's one source of randomness.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  /// Uniform in [0, n); n > 0.
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(engine_() % n); }
  /// Uniform in [0, 1).
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  bool Chance(double p) { return Unit() < p; }
  /// Log-uniform in [1, max] (max >= 1): mostly small steps, now and then a
  /// large one.
  uint32_t LogUniform(uint32_t max);

 private:
  std::mt19937_64 engine_;
};

/// `child` = `a` with the units of a random segment [begin, end) of the
/// topological order taken from `b`; the schedule is a's.
void SegmentCrossover(const Genome& a, const Genome& b, Rng& rng, Genome& child);

/// One end of a random cut edge moves to the other end's device. False
/// (nothing changed) when no edge is cut.
bool MoveToNeighbourDevice(const costmodel::CostGraph& graph, Genome& genome, Rng& rng);

/// A random boundary moves by LogUniform(max_shift) units, at most the
/// length of the run it eats into. False when the genome has no boundary.
bool ShiftBoundary(Genome& genome, Rng& rng, uint32_t max_shift);

/// A random boundary of `hot`'s runs moves into the run, so that `hot` loses
/// up to LogUniform(max_shift) units to its neighbour. False when `hot` has
/// no boundary.
bool RelieveDevice(Genome& genome, int hot, Rng& rng, uint32_t max_shift);

/// Tries a few random units for a branch head (a producer read by another
/// unit on the same device, no path between the two) and moves it, and the single-reader
/// chain below it, to a random other device. False when none was found.
bool OffloadBranch(const costmodel::CostGraph& graph, Genome& genome, int num_devices, Rng& rng);

/// A random block of LogUniform(max_length) units moves to a random other
/// device. False with one device.
bool SplitOff(Genome& genome, int num_devices, Rng& rng, uint32_t max_length);

/// One random unit to a random other device. False with one device.
bool MoveToRandomDevice(Genome& genome, int num_devices, Rng& rng);

/// Contiguous segments at random cut points on a random number of distinct
/// random devices.
Genome RandomCuts(uint32_t num_units, int num_devices, Rng& rng);

/// Contiguous segments of random length (around an even share) that each fit
/// their device by the memory estimate: `ends[d]` is SegmentEnds for device
/// d's capacity. Devices in random order, reused when units remain.
Genome RandomFill(const std::vector<const std::vector<uint32_t>*>& ends, Rng& rng);

/// Every unit on a uniformly random device.
Genome RandomDevices(uint32_t num_units, int num_devices, Rng& rng);

/// Blocks of `block` units dealt to the devices in turn, starting at
/// `first`.
Genome BlockRoundRobin(uint32_t num_units, int num_devices, uint32_t block, int first);

}  // namespace autopar::search

#endif  // AUTOPAR_SEARCH_TGA_OPERATORS_H_
