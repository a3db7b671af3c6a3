#include "pipeline/planning.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "costmodel/cost_graph_json.h"
#include "passes/constant_nodes.h"
#include "passes/partition.h"
#include "pipeline/training_estimate.h"
#include "search/feasibility.h"

namespace autopar::pipeline {

absl::StatusOr<PlanningProblem> PrepareProblem(const ProblemRequest& request) {
  std::optional<costmodel::NodeTimes> node_times;
  if (request.node_times_path) {
    absl::StatusOr<costmodel::NodeTimes> loaded =
        costmodel::LoadNodeTimesFile(*request.node_times_path);
    if (!loaded.ok()) return loaded.status();
    node_times = *std::move(loaded);
  }
  const costmodel::NodeTimes* times = node_times ? &*node_times : nullptr;
  absl::StatusOr<PlanningProblem> problem = absl::UnknownError("not prepared");
  if (request.cost_graph_path) {
    problem = PrepareCostGraph(*request.cost_graph_path, request.cluster, times);
  } else {
    absl::StatusOr<costmodel::Cluster> cluster = ResolveCluster(request.cluster, std::nullopt);
    if (!cluster.ok()) return cluster.status();
    // --loop-trips sizes loops' shapes and their costs alike.
    const costmodel::CostOptions costs{.default_loop_trips = request.shapes.loop_trips};
    problem = PrepareModel(request.model_path, request.shapes, *std::move(cluster), costs,
                           request.coarsen, request.step, request.load, request.on_phase, times);
  }
  if (problem.ok() && node_times) {
    // Measured with the node times, on the host whose threads the devices are.
    if (node_times->co_run_slowdown && problem->cluster.execution.whole_stages) {
      problem->cluster.execution.co_run_slowdown = *node_times->co_run_slowdown;
    }
    problem->node_times = std::move(node_times);
  }
  return problem;
}

absl::StatusOr<PlanningProblem> PrepareModel(
    const std::string& path, const passes::ShapeOptions& shapes, costmodel::Cluster cluster,
    const costmodel::CostOptions& costs, const passes::CoarsenOptions& coarsen,
    const costmodel::StepOptions& step, const onnx_io::LoadOptions& load,
    const PhaseCallback& on_phase, const costmodel::NodeTimes* node_times) {
  PlanningProblem problem;
  problem.cluster = std::move(cluster);
  problem.step = step;
  absl::StatusOr<LoadedModel> loaded = LoadAndAnalyze(path, shapes, load, on_phase);
  if (!loaded.ok()) return loaded.status();
  problem.model = *std::move(loaded);
  if (on_phase) on_phase("cost");
  absl::StatusOr<passes::AnnotatedGraph> nodes =
      passes::AnnotateCosts(problem.model->graph, problem.cluster, costs, step);
  if (!nodes.ok())
    return absl::Status(nodes.status().code(),
                        absl::StrCat("'", path, "': ", nodes.status().message()));
  problem.nodes = *std::move(nodes);
  if (node_times) {
    absl::StatusOr<costmodel::CostSource> source =
        costmodel::ApplyNodeTimes(*node_times, problem.nodes->graph);
    if (!source.ok()) return source.status();
    problem.cost_source = *source;
  }
  if (on_phase) on_phase("coarsen");
  // Nodes joined by a value Send/Recv cannot carry must share a device: they
  // share a unit, so that the search's placement is the written one.
  passes::CoarsenOptions coarsen_options = coarsen;
  coarsen_options.colocated = passes::NonTensorColocations(problem.model->graph);
  absl::StatusOr<passes::Coarsening> coarsening =
      passes::Coarsen(problem.nodes->graph, problem.cluster, coarsen_options);
  if (!coarsening.ok()) return coarsening.status();
  problem.coarsening = *std::move(coarsening);
  return problem;
}

absl::StatusOr<PlanningProblem> PrepareCostGraph(const std::string& path,
                                                 const ClusterRequest& request,
                                                 const costmodel::NodeTimes* node_times) {
  absl::StatusOr<costmodel::CostGraphDocument> doc = costmodel::LoadCostGraphFile(path);
  if (!doc.ok()) return doc.status();
  if (!doc->cluster && request.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path,
        "' has no \"devices\" block: give --devices N --memory-per-device SIZE or --cluster"));
  }
  absl::StatusOr<costmodel::Cluster> cluster = ResolveCluster(request, doc->cluster);
  if (!cluster.ok()) return cluster.status();
  if (doc->graph.num_device_kinds() != static_cast<int>(cluster->kinds.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' has compute times for ", doc->graph.num_device_kinds(),
                     " device kind(s) but the cluster has ", cluster->kinds.size()));
  }
  PlanningProblem problem;
  problem.cluster = *std::move(cluster);
  problem.cost_graph = std::move(doc->graph);
  if (node_times) {
    absl::StatusOr<costmodel::CostSource> source =
        costmodel::ApplyNodeTimes(*node_times, *problem.cost_graph);
    if (!source.ok()) return source.status();
    problem.cost_source = *source;
  }
  return problem;
}

