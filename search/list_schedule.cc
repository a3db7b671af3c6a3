#include "search/list_schedule.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace autopar::search {

using costmodel::Cluster;
using costmodel::CostGraph;

namespace {

/// How many positions ahead the scheduling loop fetches its random reads.
constexpr uint32_t kPrefetchAhead = 8;

/// The bits of a double as an unsigned integer in the same order (IEEE 754:
/// a negative's bits flipped whole, a positive's sign bit set); -0 as +0.
uint64_t OrderedBits(double value) {
  if (value == 0) value = 0;
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
}

/// A unit and 32 bits of its sort key.
struct KeyedUnit {
  uint32_t bits;
  uint32_t unit;
};

/// Stable least-significant-digit radix sort by `bits`, ascending: O(V) per
/// pass, passes whose digit all items share skipped.
void RadixSortByBits(std::vector<KeyedUnit>& items, std::vector<KeyedUnit>& scratch) {
  constexpr int kDigitBits = 11;
  constexpr int kPasses = (32 + kDigitBits - 1) / kDigitBits;
  constexpr uint32_t kDigits = uint32_t{1} << kDigitBits;
  auto digit = [](const KeyedUnit& item, int pass) {
    return (item.bits >> (kDigitBits * pass)) & (kDigits - 1);
  };
  const auto n = static_cast<uint32_t>(items.size());
  std::vector<uint32_t> counts(kPasses * kDigits, 0);
  for (const KeyedUnit& item : items) {
    for (int pass = 0; pass < kPasses; ++pass) ++counts[pass * kDigits + digit(item, pass)];
  }
  scratch.resize(n);
  for (int pass = 0; pass < kPasses; ++pass) {
    uint32_t* const count = counts.data() + pass * kDigits;
    if (std::find(count, count + kDigits, n) != count + kDigits) continue;  // would change nothing
    uint32_t offset = 0;
    for (uint32_t d = 0; d < kDigits; ++d) offset += std::exchange(count[d], offset);
    for (const KeyedUnit& item : items) scratch[count[digit(item, pass)]++] = item;
    items.swap(scratch);
  }
}

/// Insertion sort of `order` by key, descending, stable. Gives up (false,
/// `order` then scrambled) once it has moved more than kMaxMovesPerUnit
/// units per unit seen: O(V) either way.
bool InsertionSortDescending(const std::vector<uint64_t>& key, std::vector<uint32_t>& order) {
  constexpr uint64_t kMaxMovesPerUnit = 8;
  constexpr uint64_t kSlackMoves = 1024;
  uint64_t moves = 0;
  for (size_t i = 1; i < order.size(); ++i) {
    const uint32_t unit = order[i];
    size_t j = i;
    for (; j > 0 && key[order[j - 1]] < key[unit]; --j) order[j] = order[j - 1];
    order[j] = unit;
    moves += i - j;
    if (moves > kMaxMovesPerUnit * i + kSlackMoves) return false;
  }
  return true;
}

/// Units by key, descending, equal keys by index ascending. Chains and
/// blocks of branches come nearly in that order already (a unit outranks
/// most later ones): an insertion sort finishes in O(V) there, reading
/// memory in order. Wide DAGs are far from it: a radix sort by the inverted
/// key's low half, then stably by its high half, on 8-byte items (on a
/// million units the passes are memory-bound).
std::vector<uint32_t> SortByKeyDescending(const std::vector<uint64_t>& key) {
  const auto n = static_cast<uint32_t>(key.size());
  std::vector<uint32_t> order(n);
  for (uint32_t u = 0; u < n; ++u) order[u] = u;
  if (InsertionSortDescending(key, order)) return order;
  std::vector<KeyedUnit> items(n), scratch;
  for (uint32_t u = 0; u < n; ++u) items[u] = KeyedUnit{static_cast<uint32_t>(~key[u]), u};
  RadixSortByBits(items, scratch);
  for (KeyedUnit& item : items) item.bits = static_cast<uint32_t>(~key[item.unit] >> 32);
  RadixSortByBits(items, scratch);
  for (uint32_t i = 0; i < n; ++i) order[i] = items[i].unit;
  return order;
}

// Note [Ranks fall along edges]: a unit's rank is its mean compute (>= 0)
// plus, for each reader, at least a transfer (>= 0) and the reader's rank, so
// no reader outranks its producer, and among equals the producer has the
// lower index. So the units HEFT's ready list would yield — the ready unit of
// highest rank, then lowest index — come exactly in rank order: taking the
// highest-ranked ready unit only makes units ready that come later in that
// order, and the next one in it is always ready. One sort replaces the
// ready heap. Keys are clamped to their readers' so that the order stays
// topological even for negative times (for valid inputs the clamp changes
// nothing).

// Steps 1–2: the order in which units are scheduled.
std::vector<uint32_t> ScheduleOrder(const CostGraph& graph, const Cluster& cluster,
                                    const TypicalLink& link) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  // 1. Upward ranks in reverse topological order, and their sort keys.
  std::vector<double> rank(n, 0);
  std::vector<uint64_t> key(n, 0);
  for (uint32_t u = n; u-- > 0;) {
    double compute = 0;
    for (int d = 0; d < num_devices; ++d) compute += graph.compute_us(u, cluster.device(d).kind);
    double tail = 0;
    uint64_t reader_key = 0;
    for (uint32_t e : graph.out_edges(u)) {
      const uint32_t dst = graph.edge_dst(e);
      tail = std::max(tail, link.TransferUs(graph.edge_bytes(e)) + rank[dst]);
      reader_key = std::max(reader_key, key[dst]);
    }
    rank[u] = compute / num_devices + tail;
    key[u] = std::max(OrderedBits(rank[u]), reader_key);
  }
  // 2. Rank order, exits after all others.
  std::vector<uint32_t> order = SortByKeyDescending(key);
  std::stable_partition(order.begin(), order.end(),
                        [&](uint32_t u) { return !graph.out_edges(u).empty(); });
  return order;
}

