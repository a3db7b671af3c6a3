// The pipelined training step: run orders, stashes and step times small
// enough to check by hand, and properties of every schedule.
#include "costmodel/pipeline_schedule.h"

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/costmodel/unit_graphs.h"

namespace autopar::costmodel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TestCluster;
using Runs = std::vector<std::pair<int32_t, int32_t>>;

constexpr PipelineSchedule kBothSchedules[] = {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B};

struct LinearOptions {
  int devices = 2;
  double forward_us = 1;
  double backward_us = 1;
  int64_t bytes = 0;  // of every tensor between stages
  int64_t stash_bytes = 0;
  int64_t transient_bytes = 0;
};

// Forward stage i on device i (ids 0..S-1), then the backward stages in
// reverse (id 2S-1-i on device i): F_i reads F_{i-1}; the backward of the last
// device reads its forward; B_i reads B_{i+1} and, on its device, F_i.
PipelineStepProblem Linear(const LinearOptions& o, int microbatches, PipelineSchedule schedule) {
  const int s_count = o.devices;
  PipelineStepProblem p;
  p.microbatches = microbatches;
  p.schedule = schedule;
  for (int i = 0; i < s_count; ++i) {
    PipelineStage f{.device = i,
                    .kind = StageKind::kForward,
                    .compute_us = o.forward_us,
                    .stash_bytes = o.stash_bytes,
                    .transient_bytes = o.transient_bytes};
    if (i > 0) f.inputs.push_back({i - 1, o.bytes});
    p.stages.push_back(f);
  }
  for (int i = s_count - 1; i >= 0; --i) {
    PipelineStage b{.device = i,
                    .kind = StageKind::kBackward,
                    .compute_us = o.backward_us,
                    .transient_bytes = o.transient_bytes};
    if (i == s_count - 1) {
      b.inputs.push_back({i, o.bytes});
    } else {
      b.inputs.push_back({2 * s_count - 2 - i, o.bytes});
      b.inputs.push_back({i, o.bytes});
    }
    p.stages.push_back(b);
  }
  return p;
}

// A,B,A: F0 on device a, F1 on b, F2 on a, then B2 on a, B1 on b, B0 on a.
PipelineStepProblem Interleaved(int a, int b, int microbatches, PipelineSchedule schedule,
                                int64_t bytes = 0) {
  PipelineStepProblem p;
  p.microbatches = microbatches;
  p.schedule = schedule;
  auto add = [&](int device, StageKind kind, double us, std::vector<StageInput> inputs) {
    p.stages.push_back(PipelineStage{.device = device,
                                     .kind = kind,
                                     .compute_us = us,
                                     .inputs = std::move(inputs),
                                     .stash_bytes = kind == StageKind::kForward ? 100 : 0});
  };
  add(a, StageKind::kForward, 1, {});                         // 0
  add(b, StageKind::kForward, 1, {{0, bytes}});               // 1
  add(a, StageKind::kForward, 1, {{1, bytes}});               // 2
  add(a, StageKind::kBackward, 2, {{2, bytes}});              // 3
  add(b, StageKind::kBackward, 2, {{3, bytes}, {1, bytes}});  // 4
  add(a, StageKind::kBackward, 2, {{4, bytes}, {0, bytes}});  // 5
  return p;
}

PipelineStepResult Simulate(const PipelineStepProblem& p, const Cluster& c) {
  absl::StatusOr<PipelineStepResult> r = SimulatePipelineStep(p, c);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : PipelineStepResult{};
}

