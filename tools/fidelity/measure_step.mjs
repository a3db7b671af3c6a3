#!/usr/bin/env node
// measure_step: measures the training step a training output folder holds
// (onnx-autopar MODEL -o OUT --mode training: OUT/plan.json's "training",
// OUT/step/{init,gradient,update}.onnx) model by model, as
// tools/runner/train.mjs runs it, and writes one node-times file for
// `onnx-autopar … --node-times` (costmodel/node_times.h). See README.md.
//
//   node tools/fidelity/measure_step.mjs OUT_DIR [--runs 20] [--warmup 3]
//        [--step-ms 2000] [--co-run-ms 2000] [--threads 1] [--seed 0]
//        [--int-range LO,HI] -o STEP_TIMES.json
//
// The step runs as train.mjs runs it (one micro-batch: init weights, one
// seeded micro-batch of data with labels in [0, classes) and other integer
// inputs, such as tokens, in --int-range, by default [0, classes) too; the
// gradient model, then the update model, weights and optimizer state carried
// from step to step, t = 1, 2, ...), timing each session.run and a second
// run of each model right after it on the same feeds, for at least --step-ms;
// then each model is profiled by measure.mjs on the first step's inputs (its
// optimised run, spread back over its nodes). Note [Profiler cost] says how
// they are combined, Note [Noisy neighbours] which statistic of the runs.
// After each gradient run it also times the runner's own work on the
// gradients (Note [Gradient sums]).
//
// The file: "node_us" names every gradient-model and update-model node (the
// two models' node names are disjoint; checked); "run_us": {"gradient",
// "update"} is each model's fixed cost per session run (feeding weights and
// state, fetching gradients and new weights), so that node times + run cost
// = the model's time in the step (Note [Profiler cost]), and
// {"gradient_sum", "gradient_mean"} the runner's gradient sums; "node_origin" and
// "update_origin" are plan.json's, so that planning charges each step node
// to the source node it works for; "co_run_slowdown" is how much slower the
// gradient model runs beside a copy of itself on another thread of this host
// (Note [Co-run slowdown]). Also: each model's wall time, node sum and node
// count, threads, runs and cpu_share.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { badInput, internal } from '../runner/errors.mjs';
import { loadTrainingPlan } from '../runner/training_plan.mjs';
import { createSession, runSession } from '../runner/ort_session.mjs';
import { GradientAccumulator, checkInitial, microbatchData, zeros } from '../runner/train_common.mjs';
import { measureModel, measureOptionsFrom, median, nodeUs, parseCli, runMain, MEASURE_OPTIONS } from './measure.mjs';

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** The init model's weights, checked against plan.json. */
async function initialWeights(plan, o) {
  const init = await createSession(plan.models.init, { threads: o.threads });
  let initial;
  try {
    initial = await runSession(init, {}, plan.weights.map((w) => w.initial), 'init model');
  } finally {
    await init.release();
  }
  const weights = {};
  for (const w of plan.weights) {
    const bad = checkInitial(initial[w.initial], w);
    if (bad) throw internal(bad);
    weights[w.name] = initial[w.initial];
  }
  return weights;
}

// Note [Noisy neighbours]: on the shared 2-vCPU machines this is built on, the
// LSTM's gradient model (thousands of small, memory-bound nodes) ran 1.5-1.8x
// slower for seconds at a time, about 30% of a 20 s series of back-to-back
// runs, with the process on the CPU throughout (user time grew with the wall
// time) while a pure arithmetic loop beside it did not slow: another tenant
// contending for cache and memory. Twenty runs of a 20 ms model fall inside
// one such stretch or outside it, and the node-times file swung with them:
// the gradient model's median step time read 20, 30, 37, 37 and 21 ms in five
// measurements of one idle half hour, and its run cost, the difference of
// two medians timed seconds apart, 7-24 ms. So
//  - quantities that are differences or ratios of two timings (the run cost:
//    a step run less its node time; the co-run slowdown) take both timings
//    from runs interleaved in one window, so that both saw the same host;
//  - each model's time is the median of at least --step-ms of runs, not of a
//    fixed count, so that a short model's window outlasts a short stretch.
// The median, as train.mjs reports a measured step. A lower quartile resists
// such stretches better (over 2 s windows of that series, medians spanned
// 19-33 ms and lower quartiles 19-25 ms), but on models whose run times are
// spread without stretches it sits well below the typical run: with it, the
// pipeline benchmark predicted the transformer encoder's split steps 29-34%
// short of their measured medians, against 7-9% with medians.
const STEP_LOOP_MAX_STEPS = 10000;

