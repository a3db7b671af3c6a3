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
// Inputs are those of the first step: the init model's weights, one
// micro-batch of seeded data (labels in [0, classes); other integer inputs,
// such as tokens, in --int-range, by default [0, classes) too), the gradients
// of that micro-batch, optimizer state zeros and step t = 1. Each model is
// measured by measure.mjs (its optimised run, spread back over its nodes).
//
// The file: "node_us" names every gradient-model and update-model node (the
// two models' node names are disjoint; checked); "run_us": {"gradient",
// "update"} is each model's fixed cost per session run — its unprofiled wall
// time less the sum of its node times (feeding weights and state, fetching
// gradients and new weights, the executor's own work); "node_origin" and
// "update_origin" are plan.json's, so that planning charges each step node
// to the source node it works for. Also: each model's wall time, node sum and
// node count, threads, runs and cpu_share.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { badInput, internal } from '../runner/errors.mjs';
import { loadTrainingPlan } from '../runner/training_plan.mjs';
import { createSession, runSession } from '../runner/ort_session.mjs';
import { checkInitial, microbatchData, zeros } from '../runner/train_common.mjs';
import { measureModel, measureOptionsFrom, nodeUs, parseCli, runMain, MEASURE_OPTIONS } from './measure.mjs';

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** The first step's feeds of the gradient and update models. */
async function stepInputs(plan, o) {
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
  const data = microbatchData({ seed: o.seed, microbatches: 1, intRange: o.intRange, dataDir: null }, plan, 0, 0);
  const gradientFeeds = { ...data, ...weights };
  const session = await createSession(plan.models.gradient, { threads: o.threads });
  let grads;
  try {
    grads = await runSession(session, gradientFeeds, plan.weights.map((w) => w.gradient), 'gradient model');
  } finally {
    await session.release();
  }
  const updateFeeds = {};
  for (const w of plan.weights) {
    updateFeeds[w.update.weight] = weights[w.name];
    updateFeeds[w.update.gradient] = grads[w.gradient];
    for (const s of w.update.state) updateFeeds[s.name] = zeros(w.type, w.shape);
  }
  if (plan.stepInput) updateFeeds[plan.stepInput] = { type: 'float32', dims: [], data: Float32Array.of(1) };
  return { gradientFeeds, updateFeeds };
}

/** One model's share of the file: its node times and its fixed per-run cost. */
function modelTimes(m) {
  const node_us = nodeUs(m);
  const nodes = sum(Object.values(node_us));
  const wall = m.optimised.wall_unprofiled_us;
  return {
    node_us,
    summary: {
      nodes: Object.keys(node_us).length,
      nodes_us: nodes,
      wall_us: wall,
      // Mean against mean: node_us are means over the measured runs.
      run_us: Math.max(0, wall.mean - nodes),
      cpu_share: m.cpu_share,
    },
  };
}

/** Measures OUT_DIR's step; returns the node-times file's object. */
export async function measureStep(outDir, opts) {
  const plan = loadTrainingPlan(outDir);
  if (plan.pipeline) throw badInput(`${outDir}: a step split over devices; measure_step measures the one-device step`);
  const raw = JSON.parse(readFileSync(join(plan.dir, 'plan.json'), 'utf8')).training;
  const classes = plan.loss.classes;
  const o = { ...opts, intRange: opts.intRangeGiven ? opts.intRange : classes ? [0, classes] : opts.intRange };
  const { gradientFeeds, updateFeeds } = await stepInputs(plan, o);
  const gradient = modelTimes(await measureModel(plan.models.gradient, { ...o, inputs: gradientFeeds }));
  const update = modelTimes(await measureModel(plan.models.update, { ...o, inputs: updateFeeds }));
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
  --int-range LO,HI integer data inputs other than labels (default [0, classes))
  -o, --output F    write the node-times file there (default: stdout)
  --verbose         ORT warnings
writes "node_us" of both models, "run_us": {"gradient", "update"}, "node_origin"
and "update_origin": onnx-autopar MODEL ... --mode training --node-times F`;

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, { ...MEASURE_OPTIONS, output: { type: 'string', short: 'o' } });
  if (v.help) return { text: USAGE };
  if (positionals.length !== 1) throw badInput('expected one OUT_DIR (see --help)');
  const o = measureOptionsFrom(v);
  o.intRangeGiven = v['int-range'] !== undefined;
  const out = await measureStep(positionals[0], o);
  if (!v.output) return { json: out };
  writeFileSync(v.output, JSON.stringify(out, null, 1) + '\n');
  const g = out.models.gradient;
  const u = out.models.update;
  const ms = (us) => (us / 1000).toFixed(3);
  return {
    text: `gradient model: ${g.nodes} nodes ${ms(g.nodes_us)} ms + run ${ms(g.run_us)} ms; ` +
      `update model: ${u.nodes} nodes ${ms(u.nodes_us)} ms + run ${ms(u.run_us)} ms; written to ${v.output}`,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('measure_step', main, process.argv.slice(2));
}