// Every run of every stage and micro-batch ran once, each device one run at a
// time in its order, each after its inputs' producers ended and the tensors
// could have crossed (hop_us 0: Cluster::TransferUs).
void ExpectConsistent(const PipelineStepProblem& p, const Cluster& c, const PipelineStepResult& r) {
  std::map<std::pair<int32_t, int32_t>, StageRun> runs;
  std::vector<Runs> order(c.num_devices());
  std::vector<double> device_free(c.num_devices(), 0);
  for (const StageRun& run : r.timeline) {
    EXPECT_GE(run.start_us, device_free[run.device]) << "device " << run.device << " overlaps";
    device_free[run.device] = run.end_us;
    if (run.stage < 0) continue;
    EXPECT_EQ(run.device, p.stages[run.stage].device);
    EXPECT_TRUE(runs.emplace(std::pair(run.stage, run.microbatch), run).second);
    order[run.device].emplace_back(run.stage, run.microbatch);
  }
  EXPECT_EQ(runs.size(), p.stages.size() * p.microbatches);
  EXPECT_EQ(order, r.order);
  for (const auto& [key, run] : runs) {
    for (const StageInput& input : p.stages[key.first].inputs) {
      const StageRun& producer = runs.at({input.stage, key.second});
      EXPECT_GE(run.start_us + 1e-9,
                producer.end_us + c.TransferUs(producer.device, run.device, input.bytes))
          << "stage " << key.first << " micro-batch " << key.second << " reads stage "
          << input.stage;
    }
  }
}

TEST(PipelineScheduleTest, NamesRoundTrip) {
  for (PipelineSchedule s : kBothSchedules) {
    EXPECT_EQ(ParsePipelineSchedule(PipelineScheduleName(s)), s);
  }
  EXPECT_EQ(PipelineScheduleName(PipelineSchedule::kGPipe), "gpipe");
  EXPECT_EQ(PipelineScheduleName(PipelineSchedule::k1F1B), "1f1b");
  EXPECT_EQ(ParsePipelineSchedule("pipedream"), std::nullopt);
}

TEST(PipelineScheduleTest, GPipeRunsEveryForwardBeforeAnyBackward) {
  const Cluster c = TestCluster(2);
  const PipelineStepResult r = Simulate(Linear({}, 4, PipelineSchedule::kGPipe), c);
  EXPECT_EQ(r.order[0], (Runs{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {3, 0}, {3, 1}, {3, 2}, {3, 3}}));
  EXPECT_EQ(r.order[1], (Runs{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 0}, {2, 1}, {2, 2}, {2, 3}}));
  EXPECT_THAT(r.max_stashes, ElementsAre(4, 4));
  EXPECT_THAT(r.rank, ElementsAre(0, 1));
}

TEST(PipelineScheduleTest, OneFOneBWarmsUpThenAlternates) {
  const Cluster c = TestCluster(2);
  const PipelineStepResult r = Simulate(Linear({}, 4, PipelineSchedule::k1F1B), c);
  // Rank 0 holds at most 2 micro-batches, rank 1 one.
  EXPECT_EQ(r.order[0], (Runs{{0, 0}, {0, 1}, {3, 0}, {0, 2}, {3, 1}, {0, 3}, {3, 2}, {3, 3}}));
  EXPECT_EQ(r.order[1], (Runs{{1, 0}, {2, 0}, {1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 3}, {2, 3}}));
  EXPECT_THAT(r.max_stashes, ElementsAre(2, 1));
  EXPECT_THAT(r.rank, ElementsAre(0, 1));
}

TEST(PipelineScheduleTest, FewerMicrobatchesThanTheWarmUpCap) {
  // cap = min(M, S - rank): with M = 2 on 4 devices rank 0 holds 2.
  const Cluster c = TestCluster(4);
  const PipelineStepResult r = Simulate(Linear({.devices = 4}, 2, PipelineSchedule::k1F1B), c);
  EXPECT_THAT(r.max_stashes, ElementsAre(2, 2, 2, 1));
  ExpectConsistent(Linear({.devices = 4}, 2, PipelineSchedule::k1F1B), c, r);
}

TEST(PipelineScheduleTest, RunsWaitForTheirInputsAndTransfers) {
  Cluster c = TestCluster(4, /*latency_us=*/3);
  const LinearOptions o{.devices = 4, .forward_us = 2, .backward_us = 5, .bytes = 4000};
  for (PipelineSchedule s : kBothSchedules) {
    for (int m : {1, 3, 8}) {
      SCOPED_TRACE(::testing::Message() << PipelineScheduleName(s) << " M=" << m);
      const PipelineStepProblem p = Linear(o, m, s);
      ExpectConsistent(p, c, Simulate(p, c));
      const PipelineStepProblem q = Interleaved(2, 0, m, s, 2000);
      ExpectConsistent(q, c, Simulate(q, c));
    }
  }
}

