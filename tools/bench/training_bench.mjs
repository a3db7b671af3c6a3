#!/usr/bin/env node
// training_bench: the training step on one CPU thread, three ways. For each
// model that tools/bench/training_bench.py exported (with its data and
// PyTorch's own step times):
//   1. the main command writes the step (--cluster cpu:1x1 (one device)
//      --mode training, cross-entropy, Adam lr 1e-4) and predicts it from the
//      cost model alone;
//   2. tools/runner/train.mjs runs it on the same data, one intra-op thread
//      (its losses are checked against torch's); the measured step is the
//      median over the steps after the warm-up, timed again over about
//      TIMING_MS of steps on random data when those steps are shorter;
//   3. tools/fidelity/measure_step.mjs measures the step's own gradient and
//      update models (node times and each model's per-run cost), and the main
//      command predicts the step again from that file (--node-times: M ×
//      (gradient nodes + run) + update nodes + run); the file's node times
//      split the step into forward (the source's nodes), loss and backward
//      (the nodes the gradient pass added) and update.
// It sets the measured step beside torch's (ratio both ways) and beside each
// prediction (|pred/meas − 1|, and its median over the models), checks that
// train.mjs's losses are torch's (the same computation is timed), and writes
// training_step.{md,csv}. Run by scripts/bench_training.sh.
//
//   node tools/bench/training_bench.mjs MODELS_DIR --work DIR [--results DIR]
//        [--cli PATH] [--host-calibration F] [--runs 10]
//
// Exit 0 whatever the numbers (a benchmark, not a test); 2 bad input; 4 when
// a tool fails on every model.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cpus, loadavg } from 'node:os';
import { EXIT, badInput, internal } from '../runner/errors.mjs';
import { median, number, parseCli, runMain } from '../fidelity/measure.mjs';
import { REPO_ROOT, resolveCli } from '../fidelity/lib.mjs';

const TRAIN = join(REPO_ROOT, 'tools/runner/train.mjs');
const MEASURE_STEP = join(REPO_ROOT, 'tools/fidelity/measure_step.mjs');
const TIMING_MS = 400; // the least time over which a step is timed (train.mjs, measure_step.mjs)
const MAX_STEPS = 400;
const LOSS_TOL = 1e-3; // train.mjs's losses against torch's: the same computation

const OPTIONS = {
  work: { type: 'string' }, results: { type: 'string' }, cli: { type: 'string' },
  'host-calibration': { type: 'string' }, runs: { type: 'string' },
};

