#!/usr/bin/env node
// calibrate_host: measures what running a pipelined plan costs on this host
// beyond the nodes themselves, for `onnx-autopar --cluster cpu:KxT
// --host-calibration FILE`. See README.md ("Host calibration").
//
//   node tools/fidelity/calibrate_host.mjs [MODEL.onnx...] -o host_calibration.json
//        [--cli PATH] [--algos tga,m-etf] [--repeat 7] [--microbatches 8] [--quick]
//
// 1. transfer: a tensor handed from one worker thread to another as the
//    runner's workers do it (handover_worker.mjs), at sizes from 256 B to
//    16 MiB; latency_us = the median one-way time of the smallest size,
//    bytes_per_s = 1 / the least-squares slope of the medians over size (left
//    out when time does not grow with size: the CLI keeps its default). The
//    runner moves a buffer whose only reader is the other device (recorded as
//    "transfer") and copies it otherwise ("transfer_copy").
// 2. stage_run_us, hop_us, hop_busy_us: through the runner itself, chains of
//    tiny stages (one Add of 64 floats each, chain_models.mjs):
//    stage_run_us is one task of a chain on one device, M micro-batches (tensor
//    binding, session.run, output conversion, the scheduler's bookkeeping);
//    the same chain alternating between two devices, 1 and M micro-batches,
//    gives what a hand-over costs (measureRunnerHops, fitHops): hop_us of
//    waiting and hop_busy_us of the receiving device's time (the message, the
//    worker woken, its scheduling) — together about 100 µs here, where a bare
//    hand-over between worker threads (1.) takes 30.
// 3. thread_speedup: each unsplit model's step (M micro-batches, one after
//    another) with 1 and with 2 intra-op threads; "2" = the median over models
//    of t(1) / t(2).
// 4. cut_us, cut_bytes_per_s: each model split by `onnx-autopar --stages`
//    for 2 one-core devices and M micro-batches (--algos, default
//    pipeline-dp and round-robin: a few cuts and very many), its stages run
//    collapsed onto one device and compared with the unsplit model, per
//    micro-batch:
//      collapsed − unsplit = (stages − 1) · stage_run_us
//                            + cut_edges · cut_us + cut_bytes / cut_bytes_per_s
//    where a cut edge is one (tensor, reading stage) pair whose producer is
//    another stage and cut_bytes the sum of their tensors' sizes. The two
//    are fitted over all splits by least squares on the relative error
//    (fitCutCosts): a cut costs mostly by its size (the tensor is copied out
//    of one session and into the next and, in a CNN, re-laid out to and
//    from ONNX Runtime's blocked layout), which one constant per edge cannot
//    describe for a CNN and a transformer at once.
// Every step time is the fastest of the timed steps (see fastestStep), but
// for the chains of 2. (see measureRunnerHops).
// Load: the 1-minute load average before the run, and cpu_share (the time our
// threads ran / ran + waited for a core, host_load.mjs) over the whole run;
// a warning when the host was busy, since every number is then inflated.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { badInput, internal } from '../runner/errors.mjs';
import { loadPlan, singleModelPlan } from '../runner/plan.mjs';
import { openDeployment } from '../runner/executor.mjs';
import { createSession } from '../runner/ort_session.mjs';
import { randomInputs } from '../runner/inputs.mjs';
import { dtypeFromName, numel } from '../runner/dtypes.mjs';
import { cpuShare, hostLoad, schedTotals } from '../runner/host_load.mjs';
import { median, number, parseCli, runMain } from './measure.mjs';
import { chainPlan } from './chain_models.mjs';
import { REPO_ROOT, resolveCli } from './lib.mjs';

const DEFAULT_MODELS = ['squeezenet1_1', 'resnet18', 'transformer_encoder', 'lstm'].map((m) => join(REPO_ROOT, 'build/models', `${m}.onnx`));
const SIZES = [256, 4096, 65536, 1 << 20, 4 << 20, 16 << 20];