TEST(PipelineScheduleTest, BalancedPipelineMatchesTheBubbleFormula) {
  const double f = 3, b = 5;
  for (PipelineSchedule schedule : kBothSchedules) {
    for (int s : {2, 4}) {
      const Cluster c = TestCluster(s);
      for (int m : {1, 4, 8}) {
        SCOPED_TRACE(::testing::Message()
                     << PipelineScheduleName(schedule) << " S=" << s << " M=" << m);
        const PipelineStepResult r =
            Simulate(Linear({.devices = s, .forward_us = f, .backward_us = b}, m, schedule), c);
        EXPECT_DOUBLE_EQ(r.step_us, (m + s - 1) * (f + b));
      }
    }
  }
}

TEST(PipelineScheduleTest, OneFOneBHoldsFewerStashesThanGPipe) {
  const Cluster c = TestCluster(4);
  const LinearOptions o{.devices = 4, .stash_bytes = 1000, .transient_bytes = 10};
  PipelineStepProblem gpipe = Linear(o, 8, PipelineSchedule::kGPipe);
  PipelineStepProblem one_f_one_b = Linear(o, 8, PipelineSchedule::k1F1B);
  gpipe.fixed_bytes = one_f_one_b.fixed_bytes = {5, 6, 7, 8};
  const PipelineStepResult g = Simulate(gpipe, c);
  const PipelineStepResult r = Simulate(one_f_one_b, c);
  for (int d = 0; d < 4; ++d) {
    SCOPED_TRACE(d);
    EXPECT_LE(r.peak_memory_bytes[d], g.peak_memory_bytes[d]);
    // GPipe holds all 8 stashes; 1F1B's rank d holds 4 - d.
    EXPECT_EQ(g.peak_memory_bytes[d], 5 + d + 8 * 1000 + 10);
    EXPECT_EQ(r.peak_memory_bytes[d], 5 + d + (4 - d) * 1000 + 10);
    EXPECT_EQ(g.max_stashes[d], 8);
    EXPECT_EQ(r.max_stashes[d], 4 - d);
  }
}

TEST(PipelineScheduleTest, InterleavedPlacementFinishesUnderBothSchedules) {
  for (PipelineSchedule s : kBothSchedules) {
    for (int m : {1, 2, 4, 8}) {
      SCOPED_TRACE(::testing::Message() << PipelineScheduleName(s) << " M=" << m);
      // Device 1 runs the first stage: it is rank 0. Device 2 runs nothing.
      const Cluster c = TestCluster(3);
      const PipelineStepProblem p = Interleaved(1, 0, m, s);
      const PipelineStepResult r = Simulate(p, c);
      ExpectConsistent(p, c, r);
      EXPECT_THAT(r.rank, ElementsAre(1, 0, -1));
      EXPECT_EQ(r.order[1].size(), 4u * m);
      EXPECT_EQ(r.order[0].size(), 2u * m);
      EXPECT_TRUE(r.order[2].empty());
      // Device 1 runs 1 + 1 + 2 + 2 µs of stages per micro-batch.
      EXPECT_GE(r.step_us, m * 6.0);
      if (s == PipelineSchedule::k1F1B) {
        EXPECT_LE(r.max_stashes[1], std::min(m, 2));
        EXPECT_LE(r.max_stashes[0], 1);
      }
    }
  }
}