/** Runs a command; returns its stdout. A failure throws its last stderr line. */
function run(cmd, args, what) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.error) throw internal(`${what}: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    const msg = (r.stderr || r.stdout || '').trim().split('\n').pop();
    throw internal(`${what} failed (exit ${r.status}): ${msg}`);
  }
  return r.stdout;
}

/** Runs a command; its stdout as JSON. */
function runJson(cmd, args, what) {
  const stdout = run(cmd, args, what);
  try {
    return JSON.parse(stdout);
  } catch {
    throw internal(`${what} printed no JSON`);
  }
}

/** The training step of `model` in `dir`; returns plan.json. */
function writeStep(o, model, dir, nodeTimes) {
  const args = [model, '-o', dir, '--cluster', 'cpu:1x1', '--mode', 'training',
    '--loss', 'cross-entropy:logits', '--optimizer', 'adam', '--learning-rate', '0.0001', '--quiet', '--no-report', '--force', '--json'];
  if (nodeTimes) args.push('--node-times', nodeTimes);
  if (o.hostCalibration) args.push('--host-calibration', o.hostCalibration);
  runJson(o.cli, args, `onnx-autopar ${model}${nodeTimes ? ' --node-times' : ''}`);
  return JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8'));
}

/** measure_step.mjs on a training output folder; returns its node-times file. */
function measureStep(o, outDir, file) {
  run(process.execPath, [MEASURE_STEP, outDir, '--runs', String(o.runs), '--warmup', '2', '--threads', '1', '-o', file], `measure_step.mjs ${outDir}`);
  return JSON.parse(readFileSync(file, 'utf8'));
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** One model's row; a failing step is a row with its error. */
function benchModel(o, name) {
  const src = join(o.models, name);
  const torch = JSON.parse(readFileSync(join(src, 'torch.json'), 'utf8'));
  const row = { model: name, params: torch.params, batch: torch.batch, torch_ms: median(torch.step_ms) };
  const work = join(o.work, name);
  mkdirSync(work, { recursive: true });
  try {
    const out = join(work, 'out');
    const plan = writeStep(o, join(src, 'model.onnx'), out, null);
    row.predicted_model_ms = plan.predicted.step_time_us / 1000;
    const steps = torch.warmup + torch.step_ms.length;
    const trained = runJson(process.execPath, [TRAIN, out, '--steps', String(steps), '--data', join(src, 'data'), '--threads', '1', '--json'],
      `train.mjs ${name}`);
    row.measured_ms = median(trained.step_ms.slice(torch.warmup));
    row.loss_diff = Math.max(...trained.loss.map((l, s) => Math.abs(l - torch.losses[s])));
    // Ten steps of a millisecond are too short a window on a shared machine:
    // the step is timed again over about TIMING_MS of steps (random data of
    // the same shapes; token inputs index a vocabulary of `classes` entries).
    const classes = plan.training.loss.classes;
    row.timed_steps = Math.min(MAX_STEPS, Math.max(steps - torch.warmup, Math.ceil(TIMING_MS / row.measured_ms)));
    if (row.timed_steps > steps - torch.warmup) {
      const timed = runJson(process.execPath, [TRAIN, out, '--steps', String(row.timed_steps + torch.warmup), '--seed', '0',
        ...(classes ? ['--int-range', `0,${classes}`] : []), '--threads', '1', '--json'], `train.mjs ${name} (timing)`);
      row.measured_ms = median(timed.step_ms.slice(torch.warmup));
    }
    row.ort_over_torch = row.measured_ms / row.torch_ms;
    row.torch_over_ort = row.torch_ms / row.measured_ms;

    // The step's own models, measured; the main command predicts from them.
    const times = measureStep({ ...o, runs: Math.max(o.runs, row.timed_steps) }, out, join(work, 'step_times.json'));
    const planMeasured = writeStep(o, join(src, 'model.onnx'), join(work, 'out_measured'), join(work, 'step_times.json'));
    row.predicted_measured_ms = planMeasured.predicted.step_time_us / 1000;
    const g = times.models.gradient;
    const u = times.models.update;
    const added = new Set(Object.keys(times.node_origin));
    const gradientNodes = Object.entries(times.node_us).filter(([n]) => !(n in times.update_origin));
    row.nodes_forward_ms = sum(gradientNodes.filter(([n]) => !added.has(n)).map(([, us]) => us)) / 1000;
    row.nodes_backward_ms = sum(gradientNodes.filter(([n]) => added.has(n)).map(([, us]) => us)) / 1000;
    row.gradient_run_ms = g.run_us / 1000;
    row.nodes_update_ms = u.nodes_us / 1000;
    row.update_run_ms = u.run_us / 1000;
    row.gradient_wall_ms = g.step_wall_us.median / 1000;
    row.update_wall_ms = u.step_wall_us.median / 1000;
    row.cpu_share = times.cpu_share;
  } catch (e) {
    row.error = e.message;
  }
  return row;
}

const f2 = (v) => (v === undefined || v === null ? '–' : v.toFixed(2));
const pct = (v) => (v === undefined || v === null ? '–' : `${Math.round(v * 100)}%`);
const err = (pred, meas) => (pred && meas ? Math.abs(pred / meas - 1) : null);

function markdown(rows, o, host) {
  const ok = rows.filter((r) => !r.error);
  const medErr = (key) => (ok.length ? median(ok.map((r) => err(r[key], r.measured_ms))) : null);
  const errs = ok.map((r) => ({ model: r.model, e: err(r.predicted_measured_ms, r.measured_ms) })).filter((x) => x.e !== null);
  const worst = errs.reduce((a, b) => (b.e > (a?.e ?? -1) ? b : a), null);
  const lines = [
    `## Training step on one CPU thread (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
    '',
    `Host: ${host.cores} cores, load ${host.before.toFixed(2)} before / ${host.after.toFixed(2)} after; ORT (train.mjs, 1 intra-op thread) and torch ${'1.13'} (torch.set_num_threads(1)), Adam lr 1e-4, one micro-batch per step, median over the steps after ${o.warmup} warm-up (at least ${TIMING_MS} ms of steps, at most ${MAX_STEPS}).`,
    '',
    '| model | params | batch | torch ms | ORT ms | ORT/torch | torch/ORT | predicted (cost model) ms | \\|pred/meas−1\\| | predicted (measured step models) ms | \\|pred/meas−1\\| | loss vs torch |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    if (r.error) {
      lines.push(`| ${r.model} | ${r.params} | ${r.batch} | ${f2(r.torch_ms)} | fails: ${r.error.replace(/\|/g, '\\|')} | | | | | | | |`);
      continue;
    }
    lines.push(`| ${r.model} | ${r.params} | ${r.batch} | ${f2(r.torch_ms)} | ${f2(r.measured_ms)} | ${f2(r.ort_over_torch)} | ${f2(r.torch_over_ort)} | ` +
      `${f2(r.predicted_model_ms)} | ${pct(err(r.predicted_model_ms, r.measured_ms))} | ${f2(r.predicted_measured_ms)} | ${pct(err(r.predicted_measured_ms, r.measured_ms))} | ${r.loss_diff.toExponential(1)} |`);
  }
  lines.push('', `Median |pred/meas − 1| over the ${ok.length} models that train: cost model alone ${pct(medErr('predicted_model_ms'))}, ` +
    `from the step's measured models ${pct(medErr('predicted_measured_ms'))}` + (worst ? ` (worst: ${worst.model}, ${pct(worst.e)}).` : '.'));
  lines.push('', '### Where the measured step goes (measure_step.mjs on the step\'s models, ms)', '',
    '| model | forward nodes | loss + backward nodes | gradient run cost | update nodes | update run cost | gradient model wall | update model wall | cpu share |',
    '|---|---|---|---|---|---|---|---|---|');
  for (const r of ok) {
    lines.push(`| ${r.model} | ${f2(r.nodes_forward_ms)} | ${f2(r.nodes_backward_ms)} | ${f2(r.gradient_run_ms)} | ${f2(r.nodes_update_ms)} | ${f2(r.update_run_ms)} | ${f2(r.gradient_wall_ms)} | ${f2(r.update_wall_ms)} | ${f2(r.cpu_share)} |`);
  }
  lines.push('', 'ORT ms: train.mjs\'s step (gradient model, accumulation, update model). Node times: ORT\'s optimised run spread back over each model\'s nodes; forward nodes are the source\'s, loss + backward the nodes the gradient pass added (plan.json\'s node_origin); a run cost is the model\'s session.run wall time less its node times (feeding weights, fetching outputs). "loss vs torch": the largest |loss − torch\'s loss| over the steps (same data, same initial weights).');
  return lines.join('\n') + '\n';
}

