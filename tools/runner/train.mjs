#!/usr/bin/env node
// train: runs the training step that `onnx-autopar MODEL -o OUT --mode
// training` wrote (OUT/plan.json's "training" object, OUT/step/*.onnx) for N
// steps in ONNX Runtime, and optionally saves the original model with the
// trained weights. See README.md.
//
// A step: the gradient model runs on each of the M micro-batches; the
// gradients are accumulated as a mean (summed in float64, divided by M and
// rounded once to the weight's type: for a loss that is a batch mean this is
// the gradient of the M micro-batches concatenated, and torch's
// `(loss / M).backward()` accumulation, up to float32 rounding); then the
// update model runs once, fed the step number t (1 for the first) when the
// optimizer needs it. Weights start as the init model's outputs, optimizer
// state as zeros; both are kept between steps.
//
// Exit codes: 0 ok, 2 bad input, 4 runtime/internal error.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { EXIT, RunnerError, badInput, internal } from './errors.mjs';
import { createSession, runSession } from './ort_session.mjs';
import { mulberry32, randomTensor } from './inputs.mjs';
import { readTensorFile } from './tensor_pb.mjs';
import { dtypeFromName, floatToHalf, halfToFloat, numel } from './dtypes.mjs';
import { loadTrainingPlan, sha256 } from './training_plan.mjs';
import { replaceInitializers } from './model_weights.mjs';

const USAGE = `usage: node tools/runner/train.mjs OUT_DIR [options]
  OUT_DIR               written by onnx-autopar MODEL -o OUT_DIR --devices 1 --mode training ...
  --steps N             training steps (default 1)
  --microbatches M      micro-batches per step; their gradients are averaged (default 1)
  --data DIR            read DIR/step_<s>/mb_<m>/<input name>.pb (s, m from 0; labels included)
  --seed S              random data: micro-batch m of step s from seed S + s*M + m (default 0)
  --int-range LO,HI     random integer data inputs in [LO, HI) (default 0,10); labels lie in [0, classes)
  --save PATH           write the original model with the trained weights to PATH
  --threads T           intra-op threads per session (default 1; 0 = ORT's default)
  --json                print one JSON object (results or error) on stdout
exit codes: 0 ok, 2 bad input, 4 runtime/internal error`;

const OPTIONS = {
  steps: { type: 'string' }, microbatches: { type: 'string' }, data: { type: 'string' },
  seed: { type: 'string' }, 'int-range': { type: 'string' }, save: { type: 'string' },
  threads: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
};

function number(v, flag, { min = -Infinity } = {}) {
  const n = Number(v);
  if (v === '' || !Number.isInteger(n) || n < min) throw badInput(`${flag}: bad value '${v}'`);
  return n;
}

function parseCli(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  } catch (e) {
    throw badInput(`${e.message} (see --help)`);
  }
  const v = parsed.values;
  if (v.help) return { help: true };
  if (parsed.positionals.length !== 1) throw badInput('expected exactly one OUT_DIR (see --help)');
  if (v.data !== undefined && v.seed !== undefined) throw badInput('--data and --seed are exclusive');
  let intRange = [0, 10];
  if (v['int-range'] !== undefined) {
    const parts = v['int-range'].split(',');
    if (parts.length !== 2) throw badInput(`--int-range: expected LO,HI, got '${v['int-range']}'`);
    intRange = parts.map((p) => number(p, '--int-range'));
    if (intRange[1] <= intRange[0]) throw badInput('--int-range: HI must be greater than LO');
  }
  return {
    outDir: parsed.positionals[0],
    steps: v.steps === undefined ? 1 : number(v.steps, '--steps', { min: 1 }),
    microbatches: v.microbatches === undefined ? 1 : number(v.microbatches, '--microbatches', { min: 1 }),
    dataDir: v.data ?? null,
    seed: v.seed === undefined ? 0 : number(v.seed, '--seed', { min: 0 }),
    intRange,
    save: v.save ?? null,
    threads: v.threads === undefined ? 1 : number(v.threads, '--threads', { min: 0 }),
    json: !!v.json,
  };
}

/** sum += t's values (a float32, float64 or float16 tensor). */
function addInto(sum, t) {
  const d = t.data;
  if (t.type === 'float16') {
    for (let i = 0; i < sum.length; i++) sum[i] += halfToFloat(d[i]);
  } else {
    for (let i = 0; i < sum.length; i++) sum[i] += d[i];
  }
}