TEST(PipelineScheduleTest, UpdatesRunOnceAfterEachDevicesLastRun) {
  const Cluster c = TestCluster(3);
  PipelineStepProblem p = Linear({}, 4, PipelineSchedule::kGPipe);
  p.update_us = {7, 3, 100};  // device 2 has no stages: no update
  const PipelineStepResult r = Simulate(p, c);
  // Without updates d0 ends at 10 and d1 at 9 (the bubble formula).
  EXPECT_DOUBLE_EQ(r.step_us, 17);
  std::vector<StageRun> updates;
  for (const StageRun& run : r.timeline) {
    if (run.stage == -1) updates.push_back(run);
  }
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].device, 1);
  EXPECT_DOUBLE_EQ(updates[0].start_us, 9);
  EXPECT_DOUBLE_EQ(updates[0].end_us, 12);
  EXPECT_EQ(updates[1].device, 0);
  EXPECT_DOUBLE_EQ(updates[1].start_us, 10);
  EXPECT_DOUBLE_EQ(updates[1].end_us, 17);
  EXPECT_EQ(updates[1].microbatch, -1);
}

TEST(PipelineScheduleTest, WholeStagesPayTheSimulatorsOverheads) {
  // F0 on d0 sends 1000 bytes to F1 on d1.
  PipelineStepProblem p;
  p.stages = {{.device = 0, .compute_us = 10},
              {.device = 1, .compute_us = 10, .inputs = {{0, 1000}}}};
  Cluster c = TestCluster(2, /*latency_us=*/20);
  // Node by node: no overheads; the tensor takes the latency + 1 µs.
  EXPECT_DOUBLE_EQ(Simulate(p, c).step_us, 10 + 21 + 10);

  c.execution = {.whole_stages = true,
                 .stage_run_us = 5,
                 .cut_us = 2,
                 .cut_bytes_per_s = 1e6,
                 .hop_us = 50,
                 .hop_busy_us = 4};
  const PipelineStepResult r = Simulate(p, c);
  // F0: run 5 + half the cut (500 bytes at 1 MB/s) 500 + 10.
  // The hand-over: 1 µs of bytes, then the hop (50) in place of the latency.
  // F1: run 5 + cut 2 + half the cut 500 + one other-device stage 4 + 10.
  ASSERT_EQ(r.order[1].size(), 1u);
  for (const StageRun& run : r.timeline) {
    if (run.stage == 0) {
      EXPECT_DOUBLE_EQ(run.end_us, 515);
    } else if (run.stage == 1) {
      EXPECT_DOUBLE_EQ(run.start_us, 515 + 1 + 50);
    }
  }
  EXPECT_DOUBLE_EQ(r.step_us, 566 + 521);
}

TEST(PipelineScheduleTest, ALinkCarriesOneTransferAtATime) {
  // Two tensors of 1 MB from d0 to d1 (1 ms each) cross one after the other.
  PipelineStepProblem p;
  p.stages = {{.device = 0, .compute_us = 10},
              {.device = 1, .compute_us = 10, .inputs = {{0, 1'000'000}, {0, 1'000'000}}}};
  const PipelineStepResult r = Simulate(p, TestCluster(2));
  EXPECT_DOUBLE_EQ(r.step_us, 10 + 2000 + 10);
}

// Two forward stages with no inputs, on devices 0 and 1, of 4 and 2 µs.
PipelineStepProblem TwoIndependentRuns() {
  PipelineStepProblem p;
  p.schedule = PipelineSchedule::kGPipe;
  p.stages = {PipelineStage{.device = 0, .kind = StageKind::kForward, .compute_us = 4},
              PipelineStage{.device = 1, .kind = StageKind::kForward, .compute_us = 2}};
  return p;
}

TEST(PipelineScheduleTest, SharedCoresSlowRunsOnlyWhileTheyOverlap) {
  Cluster c = TestCluster(2);
  EXPECT_DOUBLE_EQ(Simulate(TwoIndependentRuns(), c).step_us, 4);
  // At 1.5x while both run: the 2 µs run ends at 3, when the 4 µs one has
  // done 2 µs of its work; it does the rest alone, ending at 5.
  c.execution.co_run_slowdown = 1.5;
  const PipelineStepResult r = Simulate(TwoIndependentRuns(), c);
  EXPECT_DOUBLE_EQ(r.step_us, 5);
  ASSERT_EQ(r.timeline.size(), 4u);  // the two runs, then each device's (empty) update
  EXPECT_DOUBLE_EQ(r.timeline[0].end_us, 5);
  EXPECT_DOUBLE_EQ(r.timeline[1].end_us, 3);
  // One device alone never slows down.
  PipelineStepProblem one = TwoIndependentRuns();
  one.stages[1].device = 0;
  EXPECT_DOUBLE_EQ(Simulate(one, c).step_us, 6);
}