const CSV_KEYS = ['model', 'params', 'batch', 'torch_ms', 'measured_ms', 'ort_over_torch', 'torch_over_ort', 'predicted_model_ms',
  'predicted_measured_ms', 'nodes_forward_ms', 'nodes_backward_ms', 'gradient_run_ms', 'nodes_update_ms', 'update_run_ms',
  'gradient_wall_ms', 'update_wall_ms', 'timed_steps', 'loss_diff', 'cpu_share', 'error'];

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, OPTIONS);
  if (positionals.length !== 1) throw badInput('expected MODELS_DIR (what tools/bench/training_bench.py wrote)');
  if (!v.work) throw badInput('--work DIR is required');
  const o = {
    models: resolve(positionals[0]), work: resolve(v.work), results: resolve(v.results ?? v.work),
    cli: v.cli ?? resolveCli('--cli'), hostCalibration: v['host-calibration'] ?? null,
    runs: v.runs === undefined ? 10 : number(v.runs, '--runs', { int: true, min: 1 }), warmup: 0,
  };
  if (!existsSync(o.models)) throw badInput(`${o.models}: no such directory`);
  const names = readdirSync(o.models).filter((n) => existsSync(join(o.models, n, 'torch.json'))).sort();
  if (names.length === 0) throw badInput(`${o.models}: no model with a torch.json`);
  const host = { cores: cpus().length, before: loadavg()[0] };
  const rows = [];
  for (const name of names) {
    o.warmup = JSON.parse(readFileSync(join(o.models, name, 'torch.json'), 'utf8')).warmup;
    process.stderr.write(`training_bench: ${name}\n`);
    rows.push(benchModel(o, name));
  }
  host.after = loadavg()[0];
  const md = markdown(rows, o, host);
  mkdirSync(o.results, { recursive: true });
  writeFileSync(join(o.results, 'training_step.md'), md);
  const cell = (x) => (x === undefined || x === null ? '' : typeof x === 'string' ? `"${x.replace(/"/g, "'")}"` : String(x));
  writeFileSync(join(o.results, 'training_step.csv'), [CSV_KEYS.join(','), ...rows.map((r) => CSV_KEYS.map((k) => cell(r[k])).join(','))].join('\n') + '\n');
  const code = rows.every((r) => r.error) ? EXIT.INTERNAL : EXIT.OK;
  return { code, text: md };
}

runMain('training_bench', main, process.argv.slice(2));