// Note [Gradient sums]: between a split step's runs the runner does work no
// model does: each run's weight gradients are added into float64 sums
// (GradientAccumulator, tools/runner/train_common.mjs), and before the update
// the sums become means. On a transformer encoder of 3.2 M weights that is
// 3-7 ms per micro-batch against 60 ms of model, and it grows with the
// weights, not with the work, so it is measured, not folded into the node
// times: right after each timed gradient run (its outputs still warm, as in
// the runner) the loop adds them into one accumulator and times that, and
// times the means of all weights once per step. "gradient_sum" is the median
// add, "gradient_mean" the median mean (µs, all weights). Every add is a full
// add: the runner's first micro-batch of a step overwrites the sums instead,
// which costs about a third of an add.

/**
 * Runs at least o.warmup + o.runs steps, and at least o.stepMs of them after
 * the warm-up, as train.mjs does (one micro-batch: the gradient model, then
 * the update model fed its gradients, weights and state carried from step to
 * step, t = 1, 2, ...), timing each session.run; right after each model's run
 * it runs that model again on the same feeds (back to back, its outputs
 * dropped). Returns {gradient, update} (µs of the steps' runs after the
 * warm-up), {gradient, update} of the back-to-back runs, {sum, mean} (µs of
 * the gradient sums, Note [Gradient sums]) and the first step's feeds of each
 * model.
 */
async function stepLoop(plan, o, data, initial) {
  const sessions = {};
  try {
    for (const k of ['gradient', 'update']) sessions[k] = await createSession(plan.models[k], { threads: o.threads });
    const weights = { ...initial };
    const state = {};
    for (const w of plan.weights) for (const st of w.update.state) state[st.name] = zeros(w.type, w.shape);
    const fetches = [plan.loss.output, ...plan.weights.map((w) => w.gradient)];
    const walls = { gradient: [], update: [] };
    const again = { gradient: [], update: [] };
    const sums = { sum: [], mean: [] };
    const accumulator = new GradientAccumulator(plan.weights);
    accumulator.begin();
    const first = {};
    let timedMs = 0;
    for (let s = 0; s < STEP_LOOP_MAX_STEPS && (s < o.warmup + o.runs || timedMs < o.stepMs); s++) {
      const gradientFeeds = { ...data, ...weights };
      const t0 = performance.now();
      const grads = await runSession(sessions.gradient, gradientFeeds, fetches, `gradient model (step ${s + 1})`);
      const t1 = performance.now();
      // The first add of a run overwrites the sums (Note [Gradient sums]): done once untimed.
      if (s === 0) for (const w of plan.weights) accumulator.add(w.name, grads[w.gradient]);
      const sumStart = performance.now();
      for (const w of plan.weights) accumulator.add(w.name, grads[w.gradient]);
      const sumEnd = performance.now();
      // Any M: the divisor does not change what the mean costs.
      for (const w of plan.weights) accumulator.mean(w.name, 8);
      const meanEnd = performance.now();
      const [gradientAgain] = await timeRuns(sessions.gradient, gradientFeeds, 1, `gradient model (step ${s + 1}, again)`);
      const updateFeeds = {};
      for (const w of plan.weights) {
        updateFeeds[w.update.weight] = weights[w.name];
        updateFeeds[w.update.gradient] = grads[w.gradient];
        for (const st of w.update.state) updateFeeds[st.name] = state[st.name];
      }
      if (plan.stepInput) updateFeeds[plan.stepInput] = { type: 'float32', dims: [], data: Float32Array.of(s + 1) };
      const t2 = performance.now();
      const updated = await runSession(sessions.update, updateFeeds, undefined, `update model (step ${s + 1})`);
      const t3 = performance.now();
      const [updateAgain] = await timeRuns(sessions.update, updateFeeds, 1, `update model (step ${s + 1}, again)`);
      for (const w of plan.weights) {
        weights[w.name] = updated[w.update.output];
        for (const st of w.update.state) state[st.name] = updated[st.output];
      }
      if (s === 0) Object.assign(first, { gradient: gradientFeeds, update: updateFeeds });
      if (s >= o.warmup) {
        walls.gradient.push((t1 - t0) * 1000);
        walls.update.push((t3 - t2) * 1000);
        again.gradient.push(gradientAgain);
        again.update.push(updateAgain);
        sums.sum.push((sumEnd - sumStart) * 1000);
        sums.mean.push((meanEnd - sumEnd) * 1000);
        timedMs += t1 - t0 + t3 - t2;
      }
    }
    return { walls, again, sums, first };
  } finally {
    for (const session of Object.values(sessions)) await session.release().catch(() => {});
  }
}

