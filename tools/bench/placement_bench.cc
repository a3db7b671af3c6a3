// The placement benchmark: every placement algorithm on the
// synthetic graph families (1k, 10k and 100k units) and on real exported
// models, on 2, 4 and 8 devices, with loose memory and with a tight cap of
// 0.6 × the single-device peak per device. Prints a Markdown table — one row
// per graph, device count and memory, one column per algorithm: the simulated
// step over the lower bound and the search time, the best plan that fits in
// bold — and writes every measurement to a CSV file. A benchmark, not a
// test: it prints numbers and asserts nothing. scripts/bench_placement.sh
// builds and runs it.
//
// Algorithms too slow for a size are skipped with a note, never left running:
// each has a largest size (kMaxUnits, --max-units-for), and an algorithm whose
// search took over kSlowSearchS on a family is not run on that family's
// larger sizes.
//
// Models are costed for A100-80GB devices over NVLink and coarsened once per
// memory setting (coarsening depends on the largest device's memory, not on
// the device count); the synthetic graphs run on 100 GB/s links, as in
// sgp_bench.
//
//   placement_bench [--quick] [--csv FILE] [--models-dir DIR] [--models a,b,...]
//                   [--algos a,b,...] [--families a,b,...] [--max-units N]
//                   [--max-units-for ALGO=N]... [--time-budget SECONDS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "costmodel/cluster.h"
#include "costmodel/device.h"
#include "costmodel/lower_bound.h"
#include "costmodel/simulator.h"
#include "passes/coarsen.h"
#include "pipeline/cluster_request.h"
#include "pipeline/planning.h"
#include "search/search.h"
#include "tools/bench/graph_families.h"

