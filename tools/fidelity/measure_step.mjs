#!/usr/bin/env node
// measure_step: measures the training step a training output folder holds
// (onnx-autopar MODEL -o OUT --mode training: OUT/plan.json's "training",
// OUT/step/{init,gradient,update}.onnx) model by model, as
// tools/runner/train.mjs runs it, and writes one node-times file for
// `onnx-autopar … --node-times` (costmodel/node_times.h). See README.md.
//
//   node tools/fidelity/measure_step.mjs OUT_DIR [--runs 10] [--warmup 3]
//        [--threads 1] [--seed 0] [--int-range LO,HI] -o STEP_TIMES.json
//
// The step runs as train.mjs runs it (one micro-batch: init weights, one
// seeded micro-batch of data with labels in [0, classes) and other integer
// inputs, such as tokens, in --int-range, by default [0, classes) too; the
// gradient model, then the update model, weights and optimizer state carried
// from step to step, t = 1, 2, ...), timing each session.run; then each
// model is profiled by measure.mjs on the first step's inputs (its optimised
// run, spread back over its nodes). Note [Profiler cost] says how the two
// are combined.
//
// The file: "node_us" names every gradient-model and update-model node (the
// two models' node names are disjoint; checked); "run_us": {"gradient",
// "update"} is each model's fixed cost per session run (feeding weights and
// state, fetching gradients and new weights), so that node times + run cost
// = the model's time in the step (Note [Profiler cost]); "node_origin" and
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
import { checkInitial, microbatchData, zeros } from '../runner/train_common.mjs';
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

/**
 * Runs o.warmup + o.runs steps as train.mjs does (one micro-batch: the
 * gradient model, then the update model fed its gradients, weights and state
 * carried from step to step, t = 1, 2, ...), timing each session.run.
 * Returns {gradient: [µs], update: [µs]} of the steps after the warm-up and
 * the first step's feeds of each model.
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
    const first = {};
    for (let s = 0; s < o.warmup + o.runs; s++) {
      const gradientFeeds = { ...data, ...weights };
      const t0 = performance.now();
      const grads = await runSession(sessions.gradient, gradientFeeds, fetches, `gradient model (step ${s + 1})`);
      const t1 = performance.now();
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
      for (const w of plan.weights) {
        weights[w.name] = updated[w.update.output];
        for (const st of w.update.state) state[st.name] = updated[st.output];
      }
      if (s === 0) Object.assign(first, { gradient: gradientFeeds, update: updateFeeds });
      if (s >= o.warmup) {
        walls.gradient.push((t1 - t0) * 1000);
        walls.update.push((t3 - t2) * 1000);
      }
    }
    return { walls, first };
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
// time the node times are: the gradient model's plain run alone, then while
// a worker thread runs the same model on the same inputs, then alone again;
// co_run_slowdown = median(paired) / median(both alone runs), at least 1.
// The pipeline step simulator applies it (costmodel/pipeline_schedule.h).
const CO_RUN_WORKER = fileURLToPath(new URL('./co_run_worker.mjs', import.meta.url));

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
 * Note [Co-run slowdown]: {slowdown, alone_us, paired_us, runs}. Each phase
 * runs at least `runs` times and at least `minPhaseMs` long: a small model's
 * ten runs last a few tens of milliseconds, which one scheduler hiccup
 * dominates.
 */