/** One-way hand-over times between two worker threads: [{bytes, median_us}] per size. */
export async function measureHandover({ sizes = SIZES, reps = 40, mode = 'move' } = {}) {
  const { port1, port2 } = new MessageChannel();
  const url = new URL('./handover_worker.mjs', import.meta.url);
  const sender = new Worker(url, { workerData: { port: port1 }, transferList: [port1] });
  const receiver = new Worker(url, { workerData: { port: port2 }, transferList: [port2] });
  const reply = (w) => new Promise((res, rej) => {
    w.once('message', res);
    w.once('error', rej);
  });
  try {
    const points = [];
    for (const bytes of sizes) {
      const n = bytes >= 4 << 20 ? Math.max(5, reps >> 2) : reps;
      const got = reply(receiver);
      receiver.postMessage({ op: 'expect', reps: n });
      const sent = reply(sender);
      sender.postMessage({ op: 'send', bytes, reps: n, mode });
      const [{ one_way_us }] = await Promise.all([got, sent]);
      // The first hand-overs of a size pay for page faults on fresh memory.
      points.push({ bytes, median_us: round(median(one_way_us.slice(1)), 2) });
    }
    return points;
  } finally {
    await Promise.all([sender.terminate(), receiver.terminate()]);
  }
}

/** latency_us (smallest size) and bytes_per_s (least-squares slope; null when time does not grow with size). */
export function fitTransfer(points) {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.bytes, 0) / n;
  const my = points.reduce((a, p) => a + p.median_us, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.bytes - mx) * (p.median_us - my);
    sxx += (p.bytes - mx) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : 0; // µs per byte
  const latency = points.reduce((a, p) => (p.bytes < a.bytes ? p : a)).median_us;
  return { latency_us: latency, bytes_per_s: slope > 0 ? round(1e6 / slope, -3) : null, points };
}

/**
 * The fastest of `repeat` timed steps (µs) of a plan run as the runner runs
 * it, M micro-batches per step. The minimum, not the median: on a shared host
 * it is the step least disturbed by other processes, and the figures here are
 * the host's own costs, not its load.
 */
async function fastestStep(plan, { threads = 1, microbatches, warmup, repeat, concurrent = true, onOpen = null }) {
  const dep = await openDeployment(plan, { concurrent, threads, microbatches });
  try {
    if (onOpen) onOpen(dep);
    const specs = plan.inputs.map(({ name }) => {
      const s = plan.stages.find((st) => st.inputs.includes(name));
      return dep.meta.get(s.id).inputs.find((i) => i.name === name);
    });
    await dep.setInputs(Array.from({ length: microbatches }, (_, m) => randomInputs(specs, m).tensors));
    const r = await dep.run({ warmup, repeat });
    return Math.min(...r.steps);
  } finally {
    await dep.close();
  }
}

async function modelPlan(path) {
  const s = await createSession(path, {});
  const plan = singleModelPlan(path, s.inputNames, s.outputNames);
  await s.release();
  return plan;
}

/** Cut edges of a plan: (tensor, reading stage) pairs whose producer is another stage. */
export function cutEdges(plan) {
  let n = 0;
  for (const s of plan.stages) for (const t of s.inputs) if (plan.producer.has(t) && plan.producer.get(t) !== s.id) n++;
  return n;
}

/**
 * Bytes of the cut edges of a plan (as cutEdges counts them), from the stage
 * sessions' input metadata `meta` (stage id -> {inputs: [{name, type, shape}]});
 * an input of unknown size counts 0.
 */
export function cutBytes(plan, meta) {
  let bytes = 0;
  for (const s of plan.stages) {
    for (const t of s.inputs) {
      if (!plan.producer.has(t) || plan.producer.get(t) === s.id) continue;
      const input = meta.get(s.id)?.inputs.find((i) => i.name === t);
      const dims = input?.shape;
      if (!dims || !dims.every((d) => Number.isInteger(d) && d >= 0)) continue;
      let per = 0;
      try {
        per = dtypeFromName(input.type).bytes;
      } catch {
        per = 0;
      }
      bytes += numel(dims) * per;
    }
  }
  return bytes;
}