TEST(PipelineScheduleTest, SharedCoresStretchABalancedPipelinesSteadyState) {
  // Two devices, M = 8, forward 1 and backward 1 µs: alone the step is
  // (M + S - 1)(f + b) = 18 µs. If the devices slow each other 2x, running
  // both at once is no faster than one after the other: the step takes at
  // least the total work, 32 µs, and the pipeline gains nothing.
  Cluster c = TestCluster(2);
  c.execution.co_run_slowdown = 2;
  for (PipelineSchedule schedule : kBothSchedules) {
    SCOPED_TRACE(PipelineScheduleName(schedule));
    const PipelineStepProblem p =
        Linear({.devices = 2, .forward_us = 1, .backward_us = 1}, 8, schedule);
    const PipelineStepResult r = Simulate(p, c);
    EXPECT_GE(r.step_us, 32 - 1e-9);
    ExpectConsistent(p, c, r);
  }
}

TEST(PipelineScheduleTest, WorkAfterARunKeepsItsDeviceButNotItsReaders) {
  // F0 on device 0, F1 on 1, then B1 on 1 and B0 on 0 (Linear); B1 sums its
  // gradients for 3 µs after handing its output to B0.
  Cluster c = TestCluster(2);
  PipelineStepProblem p =
      Linear({.devices = 2, .forward_us = 2, .backward_us = 5}, 1, PipelineSchedule::k1F1B);
  p.stages[2].after_us = 3;
  PipelineStepResult r = Simulate(p, c);
  // F0 0-2, F1 2-4, B1 4-9 and its sum to 12; B0 starts at 9, ends at 14.
  ASSERT_EQ(r.timeline.size(), 6u);
  EXPECT_DOUBLE_EQ(r.timeline[2].start_us, 4);
  EXPECT_DOUBLE_EQ(r.timeline[2].end_us, 12);
  EXPECT_DOUBLE_EQ(r.timeline[3].start_us, 9);
  EXPECT_DOUBLE_EQ(r.step_us, 14);

  // M = 2: device 1 starts F1 of micro-batch 1 only when the sum is done, at
  // 12 (at 9 without it); B1 of micro-batch 1 runs 14-19, B0 19-24.
  p.microbatches = 2;
  EXPECT_DOUBLE_EQ(Simulate(p, c).step_us, 24);
  p.stages[2].after_us = 0;
  EXPECT_DOUBLE_EQ(Simulate(p, c).step_us, 21);

  // Shared cores slow the sum as they slow a run: at 1.5x, B1's 3 µs sum and
  // B0 both run from 9; the sum ends at 13.5, when B0 has done 3 of its 5 µs.
  p.microbatches = 1;
  p.stages[2].after_us = 3;
  c.execution.co_run_slowdown = 1.5;
  r = Simulate(p, c);
  EXPECT_DOUBLE_EQ(r.timeline[2].end_us, 13.5);
  EXPECT_DOUBLE_EQ(r.step_us, 15.5);
}

TEST(PipelineScheduleTest, RepeatedRunsAreIdentical) {
  const Cluster c = TestCluster(4, 2);
  const PipelineStepProblem p = Linear(
      {.devices = 4, .forward_us = 1, .backward_us = 1, .bytes = 1000}, 8, PipelineSchedule::k1F1B);
  const PipelineStepResult a = Simulate(p, c);
  const PipelineStepResult b = Simulate(p, c);
  EXPECT_EQ(a.order, b.order);
  EXPECT_EQ(a.step_us, b.step_us);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].stage, b.timeline[i].stage);
    EXPECT_EQ(a.timeline[i].start_us, b.timeline[i].start_us);
  }
}