// Note [Co-run slowdown]: the devices of `cpu:KxT` are threads of this host,
// and two of them running at once need not each run as fast as one alone:
// they share caches and memory bandwidth, and on a virtual machine two vCPUs
// may be two hardware threads of one core or be scheduled on whatever the
// hypervisor has free (on the 2-vCPU machines this was built on, a spin loop
// ran 1.1-2.2x slower beside a copy of itself, from one minute to the next).
// A split's stages overlap, so the planner needs that factor, measured at the
// time the node times are: the gradient model's plain run alone, and while a
// worker thread runs the same model on the same inputs, in CO_RUN_CHUNKS
// alternations (alone, paired, alone, ..., alone), so that a stretch of
// contention from another tenant (Note [Noisy neighbours]) slows both sides
// of a comparison or neither. Chunk k's ratio is the median of its paired
// runs over the median of the alone runs on either side of it;
// co_run_slowdown = the mean of the chunks' ratios, at least 1. The mean, not
// the median: the slowdown itself comes and goes (the eight chunks of one
// LSTM probe read 1.02-1.04 and 1.61-1.77), and a split step of a few hundred
// milliseconds runs through both, so what it pays is the average.
// The pipeline step simulator applies it (costmodel/pipeline_schedule.h).
const CO_RUN_WORKER = fileURLToPath(new URL('./co_run_worker.mjs', import.meta.url));
const CO_RUN_CHUNKS = 8;
// The worker's state (co_run_worker.mjs).
const CO_RUN = { RUN: 0, PAUSE: 1, STOP: 2 };

/** Times `runs` plain runs of `session` on `feeds` (µs each). */
async function timeRuns(session, feeds, runs, label) {
  const us = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await runSession(session, feeds, undefined, label);
    us.push((performance.now() - t0) * 1000);
  }
  return us;
}

/**
 * Note [Co-run slowdown]: {slowdown, alone_us, paired_us, runs, ratios}.
 * Alone and paired each run at least `runs` times and at least `minPhaseMs`
 * long in all (a small model's ten runs last a few tens of milliseconds,
 * which one scheduler hiccup dominates), split over the chunks.
 */
export async function coRunProbe(model, feeds, { threads, runs, minPhaseMs = 1000 }) {
  const session = await createSession(model, { threads });
  try {
    const warm = (await timeRuns(session, feeds, 2, 'co-run probe (warm-up)'))[1];
    runs = Math.max(runs, Math.min(10000, Math.ceil((minPhaseMs * 1000) / Math.max(warm, 1))));
    const perChunk = Math.max(1, Math.ceil(runs / CO_RUN_CHUNKS));
    const state = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(CO_RUN_WORKER, { workerData: { model, feeds, threads, state } });
    const failed = new Promise((_, reject) => {
      worker.on('error', (e) => reject(internal(`co-run probe of ${model}: ${e.message}`)));
    });
    failed.catch(() => {});
    const message = (what) => Promise.race([failed, new Promise((ok) => {
      const on = (m) => {
        if (m !== what) return;
        worker.off('message', on);
        ok();
      };
      worker.on('message', on);
    })]);
    const setState = (value) => {
      Atomics.store(state, 0, value);
      Atomics.notify(state, 0);
    };
    const alone = [];
    const paired = [];
    try {
      await message('ready');
      for (let k = 0; k <= CO_RUN_CHUNKS; k++) {
        const paused = message('paused');
        setState(CO_RUN.PAUSE);
        await paused;
        alone.push(await timeRuns(session, feeds, perChunk, 'co-run probe (alone)'));
        if (k === CO_RUN_CHUNKS) break;
        setState(CO_RUN.RUN);
        paired.push(await Promise.race([failed, timeRuns(session, feeds, perChunk, 'co-run probe (paired)')]));
      }
    } finally {
      const done = message('done').catch(() => {});
      setState(CO_RUN.STOP);
      await done;
      await worker.terminate();
    }
    const ratios = paired.map((p, k) => median(p) / median([...alone[k], ...alone[k + 1]]));
    return {
      slowdown: Math.max(1, ratios.reduce((a, b) => a + b, 0) / ratios.length),
      alone_us: median(alone.flat()),
      paired_us: median(paired.flat()),
      runs: perChunk * CO_RUN_CHUNKS,
      ratios,
    };
  } finally {
    await session.release().catch(() => {});
  }
}