/**
 * cut_us and cut_bytes_per_s from splits [{edges, bytes, extra_us}] (extra_us:
 * collapsed − unsplit − the stage runs, per micro-batch): least squares of
 * extra_us ≈ edges · a + bytes · b weighted by 1 / max(extra_us, 50 µs), so
 * that a small split's error counts like a large one's. Neither term is
 * negative: if one comes out below 0 the other is fitted alone. Returns
 * {cut_us, cut_bytes_per_s (null: no size term)}, or null without splits.
 */
export function fitCutCosts(splits) {
  const points = splits.filter((s) => s.edges > 0);
  if (points.length === 0) return null;
  const w = points.map((s) => 1 / Math.max(s.extra_us, 50));
  const sum = (f) => points.reduce((acc, s, i) => acc + w[i] * w[i] * f(s), 0);
  const one = (f) => Math.max(0, sum((s) => f(s) * s.extra_us) / sum((s) => f(s) * f(s)));
  const edgesOnly = () => ({ cut_us: one((s) => s.edges), cut_bytes_per_s: null });
  if (points.every((s) => s.bytes === 0)) return edgesOnly();
  const aa = sum((s) => s.edges * s.edges);
  const ab = sum((s) => s.edges * s.bytes);
  const bb = sum((s) => s.bytes * s.bytes);
  const ay = sum((s) => s.edges * s.extra_us);
  const by = sum((s) => s.bytes * s.extra_us);
  const det = aa * bb - ab * ab;
  let a = det > 0 ? (ay * bb - by * ab) / det : -1;
  let b = det > 0 ? (aa * by - ab * ay) / det : -1;
  if (b <= 0) return edgesOnly();
  if (a < 0) {
    a = 0;
    b = one((s) => s.bytes);
  }
  return { cut_us: a, cut_bytes_per_s: 1e6 / b };
}

/** Splits `model` with the CLI into `dir` (2 devices of one core, stage models). */
function split(cli, model, algo, microbatches, dir) {
  const args = [model, '-o', dir, '--devices', '2', '--device', 'cpu:1', '--microbatches', String(microbatches), '--stages', '--algo', algo, '--quiet', '--no-report'];
  // The splits are what is measured, even where one device is predicted faster.
  args.push('--allow-slower-split');
  if (algo === 'tga') args.push('--max-generations', '50');
  const r = spawnSync(cli, args, { encoding: 'utf8' });
  if (r.status !== 0) throw badInput(`onnx-autopar ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr || r.stdout).trim().split('\n').pop()}`);
}