/** sum / M as a tensor of weight w's type and shape (rounded once to the type). */
function meanOf(sum, M, w) {
  for (let i = 0; i < sum.length; i++) sum[i] /= M;
  const dt = dtypeFromName(w.type);
  const data = dt.kind === 'half' ? Uint16Array.from(sum, floatToHalf) : dt.Array.from(sum);
  return { type: w.type, dims: w.shape, data };
}

const zeros = (type, dims) => ({ type, dims, data: new (dtypeFromName(type).Array)(numel(dims)) });

/** Where micro-batch m of step s keeps input `name`. */
const dataPath = (dir, s, m, name) => join(dir, `step_${s}`, `mb_${m}`, `${name}.pb`);

/** Every data file of the run exists (checked before the first step, so a missing one costs no training). */
function checkDataFiles(o, plan) {
  if (!existsSync(o.dataDir)) throw badInput(`--data: ${o.dataDir}: no such directory`);
  for (let s = 0; s < o.steps; s++) {
    for (let m = 0; m < o.microbatches; m++) {
      for (const spec of plan.dataInputs) {
        const p = dataPath(o.dataDir, s, m, spec.name);
        if (!existsSync(p)) throw badInput(`--data: ${p} is missing (input '${spec.name}' of step ${s}, micro-batch ${m})`);
      }
    }
  }
}

/** The data inputs of micro-batch m of step s: read from --data (checked against the plan), else seeded random. */
function microbatchData(o, plan, s, m) {
  const out = {};
  if (o.dataDir) {
    for (const spec of plan.dataInputs) {
      const path = dataPath(o.dataDir, s, m, spec.name);
      let t;
      try {
        t = readTensorFile(path);
      } catch (e) {
        throw badInput(e.message);
      }
      if (t.type !== spec.type) throw badInput(`${path}: input '${spec.name}' is ${t.type}, the step wants ${spec.type}`);
      if (t.dims.length !== spec.shape.length || t.dims.some((d, i) => d !== spec.shape[i])) {
        throw badInput(`${path}: input '${spec.name}' has shape [${t.dims}], the step wants [${spec.shape}]`);
      }
      out[spec.name] = { type: t.type, dims: t.dims, data: t.data };
    }
    return out;
  }
  const rng = mulberry32(o.seed + s * o.microbatches + m);
  for (const spec of plan.dataInputs) {
    const labels = spec.name === plan.loss.input && plan.loss.classes !== null;
    const t = randomTensor(rng, { ...spec, isTensor: true }, { intRange: labels ? [0, plan.loss.classes] : o.intRange });
    out[spec.name] = { type: t.type, dims: t.dims, data: t.data };
  }
  return out;
}

/** The source model's bytes, checked against the plan's sha256 (read before training when --save is given). */
function readSource(plan) {
  const { path, given, sha256: want } = plan.source;
  if (!given) throw badInput(`--save: ${plan.dir}/plan.json names no source model`);
  if (!path) throw badInput(`--save: the source model ${given} (plan.json source.path) is not found from here or from ${plan.dir}/..`);
  const bytes = readFileSync(path);
  if (want && sha256(bytes) !== want) throw badInput(`--save: ${path} changed since the plan was written (sha256 differs)`);
  return { path, bytes };
}

