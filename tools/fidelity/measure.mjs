#!/usr/bin/env node
// measure: runs one model in ONNX Runtime with its profiler on and returns the
// measured time of every node — the "reality" side of the fidelity check.
// See README.md.
//
//   node tools/fidelity/measure.mjs MODEL.onnx [--runs 20] [--warmup 3]
//        [--threads 1] [--seed 0] [--int-range 0,10] [--dim NAME=V]... [-o OUT.json]
//
// Session: graphOptimizationLevel 'disabled' (no fusion, no constant folding:
// the nodes ORT runs are the model's nodes, under their own names),
// intraOpNumThreads fixed (default 1: single-core times are the least noisy on
// a shared machine, and the cost model's cpu:N preset is per core),
// inter-op sequential (ORT's default), profiling on. Inputs are seeded random
// tensors (tools/runner/inputs.mjs: floats in [-1, 1), ints in --int-range).
// The first --warmup runs are discarded; each node's time is the mean (and
// median) over the --runs measured runs of its `<node name>_kernel_time`
// profile events (`dur`, µs; a node that runs several times within one run —
// inside a Loop body — is summed per run).
//
// A second session runs the model as ONNX Runtime (and tools/runner) really
// runs it, with every graph optimisation on, and profiles it the same way;
// its nodes are fused ones under new names, so optimised_times.mjs spreads
// their times back over the model's nodes. The file's "node_us" — what
// `onnx-autopar --node-times` reads — are these optimised times (with
// --unoptimised, the times of the unoptimised session instead).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { EXIT, RunnerError, badInput, internal } from '../runner/errors.mjs';
import { loadOrt, sessionOptions, sessionMeta, runSession, oneLine } from '../runner/ort_session.mjs';
import { randomInputs } from '../runner/inputs.mjs';
import { readModelNodes } from './onnx_nodes.mjs';
import { attributeOptimisedTimes } from './optimised_times.mjs';

export const DEFAULTS = { runs: 20, warmup: 3, threads: 1, seed: 0, intRange: [0, 10] };

const KERNEL_SUFFIX = '_kernel_time';

/**
 * Per-node times from an ORT profile (the parsed JSON array of trace events).
 * Runs are the `model_run` Session events in time order; the first `warmup`
 * are skipped. Returns { runs, nodes: {name: {op, provider, mean_us,
 * median_us, min_us, samples}}, order: [names in first-seen order],
 * kernel_sum_us (sum of means), run_durations_us }.
 */
export function parseProfile(events, { warmup = 0 } = {}) {
  if (!Array.isArray(events)) throw internal('ORT profile is not a JSON array of events');
  const runs = events
    .filter((e) => e.cat === 'Session' && e.name === 'model_run')
    .map((e) => ({ start: e.ts, end: e.ts + e.dur, dur: e.dur }))
    .sort((a, b) => a.start - b.start);
  const kernels = events.filter((e) => e.cat === 'Node' && typeof e.name === 'string' && e.name.endsWith(KERNEL_SUFFIX));
  // Run index of an event: the model_run window holding its start. Without
  // model_run events (an older ORT), every occurrence of a node is one run.
  const runOf = (e) => {
    let lo = 0;
    let hi = runs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (e.ts < runs[mid].start) hi = mid - 1;
      else if (e.ts > runs[mid].end) lo = mid + 1;
      else return mid;
    }
    return -1;
  };
  const perNode = new Map(); // name -> {op, provider, perRun: Map(run -> µs)}
  const seen = new Map();
  for (const e of kernels) {
    // ORT profiles an unnamed node as "<op>_<node index>" (an older ORT as
    // ""; keyed "#<node index>" here); fidelity.mjs joins those by op.
    const name = e.name.slice(0, -KERNEL_SUFFIX.length) || `#${e.args?.node_index ?? '?'}`;
    let run;
    if (runs.length > 0) {
      run = runOf(e);
      if (run < 0) continue; // session setup events, if any
    } else {
      run = seen.get(name) ?? 0;
      seen.set(name, run + 1);
    }
    if (run < warmup) continue;
    let n = perNode.get(name);
    if (!n) {
      n = { op: e.args?.op_name ?? '', provider: e.args?.provider ?? '', index: Number(e.args?.node_index ?? -1), perRun: new Map() };
      perNode.set(name, n);
    }
    n.perRun.set(run, (n.perRun.get(run) ?? 0) + Number(e.dur));
  }
  const measuredRuns = runs.length > 0 ? runs.length - warmup : Math.max(0, ...[...seen.values()].map((v) => v - warmup));
  const nodes = {};
  let kernelSum = 0;
  for (const [name, n] of perNode) {
    const samples = [...n.perRun.values()];
    // A run where the node did not execute (an untaken If branch) counts 0.
    while (samples.length < measuredRuns) samples.push(0);
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    const unnamed = name.startsWith('#') || name === `${n.op}_${n.index}`;
    nodes[name] = { op: n.op, provider: n.provider, node_index: n.index, unnamed, mean_us: mean, median_us: median(samples), min_us: Math.min(...samples), samples: samples.length };
    kernelSum += mean;
  }
  return {
    runs: measuredRuns,
    nodes,
    order: [...perNode.keys()],
    kernel_sum_us: kernelSum,
    run_durations_us: runs.slice(warmup).map((r) => r.dur),
  };
}