/// What the scheduling loop reads of each unit, at its position in the
/// order, so that it reads front to back; only producers, tensors and
/// parameter blocks are looked up where they lie.
struct UnitsInOrder {
  struct InEdge {
    uint32_t src;  // the producer's position
    uint32_t tensor;
    double bytes;
  };
  struct Param {
    uint32_t id;
    int64_t bytes;
  };
  int num_kinds = 1;
  std::vector<double> compute_us;  // [position * num_kinds + kind]
  std::vector<uint32_t> in_offsets;
  std::vector<InEdge> in_edges;
  std::vector<uint32_t> param_offsets;  // all 0 without parameters
  std::vector<Param> params;

  absl::Span<const InEdge> Inputs(uint32_t i) const {
    return absl::MakeConstSpan(in_edges.data() + in_offsets[i], in_offsets[i + 1] - in_offsets[i]);
  }
  absl::Span<const Param> Params(uint32_t i) const {
    return absl::MakeConstSpan(params.data() + param_offsets[i],
                               param_offsets[i + 1] - param_offsets[i]);
  }
};

enum class WithParams : bool { kNo, kYes };

// Written unit by unit: reads in index order, writes scattered (cheaper than
// gathering position by position).
UnitsInOrder LayOutInOrder(const CostGraph& graph, const std::vector<uint32_t>& order,
                           WithParams with_params) {
  const uint32_t n = graph.num_units();
  const bool params = with_params == WithParams::kYes;
  std::vector<uint32_t> position(n);
  for (uint32_t i = 0; i < n; ++i) position[order[i]] = i;
  UnitsInOrder units;
  units.num_kinds = graph.num_device_kinds();
  units.in_offsets.assign(static_cast<size_t>(n) + 1, 0);
  units.param_offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (uint32_t u = 0; u < n; ++u) {
    units.in_offsets[position[u] + 1] = static_cast<uint32_t>(graph.in_edges(u).size());
    if (params) {
      units.param_offsets[position[u] + 1] = static_cast<uint32_t>(graph.params(u).size());
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    units.in_offsets[i + 1] += units.in_offsets[i];
    units.param_offsets[i + 1] += units.param_offsets[i];
  }
  units.compute_us.resize(static_cast<size_t>(n) * units.num_kinds);
  units.in_edges.resize(graph.num_edges());
  units.params.resize(units.param_offsets[n]);
  for (uint32_t u = 0; u < n; ++u) {
    const uint32_t i = position[u];
    for (int k = 0; k < units.num_kinds; ++k) {
      units.compute_us[static_cast<size_t>(i) * units.num_kinds + k] = graph.compute_us(u, k);
    }
    uint32_t next = units.in_offsets[i];
    for (uint32_t e : graph.in_edges(u)) {
      units.in_edges[next++] =
          UnitsInOrder::InEdge{position[graph.edge_src(e)], graph.edge_tensor(e),
                               static_cast<double>(graph.edge_bytes(e))};
    }
    if (!params) continue;
    next = units.param_offsets[i];
    for (uint32_t p : graph.params(u)) {
      units.params[next++] = UnitsInOrder::Param{p, graph.param_bytes(p)};
    }
  }
  return units;
}

}  // namespace