Plan JudgePlacement(const PlanningProblem& problem, const std::string& algorithm,
                    costmodel::Placement node_placement, int microbatches,
                    const costmodel::LowerBound* bound) {
  const costmodel::CostGraph& nodes = problem.node_graph();
  Plan plan;
  plan.algorithm = algorithm;
  plan.node_placement = std::move(node_placement);
  plan.microbatches = std::max(1, microbatches);
  costmodel::Simulator simulator(nodes, problem.cluster);
  plan.simulation =
      simulator.Run(plan.node_placement, {.microbatches = microbatches, .record_timeline = true});
  plan.lower_bound =
      bound ? *bound : costmodel::ComputeLowerBound(nodes, problem.cluster, microbatches);
  const costmodel::Placement single{.device = std::vector<int32_t>(nodes.num_units(), 0)};
  plan.single_device_step_us = simulator.Run(single, {.microbatches = microbatches}).step_time_us;
  for (uint32_t e = 0; e < nodes.num_edges(); ++e) {
    if (plan.node_placement.device[nodes.edge_src(e)] !=
        plan.node_placement.device[nodes.edge_dst(e)])
      ++plan.cut_edges;
  }
  return plan;
}

namespace {

// Constant nodes placed away from their readers move to them
// (passes/constant_nodes.h), unless the node simulation says the step
// gets slower or the memory overflow grows: a large constant computation on a
// busy device can be worth its transfer.
costmodel::Placement ConstantsWithReaders(const PlanningProblem& problem,
                                          costmodel::Placement searched, int microbatches) {
  costmodel::Placement moved = searched;
  if (passes::MoveConstantNodesToReaders(problem.model->graph, moved.device) == 0) return searched;
  costmodel::Simulator simulator(problem.node_graph(), problem.cluster);
  const costmodel::SimulationOptions options{.microbatches = microbatches};
  const costmodel::SimulationResult before = simulator.Run(searched, options);
  const double before_us = before.step_time_us;
  const int64_t before_overflow = before.overflow_bytes;
  const costmodel::SimulationResult& after = simulator.Run(moved, options);
  if (after.step_time_us > before_us || after.overflow_bytes > before_overflow) return searched;
  return moved;
}

// The estimator of Note [Training judge] for `policy`, or null when the
// problem is not a model's training step over several devices.
absl::StatusOr<std::unique_ptr<TrainingStepEstimator>> TrainingEstimatorFor(
    const PlanningProblem& problem, const PlanPolicy& policy, int microbatches) {
  if (!policy.training || !problem.model || !problem.nodes || !problem.nodes->training ||
      problem.cluster.num_devices() < 2)
    return nullptr;
  const TrainingJudge& judge = *policy.training;
  absl::StatusOr<TrainingStepEstimator> estimator = TrainingStepEstimator::Create(
      problem, {.schedule = judge.schedule, .microbatches = std::max(1, microbatches)},
      judge.step_times.get());
  if (!estimator.ok()) return estimator.status();
  return std::make_unique<TrainingStepEstimator>(*std::move(estimator));
}

// Judges `plan` as a pipelined training step: its step becomes the
// estimate, and so does the one-device baseline (Note [Training judge]).
absl::Status JudgePipelined(const PlanningProblem& problem, const TrainingStepEstimator& estimator,
                            Plan& plan) {
  absl::StatusOr<costmodel::PipelineStepResult> estimate =
      estimator.Estimate(plan.node_placement.device);
  if (!estimate.ok()) return estimate.status();
  plan.pipelined = Plan::PipelinedStep{.step_us = estimate->step_us,
                                       .fused_step_us = plan.simulation.step_time_us,
                                       .peak_memory_bytes = estimate->peak_memory_bytes};
  plan.simulation.step_time_us = estimate->step_us;
  plan.single_device_step_us =
      estimator.StepUs(std::vector<int32_t>(problem.node_graph().num_units(), 0));
  return absl::OkStatus();
}

// PreferOneDeviceIfFaster, judging steps by `estimator` when it is set.
Plan PreferOneDevice(const PlanningProblem& problem, Plan plan, const costmodel::LowerBound* bound,
                     const TrainingStepEstimator* estimator);

}  // namespace