namespace autopar::bench {
namespace {

using costmodel::Cluster;
using costmodel::CostGraph;

constexpr int64_t kLooseMemoryBytes = int64_t{1} << 50;
constexpr double kTightFraction = 0.6;
constexpr double kSyntheticLinkBytesPerS = 100e9;
constexpr double kSyntheticLinkLatencyUs = 5;
/// A search slower than this on a family skips that family's larger sizes.
constexpr double kSlowSearchS = 10;
/// The real models (tools/export_models.py names).
constexpr const char* kModels[] = {"resnet50",       "inception_v3",    "transformer_seq2seq",
                                   "bert_base_like", "gpt2_small_like", "lstm_seq2seq"};
/// Largest graph each algorithm runs on (units); algorithms not listed have
/// no limit. m-SCT's favourite-child rule and TGA's populations of
/// simulations grow fastest.
std::map<std::string, uint32_t> DefaultMaxUnits() { return {{"m-sct", 10000}}; }

struct Config {
  bool quick = false;
  std::string csv_path = "placement_bench.csv";
  std::string models_dir = "build/models";
  std::vector<std::string> models{std::begin(kModels), std::end(kModels)};
  std::vector<std::string> algorithms = search::AlgorithmNames();
  std::vector<std::string> families;
  uint32_t max_units = 100000;
  std::map<std::string, uint32_t> max_units_for = DefaultMaxUnits();
  double time_budget_s = 2;
  /// Pipelined micro-batches per step (the simulator's and the searches').
  int microbatches = 1;
};

/// One graph to place: a synthetic family at a size, or a model.
struct Workload {
  std::string name;    // "layered" or "resnet50"
  std::string source;  // "family" or "model"
  CostGraph loose;
  /// The graph for tight memory when it differs (models: coarsened for the
  /// smaller devices).
  std::optional<CostGraph> tight;
  costmodel::DeviceSpec device;
  double link_bytes_per_s = kSyntheticLinkBytesPerS;
  double link_latency_us = kSyntheticLinkLatencyUs;
};

/// One measurement: a CSV line and a table cell.
struct Result {
  std::string algorithm;
  std::string status;  // ok, infeasible, error, skipped
  double search_ms = 0, search_cpu_ms = 0;
  double step_us = 0, ratio = 0, speedup = 0, peak_over_capacity = 0;
  bool feasible = false;
  int64_t cut_edges = 0, comm_bytes = 0;
  std::string note;
};

Cluster MakeCluster(const Workload& w, int devices, int64_t memory_bytes) {
  return costmodel::MakeHomogeneousCluster(w.device, devices, memory_bytes, w.link_bytes_per_s,
                                           w.link_latency_us);
}

// Every unit on one device with room for all: its step and peak memory.
costmodel::DeviceUsage SingleDevice(const Workload& w, const CostGraph& graph, double& step_us) {
  const Cluster roomy = MakeCluster(w, 1, kLooseMemoryBytes);
  costmodel::Simulator simulator(graph, roomy);
  const costmodel::SimulationResult& result =
      simulator.Run({.device = std::vector<int32_t>(graph.num_units(), 0)});
  step_us = result.step_time_us;
  return result.devices[0];
}

Result Measure(const std::string& algorithm, const CostGraph& graph, const Cluster& cluster,
               double lower_bound_us, double single_step_us, const Config& config) {
  Result r;
  r.algorithm = algorithm;
  search::SearchOptions options;
  options.time_budget_s = config.time_budget_s;
  options.microbatches = config.microbatches;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t start_cpu = std::clock();
  absl::StatusOr<costmodel::Placement> placement =
      search::Place(algorithm, graph, cluster, options);
  r.search_cpu_ms = 1e3 * static_cast<double>(std::clock() - start_cpu) / CLOCKS_PER_SEC;
  r.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!placement.ok()) {
    r.status =
        placement.status().code() == absl::StatusCode::kResourceExhausted ? "infeasible" : "error";
    r.note = std::string(placement.status().message());
    return r;
  }
  if (absl::Status s = costmodel::CheckPlacement(graph, cluster, *placement); !s.ok()) {
    r.status = "error";
    r.note = absl::StrCat("invalid placement: ", s.message());
    return r;
  }
  costmodel::Simulator simulator(graph, cluster);
  const costmodel::SimulationResult& sim =
      simulator.Run(*placement, {.microbatches = config.microbatches});
  r.status = "ok";
  r.step_us = sim.step_time_us;
  r.ratio = lower_bound_us > 0 ? sim.step_time_us / lower_bound_us : 0;
  r.speedup = sim.step_time_us > 0 ? single_step_us / sim.step_time_us : 0;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    r.peak_over_capacity =
        std::max(r.peak_over_capacity, static_cast<double>(sim.devices[d].peak_memory_bytes) /
                                           static_cast<double>(cluster.device(d).memory_bytes));
  }
  r.feasible = !sim.memory_overflow;
  r.comm_bytes = sim.comm_bytes;
  for (uint32_t e = 0; e < graph.num_edges(); ++e) {
    r.cut_edges += placement->device[graph.edge_src(e)] != placement->device[graph.edge_dst(e)];
  }
  return r;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// The table cell: step / lower bound and search CPU time (steadier than wall
// time on a shared machine; the CSV has both); why there is none.
std::string Cell(const Result& r, bool best) {
  if (r.status == "skipped") return "skip";
  if (r.status == "infeasible") return "no fit";
  if (r.status == "error") return "error";
  const std::string time = r.search_cpu_ms < 10 ? absl::StrFormat("%.1f ms", r.search_cpu_ms)
                                                : absl::StrFormat("%.0f ms", r.search_cpu_ms);
  std::string cell = absl::StrFormat("%.2f (%s)", r.ratio, time);
  if (!r.feasible) return cell + " over";
  return best ? absl::StrCat("**", cell, "**") : cell;
}

class Bench {
 public:
  explicit Bench(Config config) : config_(std::move(config)) {}

  int Run();

 private:
  void RunWorkload(const Workload& w);
  std::optional<std::string> SkipReason(const Workload& w, const std::string& algorithm,
                                        uint32_t units);