/**
 * One model's share of the file: its node times and its fixed per-run cost.
 * Note [Profiler cost]: on a step model of thousands of small nodes the
 * profiled run is several times slower than the plain one, and its node
 * times alone sum to more than the plain run's wall time; and a model run
 * within a step (after the other model, on buffers the other one wrote) is
 * slower than run back to back on the same inputs. So
 *  - the model's time is its session.run wall time in the step loop
 *    (stepLoop, no profiler);
 *  - its node time is its back-to-back run's wall time (the runs stepLoop
 *    interleaves with the step's) times the nodes' share of a profiled run
 *    (the profiled node times' sum / the profiled runs' wall time, both
 *    means over the same runs), and each node gets its profiled share of it;
 *  - its run cost is the rest: step time less node time — feeding weights
 *    and state, fetching gradients and new weights, what the step loop adds.
 * Both wall times are medians (Note [Noisy neighbours]). Node time
 * never exceeds the step time (scaled down when it would).
 */
function modelTimes(m, walls, again) {
  const o = m.optimised;
  const measured = nodeUs(m);
  const share = Math.min(1, sum(Object.values(measured)) / o.wall_us.mean);
  const step = median(walls);
  const backToBack = median(again);
  const nodes = Math.min(share * backToBack, step);
  const node_us = scaleTo(measured, nodes);
  const stats = (xs) => ({ median: median(xs), mean: sum(xs) / xs.length, min: Math.min(...xs) });
  return {
    node_us,
    summary: {
      nodes: Object.keys(node_us).length,
      nodes_us: nodes,
      run_us: step - nodes,
      step_runs: walls.length,
      step_wall_us: stats(walls),
      back_to_back_us: stats(again),
      node_share: share,
      wall_us: o.wall_unprofiled_us,
      profiled_wall_us: o.wall_us,
      profiled_nodes_us: sum(Object.values(measured)),
      cpu_share: m.cpu_share,
    },
  };
}

/** `nodeUs` scaled to sum to `target`. */
export function scaleTo(nodeUs, target) {
  const total = sum(Object.values(nodeUs));
  const k = total > 0 ? target / total : 0;
  return Object.fromEntries(Object.entries(nodeUs).map(([n, us]) => [n, us * k]));
}

/** Measures OUT_DIR's step; returns the node-times file's object. */
export async function measureStep(outDir, opts) {
  const plan = loadTrainingPlan(outDir);
  if (plan.pipeline) throw badInput(`${outDir}: a step split over devices; measure_step measures the one-device step`);
  const raw = JSON.parse(readFileSync(join(plan.dir, 'plan.json'), 'utf8')).training;
  const classes = plan.loss.classes;
  const o = { ...opts, intRange: opts.intRangeGiven ? opts.intRange : classes ? [0, classes] : opts.intRange };
  const data = microbatchData({ seed: o.seed, microbatches: 1, intRange: o.intRange, dataDir: null }, plan, 0, 0);
  const { walls, again, sums, first } = await stepLoop(plan, o, data, await initialWeights(plan, o));
  // The unoptimised session's unprofiled runs are not needed: the back-to-back
  // runs of the step loop give the plain wall time (Note [Profiler cost]).
  const profile = (model, inputs) => measureModel(model, { ...o, inputs, unprofiled: false });
  const gradient = modelTimes(await profile(plan.models.gradient, first.gradient), walls.gradient, again.gradient);
  const update = modelTimes(await profile(plan.models.update, first.update), walls.update, again.update);
  const coRun = await coRunProbe(plan.models.gradient, first.gradient,
    { threads: o.threads, runs: Math.max(5, Math.ceil(o.runs / 2)), minPhaseMs: o.coRunMs });
  const both = Object.keys(update.node_us).filter((n) => n in gradient.node_us);
  if (both.length > 0) throw internal(`the gradient and update models both have a node '${both[0]}': their times cannot share one file`);
  return {
    format: 'onnx-autopar-step-times',
    out_dir: resolve(outDir),
    threads: o.threads,
    warmup: o.warmup,
    runs: o.runs,
    seed: o.seed,
    cpu_share: Math.min(gradient.summary.cpu_share, update.summary.cpu_share),
    run_us: {
      gradient: gradient.summary.run_us,
      update: update.summary.run_us,
      gradient_sum: median(sums.sum),
      gradient_mean: median(sums.mean),
    },
    co_run_slowdown: coRun.slowdown,
    co_run: { alone_us: coRun.alone_us, paired_us: coRun.paired_us, runs: coRun.runs, ratios: coRun.ratios },
    models: { gradient: gradient.summary, update: update.summary },
    node_us: { ...gradient.node_us, ...update.node_us },
    node_origin: raw.node_origin ?? {},
    update_origin: raw.update_origin ?? {},
  };
}