absl::StatusOr<Plan> MakePlan(const PlanningProblem& problem, const std::string& algorithm,
                              const search::SearchOptions& options, const PhaseCallback& on_phase,
                              const costmodel::LowerBound* bound, const PlanPolicy& policy) {
  const costmodel::CostGraph& units = problem.units();
  // Computed once for the search and the judgement; not for inputs the
  // search turns down (the bound assumes a valid cluster).
  std::optional<costmodel::LowerBound> computed;
  if (bound == nullptr && search::CheckSearchInputs(problem.node_graph(), problem.cluster).ok()) {
    bound = &computed.emplace(
        costmodel::ComputeLowerBound(problem.node_graph(), problem.cluster, options.microbatches));
  }
  std::vector<search::Progress> progress;
  search::SearchOptions recorded = options;
  recorded.on_progress = [&progress, &options](const search::Progress& p) {
    progress.push_back(p);
    if (options.on_progress) options.on_progress(p);
  };
  if (on_phase) on_phase(absl::StrCat("placement (", algorithm, ")"));
  // A search may refine below the units (TGA): it sees the nodes, and which
  // units hold nodes that must share a device.
  if (problem.coarsening) {
    recorded.nodes.graph = &problem.node_graph();
    recorded.nodes.unit_of_node = &problem.coarsening->unit_of_node;
    recorded.nodes.locked_units.assign(units.num_units(), 0);
    const std::vector<std::pair<uint32_t, uint32_t>> colocated =
        problem.model ? passes::NonTensorColocations(problem.model->graph)
                      : std::vector<std::pair<uint32_t, uint32_t>>{};
    for (const auto& [a, b] : colocated) {
      recorded.nodes.locked_units[problem.coarsening->unit_of_node[a]] = 1;
      recorded.nodes.locked_units[problem.coarsening->unit_of_node[b]] = 1;
    }
    if (bound) recorded.nodes.lower_bound_us = bound->bound_us;
  } else if (bound) {
    recorded.lower_bound_us = bound->bound_us;  // the units are the nodes
  }
  absl::StatusOr<std::unique_ptr<TrainingStepEstimator>> estimator =
      TrainingEstimatorFor(problem, policy, options.microbatches);
  if (!estimator.ok()) return estimator.status();
  if (*estimator) {
    // The searches optimise the pipelined step (Note [Training judge]).
    const TrainingStepEstimator* judge = estimator->get();
    const passes::Coarsening* coarsening = problem.coarsening ? &*problem.coarsening : nullptr;
    recorded.objective = [judge, coarsening](absl::Span<const int32_t> unit_device) {
      std::vector<int32_t> node_device;
      if (coarsening == nullptr) {
        node_device.assign(unit_device.begin(), unit_device.end());
      } else {
        node_device.resize(coarsening->unit_of_node.size());
        for (size_t i = 0; i < node_device.size(); ++i)
          node_device[i] = unit_device[coarsening->unit_of_node[i]];
      }
      return judge->StepUs(node_device);
    };
    recorded.nodes.objective = [judge](absl::Span<const int32_t> node_device) {
      return judge->StepUs(std::vector<int32_t>(node_device.begin(), node_device.end()));
    };
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<search::SearchResult> found =
      search::PlaceDetailed(algorithm, units, problem.cluster, recorded);
  const double search_time_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!found.ok()) return found.status();
  costmodel::Placement* placement = &found->units;
  if (absl::Status s = costmodel::CheckPlacement(units, problem.cluster, *placement); !s.ok()) {
    return absl::InternalError(
        absl::StrCat(algorithm, " returned an invalid placement: ", s.message()));
  }
  if (on_phase) on_phase("simulate (nodes, timeline)");
  // Each node goes where its unit went; coarsening kept every group that must
  // share a device in one unit (Note [One judgement]).
  costmodel::Placement nodes = *placement;
  if (!found->nodes.device.empty()) {
    if (absl::Status s =
            costmodel::CheckPlacement(problem.node_graph(), problem.cluster, found->nodes);
        !s.ok()) {
      return absl::InternalError(
          absl::StrCat(algorithm, " returned an invalid node placement: ", s.message()));
    }
    nodes = std::move(found->nodes);
  } else if (problem.coarsening) {
    nodes = passes::ExpandPlacement(*problem.coarsening, *placement);
  }
  if (problem.model) nodes = ConstantsWithReaders(problem, std::move(nodes), options.microbatches);
  Plan plan = JudgePlacement(problem, algorithm, std::move(nodes), options.microbatches, bound);
  plan.unit_placement = std::move(*placement);
  plan.search_time_ms = search_time_ms;
  plan.progress = std::move(progress);
  if (*estimator) {
    if (absl::Status s = JudgePipelined(problem, **estimator, plan); !s.ok()) return s;
  }
  if (policy.allow_slower_split) return plan;
  return PreferOneDevice(problem, std::move(plan), bound, estimator->get());
}