export async function coRunProbe(model, feeds, { threads, runs, minPhaseMs = 1000 }) {
  const session = await createSession(model, { threads });
  try {
    const warm = (await timeRuns(session, feeds, 2, 'co-run probe (warm-up)'))[1];
    runs = Math.max(runs, Math.min(10000, Math.ceil((minPhaseMs * 1000) / Math.max(warm, 1))));
    const alone = await timeRuns(session, feeds, runs, 'co-run probe (alone)');
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(CO_RUN_WORKER, { workerData: { model, feeds, threads, stop } });
    const failed = new Promise((_, reject) => {
      worker.on('error', (e) => reject(internal(`co-run probe of ${model}: ${e.message}`)));
    });
    const message = (what) => Promise.race([failed, new Promise((ok) => worker.on('message', (m) => m === what && ok()))]);
    let paired;
    try {
      await message('ready');
      paired = await Promise.race([failed, timeRuns(session, feeds, runs, 'co-run probe (paired)')]);
    } finally {
      Atomics.store(stop, 0, 1);
      await message('done').catch(() => {});
      await worker.terminate();
    }
    alone.push(...(await timeRuns(session, feeds, runs, 'co-run probe (alone)')));
    const a = median(alone);
    const p = median(paired);
    return { slowdown: Math.max(1, p / a), alone_us: a, paired_us: p, runs };
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
 * slower than run back to back on the same inputs. So the model's time is
 * its median session.run wall time in the step loop (stepLoop, no
 * profiler); its node times are the profiled ones times plain / profiled
 * wall time of the back-to-back runs (the profiler's dilation); and its run
 * cost is the rest: step wall time less node times — feeding weights and
 * state, fetching gradients and new weights, what the step loop adds. Node
 * times never exceed the step wall time (scaled down when they would).
 */
function modelTimes(m, walls) {
  const o = m.optimised;
  const measured = nodeUs(m);
  const dilation = Math.min(1, o.wall_unprofiled_us.median / o.wall_us.median);
  const wall = median(walls);
  const dilated = sum(Object.values(measured)) * dilation;
  const nodes = Math.min(dilated, wall);
  const node_us = scaleTo(measured, nodes);
  return {
    node_us,
    summary: {
      nodes: Object.keys(node_us).length,
      nodes_us: nodes,
      run_us: wall - nodes,
      step_wall_us: { median: wall, mean: sum(walls) / walls.length, min: Math.min(...walls) },
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
  const { walls, first } = await stepLoop(plan, o, data, await initialWeights(plan, o));
  const gradient = modelTimes(await measureModel(plan.models.gradient, { ...o, inputs: first.gradient }), walls.gradient);
  const update = modelTimes(await measureModel(plan.models.update, { ...o, inputs: first.update }), walls.update);
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
    run_us: { gradient: gradient.summary.run_us, update: update.summary.run_us },
    co_run_slowdown: coRun.slowdown,
    co_run: { alone_us: coRun.alone_us, paired_us: coRun.paired_us, runs: coRun.runs },
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
  --co-run-ms MS    the co-run probe times each of its three phases at least this
                    long (default 1000)
  --int-range LO,HI integer data inputs other than labels (default [0, classes))
  -o, --output F    write the node-times file there (default: stdout)
  --verbose         ORT warnings
writes "node_us" of both models, "run_us": {"gradient", "update"}, "node_origin",
"update_origin" and "co_run_slowdown" (two devices of this host at once):
onnx-autopar MODEL ... --mode training --node-times F`;

async function main(argv) {
  const { values: v, positionals } = parseCli(argv,
    { ...MEASURE_OPTIONS, output: { type: 'string', short: 'o' }, 'co-run-ms': { type: 'string' } });
  if (v.help) return { text: USAGE };
  if (positionals.length !== 1) throw badInput('expected one OUT_DIR (see --help)');
  const o = measureOptionsFrom(v);
  o.intRangeGiven = v['int-range'] !== undefined;
  o.coRunMs = v['co-run-ms'] === undefined ? 1000 : Number(v['co-run-ms']);
  if (!Number.isFinite(o.coRunMs) || o.coRunMs < 0) throw badInput(`--co-run-ms: bad value '${v['co-run-ms']}'`);
  const out = await measureStep(positionals[0], o);
  if (!v.output) return { json: out };
  writeFileSync(v.output, JSON.stringify(out, null, 1) + '\n');
  const g = out.models.gradient;
  const u = out.models.update;
  const ms = (us) => (us / 1000).toFixed(3);
  return {
    text: `gradient model: ${g.nodes} nodes ${ms(g.nodes_us)} ms + run ${ms(g.run_us)} ms; ` +
      `update model: ${u.nodes} nodes ${ms(u.nodes_us)} ms + run ${ms(u.run_us)} ms; ` +
      `co-run slowdown ${out.co_run_slowdown.toFixed(2)}; written to ${v.output}`,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('measure_step', main, process.argv.slice(2));
}