export async function calibrateHost({ models, cli, algos, repeat, microbatches, quick, log = () => {} }) {
  const before = { load: hostLoad(), sched: schedTotals() };
  const warmup = 2;
  const result = { version: 1, measured_at: new Date().toISOString(), load_avg_1m: round(before.load.load_avg_1m, 2), cores: before.load.cores };

  log('transfer between worker threads ...');
  const sizes = quick ? [256, 65536, 1 << 20] : SIZES;
  const reps = quick ? 10 : 40;
  result.transfer = { ...fitTransfer(await measureHandover({ sizes, reps, mode: 'move' })), mode: 'move' };
  result.transfer_copy = { ...fitTransfer(await measureHandover({ sizes, reps, mode: 'copy' })), mode: 'copy' };

  const perModel = [];
  const cuts = [];
  const tmp = mkdtempSync(join(tmpdir(), 'calibrate-host-'));
  try {
    log('stage runs and hand-overs through the runner (chains of tiny stages) ...');
    const runner = await measureRunnerHops({ dir: join(tmp, 'chains'), stages: quick ? 8 : 24, microbatches, repeat: quick ? 3 : repeat * 2 });
    result.stage_run_us = runner.stage_run_us;
    result.hop_us = runner.hop_us;
    result.hop_busy_us = runner.hop_busy_us;
    result.runner = runner;

    for (const model of models) {
      const name = basename(model, '.onnx');
      log(`${name}: unsplit, 1 and 2 threads ...`);
      const plan = await modelPlan(model);
      const t1 = await fastestStep(plan, { threads: 1, microbatches, warmup, repeat });
      const t2 = await fastestStep(plan, { threads: 2, microbatches, warmup, repeat });
      const entry = { model: name, unsplit_us_per_microbatch: round(t1 / microbatches, 1), thread_speedup_2: round(t1 / t2, 3), splits: [] };
      for (const algo of algos) {
        const dir = join(tmp, `${name}-${algo}`);
        split(cli, model, algo, microbatches, dir);
        const staged = loadPlan(dir);
        const stages = staged.stages.length;
        const edges = cutEdges(staged);
        if (stages < 2 || edges === 0) {
          entry.splits.push({ algo, stages, cut_edges: edges, note: 'not split' });
          continue;
        }
        log(`${name}: ${algo}'s ${stages} stages collapsed onto one device ...`);
        for (const s of staged.stages) s.device = 0;
        let bytes = 0;
        const tc = await fastestStep(staged, { threads: 1, microbatches, warmup, repeat, onOpen: (dep) => (bytes = cutBytes(staged, dep.meta)) });
        const extra = (tc - t1) / microbatches;
        const cut = (extra - (stages - 1) * result.stage_run_us) / edges;
        entry.splits.push({ algo, stages, cut_edges: edges, cut_bytes: bytes, collapsed_us_per_microbatch: round(tc / microbatches, 1), extra_us_per_microbatch: round(extra, 1), cut_us: round(cut, 2) });
        cuts.push({ edges, bytes, extra_us: extra - (stages - 1) * result.stage_run_us });
      }
      perModel.push(entry);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const fit = fitCutCosts(cuts);
  result.cut_us = fit ? round(fit.cut_us, 2) : null;
  result.cut_bytes_per_s = fit?.cut_bytes_per_s ? Math.round(fit.cut_bytes_per_s) : null;
  result.thread_speedup = { 1: 1, 2: perModel.length ? round(median(perModel.map((m) => m.thread_speedup_2)), 3) : null };
  result.microbatches = microbatches;
  result.repeat = repeat;
  result.models = perModel;
  result.cpu_share = round(cpuShare(before.sched, schedTotals()), 3);
  // A figure that could not be measured is left out, not null: the CLI then
  // keeps its built-in default for it.
  for (const t of [result.transfer, result.transfer_copy]) if (t.bytes_per_s === null) delete t.bytes_per_s;
  if (result.cut_us === null) delete result.cut_us;
  if (result.cut_bytes_per_s === null) delete result.cut_bytes_per_s;
  if (result.thread_speedup[2] === null) delete result.thread_speedup[2];
  return result;
}

/**
 * The step the simulator predicts (costmodel/simulator.h, whole stages) for a
 * chain of `stages` stages, stage k on device k % devices, `microbatches`
 * micro-batches: a device runs one stage at a time, the ready one with the
 * smallest (micro-batch, stage); a stage takes stageUs, plus hopBusyUs when
 * its input came from another device; its output reaches another device
 * hopUs after it ends. Step: first start to last end.
 */
export function chainStepUs({ stages, devices, microbatches, stageUs, hopUs, hopBusyUs }) {
  const M = microbatches;
  const ready = Array.from({ length: M }, () => new Array(stages).fill(Infinity)); // [m][k] input arrival
  for (let m = 0; m < M; m++) ready[m][0] = 0;
  const free = new Array(devices).fill(0);
  const left = new Array(devices).fill(0);
  for (let k = 0; k < stages; k++) left[k % devices] += M;
  const next = new Array(M).fill(0); // next stage of micro-batch m
  let end = 0;
  // Event by event: the device that can start something earliest goes next.
  for (let done = 0; done < stages * M; done++) {
    let best = null;
    for (let d = 0; d < devices; d++) {
      if (left[d] === 0) continue;
      // Among tasks of d already arrived when d is free, the smallest (m, k);
      // otherwise the earliest to arrive.
      let pick = null;
      for (let m = 0; m < M; m++) {
        const k = next[m];
        if (k >= stages || k % devices !== d) continue;
        const at = Math.max(free[d], ready[m][k]);
        if (!pick || at < pick.at - 1e-9 || (Math.abs(at - pick.at) < 1e-9 && m < pick.m)) pick = { d, m, k, at };
        if (ready[m][k] <= free[d]) break; // arrived already: smallest m wins
      }
      if (pick && (!best || pick.at < best.at)) best = pick;
    }
    const { d, m, k, at } = best;
    const hop = devices > 1 && k > 0;
    const finish = at + stageUs + (hop ? hopBusyUs : 0);
    free[d] = finish;
    left[d]--;
    next[m]++;
    if (k + 1 < stages) ready[m][k + 1] = finish + (devices > 1 ? hopUs : 0);
    end = Math.max(end, finish);
  }
  return end;
}

/**
 * hop_us and hop_busy_us from chains alternating between two devices: with
 * one micro-batch every hop costs their sum (the chain's measured step less
 * its stage runs, per hop); how the sum splits into waiting (hop_us) and the
 * receiving device's work (hop_busy_us) is what the pipelined chain
 * (`pipelined`, M micro-batches) tells: the split whose predicted step is
 * nearest its measured one. Inputs: {stages, step_us, stage_us} per chain.
 */
export function fitHops(single, pipelined) {
  const perHop = Math.max(0, (single.step_us - single.stages * single.stage_us) / (single.stages - 1));
  let best = { hop_us: perHop, hop_busy_us: 0, err: Infinity };
  const steps = 50;
  for (let i = 0; i <= steps; i++) {
    const busy = (perHop * i) / steps;
    const predicted = chainStepUs({ stages: pipelined.stages, devices: 2, microbatches: pipelined.microbatches, stageUs: pipelined.stage_us, hopUs: perHop - busy, hopBusyUs: busy });
    const err = Math.abs(predicted / pipelined.step_us - 1);
    if (err < best.err - 1e-12) best = { hop_us: perHop - busy, hop_busy_us: busy, err };
  }
  return best;
}

/**
 * The runner's own costs, from chains of `stages` one-Add stages (64 floats)
 * run through it: on one device (the stage run: per task, M micro-batches)
 * and alternating between two (the hand-overs, fitHops). Step times are the
 * median of the timed steps: the benchmark compares medians, and a hand-over
 * on a busy host is what it is in the median step, not the luckiest one.
 */
export async function measureRunnerHops({ dir, stages = 24, microbatches = 8, warmup = 3, repeat = 15 }) {
  const step = async (devices, M) => {
    const plan = chainPlan(join(dir, `chain${devices.length}`), { stages, devices });
    const dep = await openDeployment(plan, { microbatches: M });
    try {
      const specs = [dep.meta.get(0).inputs[0]];
      await dep.setInputs(Array.from({ length: M }, (_, m) => randomInputs(specs, m).tensors));
      const r = await dep.run({ warmup, repeat });
      return median(r.steps);
    } finally {
      await dep.close();
    }
  };
  const local1 = await step([0], 1);
  const localM = await step([0], microbatches);
  const hops1 = await step([0, 1], 1);
  const hopsM = await step([0, 1], microbatches);
  const single = { stages, step_us: hops1, stage_us: local1 / stages };
  const pipelined = { stages, microbatches, step_us: hopsM, stage_us: localM / (stages * microbatches) };
  const fit = fitHops(single, pipelined);
  return {
    stages, microbatches,
    stage_run_us: round(pipelined.stage_us, 2),
    hop_us: round(fit.hop_us, 1),
    hop_busy_us: round(fit.hop_busy_us, 1),
    fit_error: round(fit.err, 3),
    steps_us: { one_device_m1: round(local1, 1), one_device: round(localM, 1), two_devices_m1: round(hops1, 1), two_devices: round(hopsM, 1) },
  };
}

/** True when the numbers are likely inflated by other load. */
export const busy = (r) => (r.cpu_share !== null && r.cpu_share < 0.9) || r.load_avg_1m > r.cores * 0.5;

const gbs = (v) => (v === undefined ? 'no size dependence' : `${(v / 1e9).toFixed(2)} GB/s`);
const round = (v, digits) => (v === null || v === undefined ? null : Math.round(v * 10 ** digits) / 10 ** digits);

const USAGE = `usage: node tools/fidelity/calibrate_host.mjs [MODEL.onnx...] -o OUT.json [options]
  -o, --output F      where to write the calibration (JSON)
  --cli PATH          onnx-autopar (default: $AUTOPAR_CLI, else build/tools/onnx-autopar)
  --algos A,B         algorithms whose splits measure the cost of a cut (default pipeline-dp,round-robin)
  --microbatches M    micro-batches per timed step (default 8)
  --repeat R          timed steps per measurement (default 7)
  --quick             fewer sizes and repetitions (a smoke run, not a calibration)
models default to build/models/{squeezenet1_1,resnet18,transformer_encoder,lstm}.onnx`;

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, {
    output: { type: 'string', short: 'o' }, cli: { type: 'string' }, algos: { type: 'string' },
    microbatches: { type: 'string' }, repeat: { type: 'string' }, quick: { type: 'boolean' },
  });
  if (v.help) return { text: USAGE };
  if (!v.output) throw badInput('-o OUT.json is required (see --help)');
  const models = positionals.length ? positionals : DEFAULT_MODELS.filter(existsSync);
  if (models.length === 0) throw badInput('no models given and none exported under build/models (ctest -R export, or pass MODEL.onnx)');
  for (const m of models) if (!existsSync(m)) throw badInput(`${m}: no such model`);
  const algos = (v.algos ?? 'pipeline-dp,round-robin').split(',').filter(Boolean);
  const o = {
    models: models.map((m) => resolve(m)),
    cli: resolveCli(v.cli),
    algos,
    quick: !!v.quick,
    microbatches: v.microbatches === undefined ? 8 : number(v.microbatches, '--microbatches', { int: true, min: 1 }),
    repeat: v.repeat === undefined ? (v.quick ? 3 : 7) : number(v.repeat, '--repeat', { int: true, min: 1 }),
    log: (s) => process.stderr.write(`calibrate_host: ${s}\n`),
  };
  const r = await calibrateHost(o);
  writeFileSync(v.output, JSON.stringify(r, null, 1) + '\n');
  const lines = [
    `load ${r.load_avg_1m} on ${r.cores} cores, cpu share ${r.cpu_share}`,
    `transfer: latency ${r.transfer.latency_us} us, ${gbs(r.transfer.bytes_per_s)} (moved); copied: ${r.transfer_copy.latency_us} us, ${gbs(r.transfer_copy.bytes_per_s)}`,
    `stage run: ${r.stage_run_us} us   cut: ${r.cut_us ?? '-'} us per cut edge + ${gbs(r.cut_bytes_per_s)}   2 threads: ${r.thread_speedup[2] ?? '-'}x`,
    `hand-over through the runner: ${r.hop_us} us waiting + ${r.hop_busy_us} us of the receiving device (fit off by ${(r.runner.fit_error * 100).toFixed(0)}% on the pipelined chain)`,
    `written to ${v.output}`,
  ];
  if (busy(r)) lines.unshift(`warning: the host was busy (load ${r.load_avg_1m} on ${r.cores} cores, cpu share ${r.cpu_share}); these numbers are inflated — calibrate on a quiet machine`);
  return { text: lines.join('\n') };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('calibrate_host', main, process.argv.slice(2));
}