std::optional<ListSchedule> ScheduleByEarliestFinish(const CostGraph& graph, const Cluster& cluster,
                                                     const TypicalLink& link,
                                                     absl::Span<const int64_t> param_budget_bytes) {
  const uint32_t n = graph.num_units();
  const int num_devices = cluster.num_devices();
  const std::vector<uint32_t> order = ScheduleOrder(graph, cluster, link);

  // Link and kind tables are flat arrays, and parameters are tracked only
  // when some budget is below their total: the loop below is the hot loop.
  std::vector<int> kind(num_devices);
  for (int d = 0; d < num_devices; ++d) kind[d] = cluster.device(d).kind;
  const size_t num_links = static_cast<size_t>(num_devices) * num_devices;
  std::vector<double> us_per_byte(num_links, 0), latency_us(num_links, 0);
  for (int a = 0; a < num_devices; ++a) {
    for (int b = 0; b < num_devices; ++b) {
      if (a == b) continue;
      us_per_byte[a * num_devices + b] = 1e6 / cluster.bandwidth_bytes_per_s(a, b);
      latency_us[a * num_devices + b] = cluster.latency_us(a, b);
    }
  }
  int64_t total_param_bytes = 0;
  for (uint32_t p = 0; p < graph.num_params(); ++p) total_param_bytes += graph.param_bytes(p);
  bool budgets_bind = false;
  for (int64_t budget : param_budget_bytes) budgets_bind |= budget < total_param_bytes;
  const UnitsInOrder units =
      LayOutInOrder(graph, order, budgets_bind ? WithParams::kYes : WithParams::kNo);

  ListSchedule result;
  std::vector<int32_t>& device = result.placement.device;
  std::vector<double>& start = result.placement.priority;
  device.assign(n, -1);
  start.assign(n, 0);
  struct Scheduled {
    double finish;
    int32_t device;
  };
  std::vector<Scheduled> scheduled(n, Scheduled{0, -1});       // by position
  std::vector<uint64_t> sent(graph.num_tensors(), 0);          // bit d: a copy goes to device d
  std::vector<uint64_t> param_holders(graph.num_params(), 0);  // bit d: block on device d
  std::vector<int64_t> param_bytes(num_devices, 0);
  std::vector<double> device_free(num_devices, 0), device_busy(num_devices, 0);
  std::vector<double> link_free(num_links, 0), link_busy(num_links, 0);
  // The inputs of the unit at hand.
  struct Input {
    double finish;
    double bytes;
    int from;
    uint64_t sent;
  };
  std::vector<Input> inputs;

  for (uint32_t i = 0; i < n; ++i) {
    // The producers, tensors and blocks a few positions ahead lie anywhere:
    // fetch them now, to be in cache when needed.
    if (i + kPrefetchAhead < n) {
      for (const UnitsInOrder::InEdge& in : units.Inputs(i + kPrefetchAhead)) {
        __builtin_prefetch(&scheduled[in.src]);
        __builtin_prefetch(&sent[in.tensor]);
      }
      for (const UnitsInOrder::Param& p : units.Params(i + kPrefetchAhead)) {
        __builtin_prefetch(&param_holders[p.id]);
      }
    }
    const absl::Span<const UnitsInOrder::InEdge> in_edges = units.Inputs(i);
    const absl::Span<const UnitsInOrder::Param> params = units.Params(i);
    const double* const duration_on_kind =
        units.compute_us.data() + static_cast<size_t>(i) * units.num_kinds;
    inputs.clear();
    for (const UnitsInOrder::InEdge& in : in_edges) {
      const Scheduled& src = scheduled[in.src];
      inputs.push_back(Input{src.finish, in.bytes, src.device, sent[in.tensor]});
    }

    // 3. The device where the unit finishes first (lowest index among
    //    equals). A copy already on its way counts as sent when its producer
    //    ended. Devices holding an input go first; then a device is skipped
    //    when even free inputs could not beat the best so far: most are.
    double inputs_done = 0;
    uint64_t holders = 0;
    for (const Input& in : inputs) {
      inputs_done = std::max(inputs_done, in.finish);
      holders |= uint64_t{1} << in.from;
    }
    int best = -1;
    double best_finish = std::numeric_limits<double>::infinity();
    const uint64_t all_devices =
        num_devices == 64 ? ~uint64_t{0} : (uint64_t{1} << num_devices) - 1;
    for (uint64_t devices : {holders, all_devices & ~holders}) {
      for (; devices != 0; devices &= devices - 1) {  // ascending
        const int d = std::countr_zero(devices);
        const uint64_t bit = uint64_t{1} << d;
        const double duration = duration_on_kind[kind[d]];
        const double lower_bound = std::max(device_free[d], inputs_done) + duration;
        if (lower_bound > best_finish || (lower_bound == best_finish && d > best)) continue;
        if (budgets_bind) {
          int64_t new_param_bytes = 0;
          for (const UnitsInOrder::Param& p : params) {
            if (!(param_holders[p.id] & bit)) new_param_bytes += p.bytes;
          }
          if (new_param_bytes > 0 && param_bytes[d] + new_param_bytes > param_budget_bytes[d]) {
            continue;
          }
        }
        double data_ready = 0;
        for (const Input& in : inputs) {
          double arrival = in.finish;
          if (in.from != d) {
            const size_t l = static_cast<size_t>(in.from) * num_devices + d;
            const double transfer = latency_us[l] + in.bytes * us_per_byte[l];
            arrival = ((in.sent & bit) ? in.finish : std::max(in.finish, link_free[l])) + transfer;
          }
          data_ready = std::max(data_ready, arrival);
        }
        const double done = std::max(device_free[d], data_ready) + duration;
        if (done < best_finish || (done == best_finish && d < best)) {
          best_finish = done;
          best = d;
        }
      }
    }
    if (best < 0) return std::nullopt;

    // 4. Commit: book the transfers on their links in edge order; the start
    //    time is the unit's priority.
    const uint64_t bit = uint64_t{1} << best;
    double data_ready = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Input& in = inputs[k];
      double arrival = in.finish;
      if (in.from != best) {
        const size_t l = static_cast<size_t>(in.from) * num_devices + best;
        const double transfer = latency_us[l] + in.bytes * us_per_byte[l];
        uint64_t& copies = sent[in_edges[k].tensor];
        if (copies & bit) {
          arrival = in.finish + transfer;
        } else {
          arrival = std::max(in.finish, link_free[l]) + transfer;
          link_free[l] = arrival;
          link_busy[l] += transfer;
          copies |= bit;
        }
      }
      data_ready = std::max(data_ready, arrival);
    }
    const double duration = duration_on_kind[kind[best]];
    const uint32_t u = order[i];
    device[u] = best;
    start[u] = std::max(device_free[best], data_ready);
    const double finish = start[u] + duration;
    scheduled[i] = Scheduled{finish, best};
    device_free[best] = finish;
    device_busy[best] += duration;
    result.estimate.step_us = std::max(result.estimate.step_us, finish);
    for (const UnitsInOrder::Param& p : params) {
      if (param_holders[p.id] & bit) continue;
      param_holders[p.id] |= bit;
      param_bytes[best] += p.bytes;
    }
  }
  for (double busy : device_busy)
    result.estimate.bottleneck_us = std::max(result.estimate.bottleneck_us, busy);
  for (double busy : link_busy)
    result.estimate.bottleneck_us = std::max(result.estimate.bottleneck_us, busy);
  return result;
}

}  // namespace autopar::search