// Random splits: forward stages on random devices reading earlier forward
// stages, backward stages reading any earlier stages, random times and sizes.
// Whatever the placement, both schedules finish and respect every dependency,
// and 1F1B never holds more micro-batches on rank i than min(M, S - i).
TEST(PipelineSchedulePropertyTest, RandomSplitsNeverStall) {
  std::mt19937 rng(7);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    const int devices = uniform(1, 4);
    Cluster c = TestCluster(devices, uniform(0, 3));
    if (trial % 3 == 0) c.execution = {.whole_stages = true, .stage_run_us = 1, .cut_us = 0.5};
    if (trial % 4 == 1) c.execution.co_run_slowdown = 1.7;
    PipelineStepProblem p;
    p.microbatches = uniform(1, 6);
    const int forward = uniform(1, 5), backward = uniform(0, 5);
    for (int s = 0; s < forward + backward; ++s) {
      PipelineStage stage{.device = uniform(0, devices - 1),
                          .kind = s < forward ? StageKind::kForward : StageKind::kBackward,
                          .compute_us = static_cast<double>(uniform(0, 5)),
                          .stash_bytes = uniform(0, 100),
                          .transient_bytes = uniform(0, 100)};
      // Forward stages come first: any earlier stage is one a stage may read.
      for (int k = 0, n = s == 0 ? 0 : uniform(1, 3); k < n; ++k) {
        stage.inputs.push_back({uniform(0, s - 1), int64_t{uniform(0, 3000)}});
      }
      p.stages.push_back(stage);
    }
    for (PipelineSchedule schedule : kBothSchedules) {
      SCOPED_TRACE(::testing::Message()
                   << "trial " << trial << " " << PipelineScheduleName(schedule));
      p.schedule = schedule;
      absl::StatusOr<PipelineStepResult> r = SimulatePipelineStep(p, c);
      ASSERT_TRUE(r.ok()) << r.status();
      if (c.execution.hop_us == 0) ExpectConsistent(p, c, *r);
      if (schedule == PipelineSchedule::k1F1B) {
        int used = 0;
        for (int32_t rank : r->rank) used += rank >= 0;
        for (int d = 0; d < devices; ++d) {
          if (r->rank[d] < 0) continue;
          EXPECT_LE(r->max_stashes[d], std::min(p.microbatches, used - r->rank[d]));
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, RejectsMalformedProblems) {
  const Cluster c = TestCluster(2);
  auto expect_invalid = [&](const PipelineStepProblem& p, const char* message) {
    absl::StatusOr<PipelineStepResult> r = SimulatePipelineStep(p, c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(message));
  };
  const PipelineStepProblem good = Linear({}, 4, PipelineSchedule::k1F1B);
  ASSERT_TRUE(SimulatePipelineStep(good, c).ok());

  PipelineStepProblem p = good;
  p.stages[1].inputs = {{2, 0}};
  expect_invalid(p, "reads only stages with lower ids");
  p = good;
  p.stages[1].inputs = {{1, 0}};
  expect_invalid(p, "reads only stages with lower ids");
  p = good;
  p.stages[2].device = 2;
  expect_invalid(p, "on device 2");
  p = good;
  p.stages[0].device = -1;
  expect_invalid(p, "on device -1");
  p = good;
  p.microbatches = 0;
  expect_invalid(p, "microbatches");
  p = good;
  p.stages.push_back({.device = 0, .inputs = {{3, 0}}});  // a forward reading a backward
  expect_invalid(p, "reads backward stage");
  p = good;
  p.fixed_bytes = {1};
  expect_invalid(p, "fixed_bytes");
  p = good;
  p.update_us = {1, -1};
  expect_invalid(p, "update_us");
  p = good;
  p.stages[0].compute_us = -1;
  expect_invalid(p, "compute_us");
  p = good;
  p.stages[0].after_us = -1;
  expect_invalid(p, "after_us -1");
}

}  // namespace
}  // namespace autopar::costmodel