Plan PreferOneDeviceIfFaster(const PlanningProblem& problem, Plan plan,
                             const costmodel::LowerBound* bound) {
  return PreferOneDevice(problem, std::move(plan), bound, nullptr);
}

namespace {

Plan PreferOneDevice(const PlanningProblem& problem, Plan plan, const costmodel::LowerBound* bound,
                     const TrainingStepEstimator* estimator) {
  const std::vector<int32_t>& placed = plan.node_placement.device;
  if (placed.empty()) return plan;
  const int used =
      static_cast<int>(absl::flat_hash_set<int32_t>(placed.begin(), placed.end()).size());
  if (used < 2) return plan;
  const costmodel::CostGraph& nodes = problem.node_graph();
  const costmodel::Cluster& cluster = problem.cluster;
  costmodel::Simulator simulator(nodes, cluster);
  const costmodel::SimulationOptions options{.microbatches = plan.microbatches};
  // Devices of one kind and memory run the whole model alike: judge one each.
  absl::flat_hash_set<std::pair<int, int64_t>> judged;
  int best = -1;
  double best_us = plan.simulation.step_time_us;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    if (!judged.insert({cluster.device(d).kind, cluster.device(d).memory_bytes}).second) continue;
    const costmodel::Placement one{.device = std::vector<int32_t>(nodes.num_units(), d)};
    const costmodel::SimulationResult& sim = simulator.Run(one, options);
    if (sim.memory_overflow) continue;
    const double step_us = estimator ? estimator->StepUs(one.device) : sim.step_time_us;
    if (step_us < best_us) {
      best = d;
      best_us = step_us;
    }
  }
  if (best < 0) return plan;
  Plan one = JudgePlacement(problem, plan.algorithm,
                            {.device = std::vector<int32_t>(nodes.num_units(), best)},
                            plan.microbatches, bound ? bound : &plan.lower_bound);
  if (estimator && !JudgePipelined(problem, *estimator, one).ok()) return plan;
  if (!plan.unit_placement.device.empty())
    one.unit_placement.device.assign(plan.unit_placement.device.size(), best);
  one.search_time_ms = plan.search_time_ms;
  one.progress = std::move(plan.progress);
  one.rejected_split = Plan::RejectedSplit{
      .devices = used, .step_time_us = plan.simulation.step_time_us, .device = best};
  return one;
}

}  // namespace