  Config config_;
  std::ofstream csv_;
  std::set<std::string> notes_;
  // (family, algorithm) → the size at which a search took over kSlowSearchS.
  std::map<std::pair<std::string, std::string>, std::pair<uint32_t, double>> slow_;
};

std::optional<std::string> Bench::SkipReason(const Workload& w, const std::string& algorithm,
                                             uint32_t units) {
  if (auto limit = config_.max_units_for.find(algorithm);
      limit != config_.max_units_for.end() && units > limit->second) {
    notes_.insert(absl::StrCat(algorithm, ": skipped above ", limit->second, " units"));
    return absl::StrCat("above ", limit->second, " units");
  }
  if (auto slow = slow_.find({w.name, algorithm}); slow != slow_.end()) {
    const auto [at_units, seconds] = slow->second;
    const std::string reason = absl::StrFormat("%.1f s at %u units", seconds, at_units);
    notes_.insert(absl::StrCat(algorithm, " on ", w.name, ": larger sizes skipped (", reason, ")"));
    return reason;
  }
  return std::nullopt;
}

void Bench::RunWorkload(const Workload& w) {
  double loose_single_us = 0, tight_single_us = 0;
  const int64_t single_peak = SingleDevice(w, w.loose, loose_single_us).peak_memory_bytes;
  const CostGraph& tight_graph = w.tight ? *w.tight : w.loose;
  SingleDevice(w, tight_graph, tight_single_us);
  const auto tight_bytes = static_cast<int64_t>(kTightFraction * static_cast<double>(single_peak));
  const std::vector<int> device_counts =
      config_.quick ? std::vector<int>{2, 8} : std::vector<int>{2, 4, 8};
  for (int devices : device_counts) {
    for (bool tight : {false, true}) {
      const CostGraph& graph = tight ? tight_graph : w.loose;
      const int64_t memory = tight ? tight_bytes : kLooseMemoryBytes;
      const Cluster cluster = MakeCluster(w, devices, memory);
      const double lower_bound_us =
          costmodel::ComputeLowerBound(graph, cluster, config_.microbatches).bound_us;
      std::vector<Result> results;
      for (const std::string& algorithm : config_.algorithms) {
        if (std::optional<std::string> reason = SkipReason(w, algorithm, graph.num_units())) {
          results.push_back({.algorithm = algorithm, .status = "skipped", .note = *reason});
          continue;
        }
        results.push_back(Measure(algorithm, graph, cluster, lower_bound_us,
                                  tight ? tight_single_us : loose_single_us, config_));
        if (results.back().search_ms > kSlowSearchS * 1e3) {
          slow_.emplace(std::make_pair(w.name, algorithm),
                        std::make_pair(graph.num_units(), results.back().search_ms / 1e3));
        }
      }
      // The best plan that fits: the least step time.
      const Result* best = nullptr;
      for (const Result& r : results) {
        if (r.status == "ok" && r.feasible && (best == nullptr || r.step_us < best->step_us)) {
          best = &r;
        }
      }
      const char* memory_name = tight ? "tight" : "loose";
      std::string row =
          absl::StrFormat("| %s | %u | %d | %s |", w.name, graph.num_units(), devices, memory_name);
      for (const Result& r : results) {
        absl::StrAppend(&row, " ", Cell(r, &r == best), " |");
        csv_ << absl::StrJoin(
                    {w.name, w.source, absl::StrCat(graph.num_units()), absl::StrCat(devices),
                     std::string(memory_name), absl::StrCat(memory), r.algorithm, r.status,
                     absl::StrFormat("%.3f", r.search_ms), absl::StrFormat("%.3f", r.search_cpu_ms),
                     absl::StrFormat("%.3f", r.step_us), absl::StrFormat("%.3f", lower_bound_us),
                     absl::StrFormat("%.4f", r.ratio), absl::StrFormat("%.4f", r.speedup),
                     absl::StrFormat("%.4f", r.peak_over_capacity),
                     std::string(r.feasible ? "true" : "false"), absl::StrCat(r.cut_edges),
                     absl::StrCat(r.comm_bytes), CsvField(r.note)},
                    ",")
             << "\n";
      }
      std::printf("%s\n", row.c_str());
      std::fflush(stdout);
      csv_.flush();
    }
  }
}

int Bench::Run() {
  csv_.open(config_.csv_path);
  if (!csv_) {
    std::fprintf(stderr, "placement_bench: cannot write '%s'\n", config_.csv_path.c_str());
    return 1;
  }
  csv_ << "graph,source,units,devices,memory,memory_bytes_per_device,algorithm,status,search_ms,"
          "search_cpu_ms,step_us,lower_bound_us,ratio_to_lower_bound,speedup,peak_over_capacity,"
          "feasible,cut_edges,comm_bytes,note\n";
  std::printf("| graph | units | devices | memory | %s |\n",
              absl::StrJoin(config_.algorithms, " | ").c_str());
  std::string rule = "|---|---:|---:|---|";
  for (size_t i = 0; i < config_.algorithms.size(); ++i) rule += "---:|";
  std::printf("%s\n", rule.c_str());

  std::vector<uint32_t> sizes = {1000, 10000};
  if (!config_.quick) sizes.push_back(100000);
  for (GraphFamily family : AllGraphFamilies()) {
    Workload w;
    w.name = GraphFamilyName(family);
    w.source = "family";
    w.device.name = "bench";
    if (!config_.families.empty() && std::find(config_.families.begin(), config_.families.end(),
                                               w.name) == config_.families.end()) {
      continue;
    }
    for (uint32_t units : sizes) {
      if (units > config_.max_units) continue;
      w.loose = MakeGraph(family, units, /*seed=*/1);
      RunWorkload(w);
    }
  }

  absl::StatusOr<costmodel::DeviceSpec> a100 =
      costmodel::ResolveDevice(pipeline::kDefaultDevicePreset);
  if (!a100.ok()) {
    std::fprintf(stderr, "placement_bench: %s\n", std::string(a100.status().message()).c_str());
    return 1;
  }
  for (const std::string& model : config_.models) {
    const std::filesystem::path path =
        std::filesystem::path(config_.models_dir) / (model + ".onnx");
    if (!std::filesystem::exists(path)) {
      notes_.insert(absl::StrCat(model, ": not found in ", config_.models_dir,
                                 " (export it with tools/export_models.py)"));
      continue;
    }
    Workload w;
    w.name = model;
    w.source = "model";
    w.device = *a100;
    const pipeline::Link link = pipeline::DefaultLink(w.device);
    w.link_bytes_per_s = link.bandwidth_bytes_per_s;
    w.link_latency_us = link.latency_us;
    absl::StatusOr<pipeline::PlanningProblem> problem =
        pipeline::PrepareModel(path.string(), {}, MakeCluster(w, 1, kLooseMemoryBytes));
    if (!problem.ok()) {
      notes_.insert(absl::StrCat(model, ": ", problem.status().message()));
      continue;
    }
    w.loose = problem->units();
    double step_us = 0;
    const int64_t peak = SingleDevice(w, w.loose, step_us).peak_memory_bytes;
    const auto tight_bytes = static_cast<int64_t>(kTightFraction * static_cast<double>(peak));
    absl::StatusOr<passes::Coarsening> tight =
        passes::Coarsen(problem->nodes->graph, MakeCluster(w, 1, tight_bytes));
    if (tight.ok()) w.tight = std::move(tight->graph);
    RunWorkload(w);
  }
  if (!notes_.empty()) {
    std::printf("\nNotes:\n");
    for (const std::string& note : notes_) std::printf("- %s\n", note.c_str());
  }
  std::printf(
      "\nCells: simulated step / lower bound (search CPU time); **bold**: the fastest plan "
      "that fits; \"over\": the plan exceeds a device's memory; \"no fit\": the algorithm "
      "found no plan within memory; \"skip\": not run (see the notes).\n");
  return 0;
}

std::vector<std::string> SplitList(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

int Main(int argc, char** argv) {
  Config config;
  bool budget_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      config.quick = true;
    } else if (flag == "--csv" && has_value) {
      config.csv_path = argv[++i];
    } else if (flag == "--models-dir" && has_value) {
      config.models_dir = argv[++i];
    } else if (flag == "--models" && has_value) {
      config.models = SplitList(argv[++i]);
    } else if (flag == "--algos" && has_value) {
      config.algorithms = SplitList(argv[++i]);
    } else if (flag == "--families" && has_value) {
      config.families = SplitList(argv[++i]);
    } else if (flag == "--max-units" && has_value &&
               absl::SimpleAtoi(argv[i + 1], &config.max_units)) {
      ++i;
    } else if (flag == "--max-units-for" && has_value) {
      const std::vector<std::string> parts = absl::StrSplit(argv[++i], '=');
      uint32_t limit = 0;
      if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &limit)) {
        std::fprintf(stderr, "placement_bench: --max-units-for takes ALGO=N\n");
        return 1;
      }
      config.max_units_for[parts[0]] = limit;
    } else if (flag == "--microbatches" && has_value &&
               absl::SimpleAtoi(argv[i + 1], &config.microbatches) && config.microbatches > 0) {
      ++i;
    } else if (flag == "--time-budget" && has_value &&
               absl::SimpleAtod(argv[i + 1], &config.time_budget_s) && config.time_budget_s > 0) {
      budget_given = true;
      ++i;
    } else {
      std::fprintf(
          stderr,
          "placement_bench: bad argument '%s'\nusage: placement_bench [--quick] [--csv FILE] "
          "[--models-dir DIR] [--models a,b] [--algos a,b] [--families a,b] "
          "[--max-units N] [--max-units-for ALGO=N] [--time-budget SECONDS] [--microbatches M]\n",
          flag.c_str());
      return 1;
    }
  }
  if (config.quick && !budget_given) config.time_budget_s = 1;
  const std::vector<std::string> known = search::AlgorithmNames();
  for (const std::string& algorithm : config.algorithms) {
    if (std::find(known.begin(), known.end(), algorithm) == known.end()) {
      std::fprintf(stderr, "placement_bench: unknown algorithm '%s' (known: %s)\n",
                   algorithm.c_str(), absl::StrJoin(known, ", ").c_str());
      return 1;
    }
  }
  return Bench(std::move(config)).Run();
}

}  // namespace
}  // namespace autopar::bench

int main(int argc, char** argv) { return autopar::bench::Main(argc, argv); }