/** Writes `bytes` to `path` through a temporary file, so that a failure leaves no half-written model. */
function writeAtomically(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw badInput(`--save: cannot write ${path} (${e.code ?? e.message})`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const round = (v, d = 3) => Math.round(v * 10 ** d) / 10 ** d;

async function main(argv, log) {
  const o = parseCli(argv);
  if (o.help) return { code: EXIT.OK, text: [USAGE] };
  const plan = loadTrainingPlan(o.outDir);
  if (o.dataDir) checkDataFiles(o, plan);
  const source = o.save ? readSource(plan) : null;
  const M = o.microbatches;
  const sessionOpts = { threads: o.threads };
  const sessions = {};
  for (const k of ['init', 'gradient', 'update']) sessions[k] = await createSession(plan.models[k], sessionOpts);
  const report = {
    ok: true, out: plan.dir, steps: o.steps, microbatches: M, threads: o.threads,
    data: o.dataDir ? { source: resolve(o.dataDir) } : { source: 'random', seed: o.seed, int_range: o.intRange },
    optimizer: plan.optimizer,
    weights: { count: plan.weights.length, bytes: plan.weights.reduce((a, w) => a + (w.bytes ?? 0), 0) },
    loss: [], step_ms: [],
  };
  const text = [];
  try {
    // Weights from the init model; optimizer state as zeros.
    const initial = await runSession(sessions.init, {}, plan.weights.map((w) => w.initial), 'init model');
    const weights = {};
    const state = {};
    for (const w of plan.weights) {
      const t = initial[w.initial];
      if (!t) throw internal(`init model: no output '${w.initial}'`);
      if (t.type !== w.type || t.dims.length !== w.shape.length || t.dims.some((d, i) => d !== w.shape[i])) {
        throw internal(`init model: '${w.initial}' is ${t.type} [${t.dims}], plan.json says ${w.type} [${w.shape}]`);
      }
      weights[w.name] = t;
      for (const s of w.update.state) state[s.name] = zeros(w.type, w.shape);
    }
    const fetches = [plan.loss.output, ...plan.weights.map((w) => w.gradient)];
    log(`training ${plan.weights.length} weights (${report.weights.bytes} bytes) with ${plan.optimizer?.name ?? 'the update model'}: ` +
      `${o.steps} step${o.steps === 1 ? '' : 's'} of ${M} micro-batch${M === 1 ? '' : 'es'}, ${o.threads || "ORT's default"} thread${o.threads === 1 ? '' : 's'}`, text);
    for (let s = 0; s < o.steps; s++) {
      const data = Array.from({ length: M }, (_, m) => microbatchData(o, plan, s, m));
      const start = performance.now();
      // One micro-batch: its gradients are the mean as they are. More: summed in float64.
      const sums = M === 1 ? null : plan.weights.map((w) => new Float64Array(numel(w.shape)));
      let last = null;
      let lossSum = 0;
      for (let m = 0; m < M; m++) {
        last = await runSession(sessions.gradient, { ...data[m], ...weights }, fetches, `gradient model (step ${s + 1}, micro-batch ${m})`);
        lossSum += Number(last[plan.loss.output].data[0]);
        if (sums) plan.weights.forEach((w, k) => addInto(sums[k], last[w.gradient]));
      }
      const feeds = {};
      plan.weights.forEach((w, k) => {
        feeds[w.update.weight] = weights[w.name];
        feeds[w.update.gradient] = sums ? meanOf(sums[k], M, w) : last[w.gradient];
        for (const st of w.update.state) feeds[st.name] = state[st.name];
      });
      if (plan.stepInput) feeds[plan.stepInput] = { type: 'float32', dims: [], data: Float32Array.of(s + 1) };
      const updated = await runSession(sessions.update, feeds, undefined, `update model (step ${s + 1})`);
      for (const w of plan.weights) {
        weights[w.name] = updated[w.update.output];
        for (const st of w.update.state) state[st.name] = updated[st.output];
      }
      const ms = performance.now() - start;
      const loss = lossSum / M;
      report.loss.push(loss);
      report.step_ms.push(round(ms));
      log(`step ${s + 1}  loss ${loss.toPrecision(7)}  ${ms.toFixed(2)} ms`, text);
    }
    report.step_ms_median = round(median(report.step_ms));
    if (source) {
      const trained = new Map(plan.weights.map((w) => [w.name, weights[w.name]]));
      let bytes;
      try {
        bytes = replaceInitializers(source.bytes, trained, dirname(source.path));
      } catch (e) {
        throw badInput(`--save: ${source.path}: ${e.message}`);
      }
      writeAtomically(resolve(o.save), bytes);
      report.saved = resolve(o.save);
      log(`saved ${o.save} (${source.path} with the trained weights)`, text);
    } else {
      report.saved = null;
    }
  } finally {
    for (const s of Object.values(sessions)) await s.release().catch(() => {});
  }
  report.exit_code = EXIT.OK;
  return { code: EXIT.OK, text, report, json: o.json };
}

const argv = process.argv.slice(2);
const wantJson = argv.includes('--json');
// Text mode prints each step as it ends; --json prints one object at the end.
const log = (line, text) => (wantJson ? text.push(line) : process.stdout.write(line + '\n'));
main(argv, log).then(
  ({ code, text, report, json }) => {
    if (json) process.stdout.write(JSON.stringify(report, null, 1) + '\n');
    else if (!report) process.stdout.write(text.join('\n') + '\n');
    process.exit(code);
  },
  (e) => {
    const err = e instanceof RunnerError ? e : internal(`internal error: ${e?.stack?.split('\n').slice(0, 2).join(' ') ?? e}`);
    const msg = err.message.replace(/\s*\n\s*/g, ' ');
    process.stderr.write(`train: error: ${msg}\n`);
    if (wantJson) process.stdout.write(JSON.stringify({ ok: false, exit_code: err.code, error: msg }) + '\n');
    process.exit(err.code);
  },
);