const USAGE = `usage: node tools/fidelity/measure_step.mjs OUT_DIR -o STEP_TIMES.json [options]
  OUT_DIR           written by onnx-autopar MODEL -o OUT_DIR --devices 1 --mode training ...
  --runs N          measured runs per model (default 20)
  --warmup N        runs discarded first (default 3)
  --threads N       ORT intra-op threads (default 1)
  --seed N          seed of the data micro-batch (default 0)
  --step-ms MS      time the step loop at least this long after the warm-up
                    (default 2000; Note [Noisy neighbours])
  --co-run-ms MS    the co-run probe times each model alone, and beside a copy
                    of itself, at least this long each (default 2000)
  --int-range LO,HI integer data inputs other than labels (default [0, classes))
  -o, --output F    write the node-times file there (default: stdout)
  --verbose         ORT warnings
writes "node_us" of both models, "run_us": {"gradient", "update", "gradient_sum",
"gradient_mean"}, "node_origin",
"update_origin" and "co_run_slowdown" (two devices of this host at once):
onnx-autopar MODEL ... --mode training --node-times F`;

async function main(argv) {
  const { values: v, positionals } = parseCli(argv,
    { ...MEASURE_OPTIONS, output: { type: 'string', short: 'o' }, 'co-run-ms': { type: 'string' }, 'step-ms': { type: 'string' } });
  if (v.help) return { text: USAGE };
  if (positionals.length !== 1) throw badInput('expected one OUT_DIR (see --help)');
  const o = measureOptionsFrom(v);
  o.intRangeGiven = v['int-range'] !== undefined;
  o.coRunMs = v['co-run-ms'] === undefined ? 2000 : Number(v['co-run-ms']);
  if (!Number.isFinite(o.coRunMs) || o.coRunMs < 0) throw badInput(`--co-run-ms: bad value '${v['co-run-ms']}'`);
  o.stepMs = v['step-ms'] === undefined ? 2000 : Number(v['step-ms']);
  if (!Number.isFinite(o.stepMs) || o.stepMs < 0) throw badInput(`--step-ms: bad value '${v['step-ms']}'`);
  const out = await measureStep(positionals[0], o);
  if (!v.output) return { json: out };
  writeFileSync(v.output, JSON.stringify(out, null, 1) + '\n');
  const g = out.models.gradient;
  const u = out.models.update;
  const ms = (us) => (us / 1000).toFixed(3);
  return {
    text: `gradient model: ${g.nodes} nodes ${ms(g.nodes_us)} ms + run ${ms(g.run_us)} ms; ` +
      `update model: ${u.nodes} nodes ${ms(u.nodes_us)} ms + run ${ms(u.run_us)} ms; ` +
      `gradient sum ${ms(out.run_us.gradient_sum)} ms per micro-batch, mean ${ms(out.run_us.gradient_mean)} ms; ` +
      `co-run slowdown ${out.co_run_slowdown.toFixed(2)}; written to ${v.output}`,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('measure_step', main, process.argv.slice(2));
}