namespace {

int64_t BatchOf(const PlanningProblem& problem) {
  if (!problem.model || problem.model->graph.inputs().empty()) return 1;
  const ir::Shape& shape = problem.model->graph.value(problem.model->graph.inputs()[0]).shape;
  if (!shape.has_rank() || shape.rank() == 0 || !shape.dim(0).known() || shape.dim(0).value < 1)
    return 1;
  return shape.dim(0).value;
}

// Whether trial `a` is a better choice than `b`: one with a plan wins, then
// one that fits, then the lower time per sample, then the fewer
// micro-batches.
bool Better(const MicrobatchTrial& a, const MicrobatchTrial& b) {
  if (a.error.empty() != b.error.empty()) return a.error.empty();
  if (a.feasible != b.feasible) return a.feasible;
  // Equal up to rounding (one device: M micro-batches take M times as long)
  // is equal: the fewer micro-batches then.
  const double tolerance = 1e-9 * std::max(a.time_per_sample_us, b.time_per_sample_us);
  if (std::abs(a.time_per_sample_us - b.time_per_sample_us) > tolerance)
    return a.time_per_sample_us < b.time_per_sample_us;
  return a.microbatches < b.microbatches;
}

}  // namespace

absl::StatusOr<MicrobatchChoice> ChooseMicrobatches(const PlanningProblem& problem,
                                                    const std::string& algorithm,
                                                    const search::SearchOptions& options,
                                                    int max_microbatches, const PlanPolicy& policy,
                                                    bool midpoints) {
  if (max_microbatches < 1)
    return absl::InvalidArgumentError("the most micro-batches must be at least 1");
  MicrobatchChoice choice;
  choice.max_microbatches = max_microbatches;
  choice.batch = BatchOf(problem);
  absl::flat_hash_map<int, Plan> sgp_plans;
  absl::flat_hash_set<int> tried_counts;
  std::optional<absl::Status> first_error;
  // Records count m's SGP plan (or that it has none within memory).
  auto record = [&](int m, absl::StatusOr<Plan> plan) -> absl::Status {
    if (!plan.ok()) {
      // No plan within memory at this count; others may have one.
      if (plan.status().code() != absl::StatusCode::kResourceExhausted) return plan.status();
      if (!first_error.has_value()) first_error = plan.status();
      choice.tried.push_back(
          {.microbatches = m, .feasible = false, .error = std::string(plan.status().message())});
      return absl::OkStatus();
    }
    MicrobatchTrial t{.microbatches = m,
                      .step_time_us = plan->simulation.step_time_us,
                      .time_per_sample_us =
                          plan->simulation.step_time_us / (static_cast<double>(m) * choice.batch),
                      .feasible = !plan->simulation.memory_overflow};
    for (const costmodel::DeviceUsage& u : plan->simulation.devices)
      t.peak_memory_bytes.push_back(u.peak_memory_bytes);
    choice.tried.push_back(std::move(t));
    sgp_plans.emplace(m, *std::move(plan));
    return absl::OkStatus();
  };
  // Plans the counts in `counts` not tried yet, up to options.threads at a
  // time (the trials are independent, so the choice does not depend on the
  // threads), and records them in the order given.
  auto trials = [&](const std::vector<int>& counts) -> absl::Status {
    std::vector<int> todo;
    for (int m : counts) {
      if (m >= 1 && m <= max_microbatches && tried_counts.insert(m).second) todo.push_back(m);
    }
    if (todo.empty()) return absl::OkStatus();
    const int workers = std::clamp(options.threads, 1, static_cast<int>(todo.size()));
    search::SearchOptions base = options;
    base.on_progress = nullptr;
    base.threads = std::max(1, options.threads / workers);
    std::vector<absl::StatusOr<Plan>> plans(todo.size());
    auto run = [&](size_t i) {
      search::SearchOptions at = base;
      at.microbatches = todo[i];
      try {
        plans[i] = MakePlan(problem, "sgp", at, {}, nullptr, policy);
      } catch (const std::exception& e) {  // bad_alloc, say: no thread may throw
        plans[i] = absl::InternalError(e.what());
      }
    };
    if (workers == 1) {
      for (size_t i = 0; i < todo.size(); ++i) run(i);
    } else {
      std::atomic<size_t> next{0};
      std::vector<std::thread> pool;
      for (int w = 0; w < workers; ++w) {
        pool.emplace_back([&] {
          for (size_t i = next++; i < todo.size(); i = next++) run(i);
        });
      }
      for (std::thread& t : pool) t.join();
    }
    for (size_t i = 0; i < todo.size(); ++i) {
      if (absl::Status s = record(todo[i], std::move(plans[i])); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  auto best = [&choice] {
    return *std::min_element(choice.tried.begin(), choice.tried.end(), Better);
  };
  std::vector<int> powers;
  for (int m = 1; m <= max_microbatches; m *= 2) {
    powers.push_back(m);
    if (m > max_microbatches / 2) break;  // no overflow of m *= 2
  }
  powers.push_back(max_microbatches);
  if (absl::Status s = trials(powers); !s.ok()) return s;
  if (sgp_plans.empty()) return *first_error;
  // Refinement: bisection around the best count. Each round tries the
  // midpoints between the best so far and its nearest tried neighbours, so
  // the first round is the midpoints around the best power of two (16: 12
  // and 24), and rounds go on while a gap of more than one count is left
  // beside the best: at most 2 log2(K) more trials. Plans differ from one
  // count to the next (each count is searched on its own), so the curve is
  // not smooth; stopping at the first midpoints left up to 3% on the table
  // (tests/pipeline/microbatches_choice_test.cc).
  while (midpoints) {
    const int around = best().microbatches;
    int below = 0, above = max_microbatches + 1;
    for (const MicrobatchTrial& t : choice.tried) {
      if (t.microbatches < around) below = std::max(below, t.microbatches);
      if (t.microbatches > around) above = std::min(above, t.microbatches);
    }
    std::vector<int> next;
    if (below > 0 && around - below > 1) next.push_back(around - (around - below) / 2);
    if (above <= max_microbatches && above - around > 1)
      next.push_back(around + (above - around) / 2);
    if (next.empty()) break;
    if (absl::Status s = trials(next); !s.ok()) return s;
  }
  choice.chosen = best().microbatches;
  if (algorithm == "sgp") {
    choice.plan = std::move(sgp_plans.at(choice.chosen));
  } else {
    search::SearchOptions at = options;
    at.microbatches = choice.chosen;
    absl::StatusOr<Plan> plan = MakePlan(problem, algorithm, at, {}, nullptr, policy);
    if (!plan.ok()) return plan.status();
    choice.plan = *std::move(plan);
  }
  return choice;
}

absl::StatusOr<std::vector<int32_t>> ResolveNamedPlacement(const NamedPlacement& placement,
                                                           const ir::Graph& graph,
                                                           int num_devices) {
  absl::flat_hash_map<std::string, uint32_t> node_by_name;
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) node_by_name[graph.node(ir::NodeId(i)).name] = i;
  std::vector<int32_t> device(graph.num_nodes(), -1);
  for (const auto& [name, value] : placement.device_of_node) {
    auto it = node_by_name.find(name);
    if (it == node_by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(placement.source, " names '", name, "', which is not a node of the model"));
    }
    if (value < 0 || value >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(placement.source, ": node '", name,
                                                     "' has device ", value, "; devices are 0..",
                                                     num_devices - 1));
    }
    device[it->second] = static_cast<int32_t>(value);
  }
  for (uint32_t i = 0; i < graph.num_nodes(); ++i) {
    if (device[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          placement.source, " gives no device for node '", graph.node(ir::NodeId(i)).name, "'"));
    }
  }
  return device;
}

absl::StatusOr<Plan> JudgeGivenPlacement(const PlanningProblem& problem,
                                         const NamedPlacement& placement, int microbatches,
                                         const PlanPolicy& policy) {
  if (!problem.model)
    return absl::InvalidArgumentError("a placement file places a model's nodes, not a cost graph");
  const ir::Graph& graph = problem.model->graph;
  absl::StatusOr<std::vector<int32_t>> devices =
      ResolveNamedPlacement(placement, graph, problem.cluster.num_devices());
  if (!devices.ok()) return devices.status();
  costmodel::Placement nodes{.device = passes::ColocateNonTensorValues(graph, *std::move(devices))};
  Plan plan = JudgePlacement(problem, "given", std::move(nodes), microbatches);
  absl::StatusOr<std::unique_ptr<TrainingStepEstimator>> estimator =
      TrainingEstimatorFor(problem, policy, plan.microbatches);
  if (!estimator.ok()) return estimator.status();
  if (*estimator) {
    if (absl::Status s = JudgePipelined(problem, **estimator, plan); !s.ok()) return s;
  }
  return plan;
}

}  // namespace autopar::pipeline