export function median(values) {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Session options of a measurement; `optimised`: ORT's full graph optimisation, as the runner's sessions. */
function measureSessionOptions(o, { profilePrefix = null, optimised = false } = {}) {
  return {
    ...sessionOptions({ profilePrefix, threads: o.threads, verbose: o.verbose }),
    graphOptimizationLevel: optimised ? 'all' : 'disabled',
    executionMode: 'sequential',
    interOpNumThreads: 1,
  };
}

async function createMeasureSession(ort, modelPath, so) {
  try {
    return await ort.InferenceSession.create(modelPath, so);
  } catch (e) {
    throw internal(`ONNX Runtime cannot load ${modelPath}: ${oneLine(e.message)}`);
  }
}

/** Runs a session warmup + runs times; {wall: [µs of the measured runs], cpuUs}. Releases it. */
async function timeRuns(session, tensors, o, label) {
  const wall = [];
  let cpuUs = 0;
  try {
    for (let i = 0; i < o.warmup + o.runs; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await runSession(session, tensors, undefined, label);
      if (i >= o.warmup) {
        wall.push((performance.now() - t0) * 1000);
        const c = process.cpuUsage(c0);
        cpuUs += c.user + c.system;
      }
    }
  } finally {
    if (session.endProfiling && o.profiling) session.endProfiling();
    await session.release();
  }
  return { wall, cpuUs };
}

const wallStats = (w) => ({ mean: w.reduce((a, b) => a + b, 0) / w.length, median: median(w), min: Math.min(...w) });

/** The one ORT profile written under `dir`, parsed. */
function readProfile(dir, prefix, keepAs) {
  const files = readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.json'));
  if (files.length !== 1) throw internal(`expected one ORT profile ${prefix}* in ${dir}, found ${files.length}`);
  let events;
  try {
    events = JSON.parse(readFileSync(join(dir, files[0]), 'utf8'));
  } catch (e) {
    throw internal(`cannot parse ORT profile ${files[0]}: ${oneLine(e.message)}`);
  }
  if (keepAs) writeFileSync(keepAs, JSON.stringify(events));
  return events;
}

/** The caller's tensors for every input of the model (measure_step.mjs feeds a step's real weights). */
function givenInputs(specs, inputs, label) {
  const tensors = {};
  for (const spec of specs) {
    if (!inputs[spec.name]) throw internal(`${label}: no value given for input '${spec.name}'`);
    tensors[spec.name] = inputs[spec.name];
  }
  return { tensors, notes: [] };
}

/**
 * Runs `modelPath` warmup + runs times in ORT with profiling and returns
 * { model, ort_version, threads, warmup, runs, seed, int_range, notes,
 *   cpu_share, wall_us: {mean, median, min} (session.run around the measured runs,
 *   profiler on), wall_unprofiled_us (the same from a second session without
 *   the profiler; null with unprofiled: false), model_run_us (ORT's own model_run events, mean),
 *   kernel_sum_us, nodes: {name: {op, mean_us, median_us, ...}}, order,
 *   optimised (null with optimised: false): { kernel_sum_us, model_run_us
 *   (ORT's model_run events: {mean, median, min}), wall_us,
 *   wall_unprofiled_us, nodes (ORT's optimised nodes, as `nodes`), node_us
 *   ({model node: µs}, optimised_times.mjs), anchored, unanchored_us } }.
 * `nodes` are always the unoptimised session's: the model's own nodes.
 * `opts.inputs` ({name: runner tensor}) replaces the random inputs.
 */
export async function measureModel(modelPath, opts = {}) {
  const o = { ...DEFAULTS, ...opts };
  if (!existsSync(modelPath)) throw badInput(`${modelPath}: no such file`);
  const ort = await loadOrt({ verbose: o.verbose });
  const dir = mkdtempSync(join(tmpdir(), 'autopar-measure-'));
  const label = basename(modelPath);
  try {
    const session = await createMeasureSession(ort, modelPath, measureSessionOptions(o, { profilePrefix: join(dir, 'plain') }));
    const meta = sessionMeta(session);
    const { tensors, notes } = o.inputs ? givenInputs(meta.inputs, o.inputs, label) : randomInputs(meta.inputs, o.seed, { intRange: o.intRange, dimValues: o.dimValues ?? {} });
    const { wall, cpuUs } = await timeRuns(session, tensors, { ...o, profiling: true }, label);
    // The same runs without the profiler: what the model costs when nobody
    // watches (the profiler's per-node bookkeeping is small but not zero).
    let wallUnprofiled = null;
    if (o.unprofiled !== false) {
      const plain = await createMeasureSession(ort, modelPath, measureSessionOptions(o));
      wallUnprofiled = wallStats((await timeRuns(plain, tensors, o, label)).wall);
    }
    const p = parseProfile(readProfile(dir, 'plain', o.keepProfile), { warmup: o.warmup });
    let optimised = null;
    if (o.optimised !== false) {
      const os = await createMeasureSession(ort, modelPath, measureSessionOptions(o, { profilePrefix: join(dir, 'optimised'), optimised: true }));
      const ow = wallStats((await timeRuns(os, tensors, { ...o, profiling: true }, label)).wall);
      const q = parseProfile(readProfile(dir, 'optimised', null), { warmup: o.warmup });
      const unprofiled = wallStats((await timeRuns(await createMeasureSession(ort, modelPath, measureSessionOptions(o, { optimised: true })), tensors, o, label)).wall);
      const a = attributeOptimisedTimes(
        readModelNodes(modelPath),
        Object.fromEntries(p.order.map((n) => [n, p.nodes[n].mean_us])),
        Object.fromEntries(q.order.map((n) => [n, q.nodes[n].mean_us])),
      );
      const runs = q.run_durations_us;
      optimised = { kernel_sum_us: q.kernel_sum_us, model_run_us: runs.length ? wallStats(runs) : null, wall_us: ow, wall_unprofiled_us: unprofiled, order: q.order, nodes: q.nodes, node_us: a.node_us, anchored: a.anchored, unanchored_us: a.unanchored_us };
    }
    return {
      model: resolve(modelPath),
      ort_version: ort.env.versions?.common ?? ort.env.versions?.node ?? null,
      threads: o.threads,
      warmup: o.warmup,
      runs: o.runs,
      seed: o.seed,
      int_range: o.intRange,
      notes,
      // CPU time this process got per second of wall time, per ORT thread, over
      // the measured runs: ~1 on an idle machine; well below 1 means other
      // processes took the cores and every time above is inflated.
      cpu_share: cpuUs / wall.reduce((a, b) => a + b, 0) / o.threads,
      wall_us: wallStats(wall),
      wall_unprofiled_us: wallUnprofiled,
      model_run_us: p.run_durations_us.length ? p.run_durations_us.reduce((a, b) => a + b, 0) / p.run_durations_us.length : null,
      kernel_sum_us: p.kernel_sum_us,
      order: p.order,
      nodes: p.nodes,
      optimised,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The "node_us" of a measurement: each node the unoptimised profile names (the
 * model's nodes that run; Constants become initialisers at load) with the
 * optimised run's time spread back over it, or its unoptimised time.
 */
export function nodeUs(m) {
  return Object.fromEntries(m.order.map((n) => [n, m.optimised ? m.optimised.node_us[n] ?? 0 : m.nodes[n].mean_us]));
}

// --- shared CLI helpers (used by fidelity.mjs and calibrate.mjs too) -----------

export const MEASURE_OPTIONS = {
  runs: { type: 'string' }, warmup: { type: 'string' }, threads: { type: 'string' },
  seed: { type: 'string' }, 'int-range': { type: 'string' }, dim: { type: 'string', multiple: true },
  verbose: { type: 'boolean' },
};

export function number(v, flag, { int = false, min = -Infinity } = {}) {
  const n = Number(v);
  if (v === '' || !Number.isFinite(n) || (int && !Number.isInteger(n)) || n < min) throw badInput(`${flag}: bad value '${v}'`);
  return n;
}

/** Measurement options from parsed parseArgs values. */
export function measureOptionsFrom(v) {
  const o = { ...DEFAULTS, verbose: !!v.verbose, dimValues: {} };
  if (v.runs !== undefined) o.runs = number(v.runs, '--runs', { int: true, min: 1 });
  if (v.warmup !== undefined) o.warmup = number(v.warmup, '--warmup', { int: true, min: 0 });
  if (v.threads !== undefined) o.threads = number(v.threads, '--threads', { int: true, min: 1 });
  if (v.seed !== undefined) o.seed = number(v.seed, '--seed', { int: true, min: 0 });
  if (v['int-range'] !== undefined) {
    const parts = v['int-range'].split(',');
    if (parts.length !== 2) throw badInput(`--int-range: expected LO,HI, got '${v['int-range']}'`);
    o.intRange = parts.map((p) => number(p, '--int-range', { int: true }));
    if (o.intRange[1] <= o.intRange[0]) throw badInput('--int-range: HI must be greater than LO');
  }
  for (const d of v.dim ?? []) {
    const m = /^(.+)=(\d+)$/.exec(d);
    if (!m) throw badInput(`--dim: expected NAME=VALUE, got '${d}'`);
    o.dimValues[m[1]] = Number(m[2]);
  }
  return o;
}

export function parseCli(argv, options) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  } catch (e) {
    throw badInput(`${e.message} (see --help)`);
  }
}

/** Runs main(argv) → {code, text?, json?}; errors become one stderr line and their exit code. */
export function runMain(tool, main, argv) {
  const wantJson = argv.includes('--json');
  main(argv).then(
    ({ code = EXIT.OK, text, json }) => {
      if (json !== undefined) process.stdout.write(JSON.stringify(json, null, 1) + '\n');
      else if (text) process.stdout.write(text + '\n');
      process.exitCode = code;
    },
    (e) => {
      const err = e instanceof RunnerError ? e : internal(`internal error: ${e?.stack?.split('\n').slice(0, 2).join(' ') ?? e}`);
      const msg = err.message.replace(/\s*\n\s*/g, ' ');
      process.stderr.write(`${tool}: error: ${msg}\n`);
      if (wantJson) process.stdout.write(JSON.stringify({ ok: false, exit_code: err.code, error: msg }) + '\n');
      process.exitCode = err.code;
    },
  );
}

const USAGE = `usage: node tools/fidelity/measure.mjs MODEL.onnx [options]
  --runs N          measured runs (default ${DEFAULTS.runs})
  --warmup N        runs discarded first (default ${DEFAULTS.warmup})
  --threads N       ORT intra-op threads (default ${DEFAULTS.threads})
  --seed N          seed of the random inputs (default 0)
  --int-range LO,HI integer inputs uniform in [LO, HI) (default 0,10)
  --dim NAME=V      value of a symbolic input dim (repeatable; default 1)
  -o, --output F    write the JSON there (default: stdout)
  --keep-profile F  also save ORT's raw profile JSON (unoptimised session) as F
  --unoptimised     "node_us" from the unoptimised session only (default: the
                    optimised run's times spread over the model's nodes)
  --verbose         ORT warnings
prints {node name: µs} (mean of measured runs) under "node_us", plus wall time`;

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, { ...MEASURE_OPTIONS, output: { type: 'string', short: 'o' }, 'keep-profile': { type: 'string' }, unoptimised: { type: 'boolean' } });
  if (v.help) return { text: USAGE };
  if (positionals.length !== 1) throw badInput('expected one MODEL.onnx (see --help)');
  const o = measureOptionsFrom(v);
  o.keepProfile = v['keep-profile'];
  o.optimised = !v.unoptimised;
  const m = await measureModel(positionals[0], o);
  const out = {
    model: m.model, ort_version: m.ort_version, threads: m.threads, warmup: m.warmup, runs: m.runs, seed: m.seed,
    cpu_share: m.cpu_share, wall_us: m.wall_us, wall_unprofiled_us: m.wall_unprofiled_us, model_run_us: m.model_run_us, kernel_sum_us: m.kernel_sum_us,
    node_us: nodeUs(m),
    node_times_from: m.optimised ? 'optimised' : 'unoptimised',
    node_us_unoptimised: m.optimised ? Object.fromEntries(m.order.map((n) => [n, m.nodes[n].mean_us])) : undefined,
    nodes: m.nodes,
    optimised: m.optimised ? { kernel_sum_us: m.optimised.kernel_sum_us, wall_us: m.optimised.wall_us, wall_unprofiled_us: m.optimised.wall_unprofiled_us, anchored: m.optimised.anchored, unanchored_us: m.optimised.unanchored_us, nodes: m.optimised.nodes } : null,
  };
  if (v.output) {
    writeFileSync(v.output, JSON.stringify(out, null, 1) + '\n');
    const opt = m.optimised ? `; optimised: kernel sum ${(m.optimised.kernel_sum_us / 1000).toFixed(3)} ms, wall ${(m.optimised.wall_unprofiled_us.mean / 1000).toFixed(3)} ms` : '';
    const text = `${m.order.length} nodes, kernel sum ${(m.kernel_sum_us / 1000).toFixed(3)} ms, wall ${(m.wall_us.mean / 1000).toFixed(3)} ms (mean of ${m.runs})${opt}; written to ${v.output}`;
    return { text };
  }
  return { json: out };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('measure', main, process.argv.slice(2));
}
