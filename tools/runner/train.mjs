#!/usr/bin/env node
// train: runs the training step that `onnx-autopar MODEL -o OUT --mode
// training` wrote (OUT/plan.json's "training" object, OUT/step/*.onnx) for N
// steps in ONNX Runtime, and optionally saves the original model with the
// trained weights. See README.md.
//
// Two paths, the same data and the same arithmetic:
//   unsplit (train_unsplit.mjs): the gradient model on each micro-batch, the
//     mean gradient, the update model once, all on the main thread;
//   split (train_pipeline.mjs), when plan.json has training.pipeline: one
//     worker thread per device runs its stages in the plan's order and its
//     own update model. --check also trains the unsplit step on the same data
//     and compares the trained weights and the losses.
//
// Exit codes: 0 ok, 2 bad input, 3 --check found a difference, 4 runtime/internal error.
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuShare, hostLoad, schedTotals } from './host_load.mjs';
import { EXIT, RunnerError, badInput, internal } from './errors.mjs';
import { loadTrainingPlan } from './training_plan.mjs';
import { replaceInitializers } from './model_weights.mjs';
import { compareTensor } from './compare.mjs';
import { checkDataFiles, readSource, writeAtomically } from './train_common.mjs';
import { trainUnsplit } from './train_unsplit.mjs';
import { trainPipeline } from './train_pipeline.mjs';

const USAGE = `usage: node tools/runner/train.mjs OUT_DIR [options]
  OUT_DIR               written by onnx-autopar MODEL -o OUT_DIR --mode training ...
  --steps N             training steps (default 1)
  --microbatches M      micro-batches per step; their gradients are averaged (default 1;
                        a split step: plan.json's training.pipeline.microbatches, the only M it takes)
  --data DIR            read DIR/step_<s>/mb_<m>/<input name>.pb (s, m from 0; labels included)
  --seed S              random data: micro-batch m of step s from seed S + s*M + m (default 0)
  --int-range LO,HI     random integer data inputs in [LO, HI) (default 0,10); labels lie in [0, classes)
  --check               (split step) also train the unsplit step on the same data; compare the
                        trained weights (atol 1e-5 + rtol 1e-4) and each step's loss (1e-4 + 1e-4)
  --save PATH           write the original model with the trained weights to PATH
  --threads T           intra-op threads per session (default 1; 0 = ORT's default)
  --json                print one JSON object (results or error) on stdout
exit codes: 0 ok, 2 bad input, 3 --check found a difference, 4 runtime/internal error`;

const OPTIONS = {
  steps: { type: 'string' }, microbatches: { type: 'string' }, data: { type: 'string' },
  seed: { type: 'string' }, 'int-range': { type: 'string' }, save: { type: 'string' },
  threads: { type: 'string' }, check: { type: 'boolean' }, json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** --check's tolerances: weights element-wise, losses per step; both |a-b| <= atol + rtol*|b|. */
const WEIGHT_TOL = { atol: 1e-5, rtol: 1e-4 };
const LOSS_TOL = { atol: 1e-4, rtol: 1e-4 };

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
    microbatches: v.microbatches === undefined ? null : number(v.microbatches, '--microbatches', { min: 1 }),
    dataDir: v.data ?? null,
    seed: v.seed === undefined ? 0 : number(v.seed, '--seed', { min: 0 }),
    intRange,
    save: v.save ?? null,
    threads: v.threads === undefined ? 1 : number(v.threads, '--threads', { min: 0 }),
    check: !!v.check,
    json: !!v.json,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const round = (v, d = 3) => Math.round(v * 10 ** d) / 10 ** d;

const plural = (n, w, many = `${w}s`) => `${n} ${n === 1 ? w : many}`;
const fmt = (v) => (v === null || v === undefined ? '-' : v === 0 ? '0' : v.toExponential(2));

/** --check: the split step's trained weights and losses against the unsplit step's. */
function compareRuns(plan, split, unsplit) {
  const weights = plan.weights.map((w) => compareTensor(w.name, split.weights[w.name], unsplit.weights[w.name], { ...WEIGHT_TOL, halfTolerance: 0 }));
  const losses = split.loss.map((a, s) => {
    const b = unsplit.loss[s];
    const diff = Math.abs(a - b);
    return { step: s + 1, split: a, unsplit: b, abs: diff, ok: diff <= LOSS_TOL.atol + LOSS_TOL.rtol * Math.abs(b) };
  });
  const finite = (k) => weights.map((r) => r[k]).filter((v) => typeof v === 'number');
  return {
    ok: weights.every((r) => r.ok) && losses.every((l) => l.ok),
    atol: WEIGHT_TOL.atol, rtol: WEIGHT_TOL.rtol, loss_tolerance: LOSS_TOL,
    max_abs: Math.max(0, ...finite('maxAbs')), max_rel: Math.max(0, ...finite('maxRel')),
    max_loss_diff: Math.max(0, ...losses.map((l) => l.abs)),
    weights, loss: losses,
  };
}

/** The check as a table: failing weights first, then the largest differences (at most 10 rows), the losses, PASS or FAIL. */
function formatCheck(cmp) {
  const rows = [...cmp.weights].sort((a, b) => (a.ok - b.ok) || (b.maxRel ?? Infinity) - (a.maxRel ?? Infinity));
  const shown = rows.filter((r, i) => !r.ok || i < 10);
  const w = Math.max(6, ...shown.map((r) => r.name.length));
  const lines = [`check against the unsplit step (training.models) on the same data:`];
  for (const r of shown) lines.push(`  ${r.name.padEnd(w)}  ${String(r.type).padEnd(7)} [${r.shape}]  max_abs ${fmt(r.maxAbs)}  max_rel ${fmt(r.maxRel)}  ${r.ok ? 'ok' : 'MISMATCH: ' + r.reason}`);
  if (rows.length > shown.length) lines.push(`  ... ${rows.length - shown.length} more weights within tolerance`);
  const worst = cmp.loss.reduce((a, l) => (!a || (a.ok && !l.ok) || (a.ok === l.ok && l.abs > a.abs) ? l : a), null);
  lines.push(`  ${'loss'.padEnd(w)}  ${plural(cmp.loss.length, 'step')}  max diff ${fmt(worst.abs)} (step ${worst.step}: ${worst.split.toPrecision(7)} vs ${worst.unsplit.toPrecision(7)})  ${worst.ok ? 'ok' : 'MISMATCH'}`);
  const badW = cmp.weights.filter((r) => !r.ok).length;
  const badL = cmp.loss.filter((l) => !l.ok).length;
  lines.push(cmp.ok
    ? `PASS vs unsplit step: ${plural(cmp.weights.length, 'weight')} within atol ${cmp.atol} + rtol ${cmp.rtol} (max abs ${fmt(cmp.max_abs)}, max rel ${fmt(cmp.max_rel)}), losses within ${LOSS_TOL.atol} + ${LOSS_TOL.rtol}`
    : `FAIL vs unsplit step: ${badW} of ${cmp.weights.length} weights and ${badL} of ${cmp.loss.length} losses differ (atol ${cmp.atol}, rtol ${cmp.rtol}; max abs ${fmt(cmp.max_abs)}, max rel ${fmt(cmp.max_rel)})`);
  return lines;
}

async function main(argv, log) {
  const o = parseCli(argv);
  if (o.help) return { code: EXIT.OK, text: [USAGE] };
  const plan = loadTrainingPlan(o.outDir);
  const p = plan.pipeline;
  if (p) {
    if (o.microbatches !== null && o.microbatches !== p.microbatches) {
      throw badInput(`--microbatches ${o.microbatches}: the split step's order is for ${p.microbatches} micro-batches (plan.json training.pipeline.microbatches)`);
    }
    o.microbatches = p.microbatches;
  } else {
    if (o.check) throw badInput('--check compares a split step with the unsplit one; plan.json has no training.pipeline');
    o.microbatches ??= 1;
  }
  if (o.dataDir) checkDataFiles(o, plan);
  const source = o.save ? readSource(plan) : null;
  const M = o.microbatches;
  const report = {
    ok: true, out: plan.dir, steps: o.steps, microbatches: M, threads: o.threads,
    data: o.dataDir ? { source: resolve(o.dataDir) } : { source: 'random', seed: o.seed, int_range: o.intRange },
    optimizer: plan.optimizer,
    weights: { count: plan.weights.length, bytes: plan.weights.reduce((a, w) => a + (w.bytes ?? 0), 0) },
    loss: [], step_ms: [],
  };
  const text = [];
  const what = `training ${plan.weights.length} weights (${report.weights.bytes} bytes) with ${plan.optimizer?.name ?? 'the update model'}: ` +
    `${plural(o.steps, 'step')} of ${plural(M, 'micro-batch', 'micro-batches')}, ${o.threads || "ORT's default"} thread${o.threads === 1 ? '' : 's'}`;
  const onStep = (s, loss, ms) => {
    report.loss.push(loss);
    report.step_ms.push(round(ms));
    log(`step ${s + 1}  loss ${loss.toPrecision(7)}  ${ms.toFixed(2)} ms`, text);
  };
  let trained;
  // How much of the CPU the training threads got (host_load.mjs): a step
  // time taken while other processes held the cores says little.
  const sched = schedTotals();
  if (p) {
    const perMb = p.stages.filter((s) => s.kind !== 'update').length;
    const devices = p.devices.filter((d) => p.stages.some((s) => s.device === d));
    trained = await trainPipeline(o, plan, onStep, () => log(`${what}; split step (${p.schedule ?? 'order'}): ` +
      `${plural(perMb, 'stage')} + ${plural(p.update.size, 'update')} on ${plural(devices.length, 'device')}, one worker thread per device`, text));
    report.pipeline = {
      schedule: p.schedule, devices: trained.devices, stages: p.stages.length, microbatches: M,
      max_stashes: trained.max_stashes, predicted: p.predicted,
    };
    report.timeline = trained.timeline;
    const predicted = Array.isArray(p.predicted?.max_stashes) ? ` (plan.json predicts ${p.predicted.max_stashes.join(', ')})` : '';
    log(`most stashes held at once: ${trained.devices.map((d, k) => `device ${d} ${trained.max_stashes[k]}`).join(', ')}${predicted}`, text);
  } else {
    trained = await trainUnsplit(o, plan, onStep, () => log(what, text));
  }
  report.step_ms_median = round(median(report.step_ms));
  report.cpu_share = cpuShare(sched, schedTotals());
  report.host = hostLoad();
  if (o.check) {
    const unsplit = await trainUnsplit(o, plan);
    const cmp = compareRuns(plan, trained, unsplit);
    report.check = { ...cmp, unsplit_loss: unsplit.loss };
    report.ok = cmp.ok;
    for (const line of formatCheck(cmp)) log(line, text);
  }
  if (source) {
    const weights = new Map(plan.weights.map((w) => [w.name, trained.weights[w.name]]));
    let bytes;
    try {
      bytes = replaceInitializers(source.bytes, weights, dirname(source.path));
    } catch (e) {
      throw badInput(`--save: ${source.path}: ${e.message}`);
    }
    writeAtomically(resolve(o.save), bytes);
    report.saved = resolve(o.save);
    log(`saved ${o.save} (${source.path} with the trained weights)`, text);
  } else {
    report.saved = null;
  }
  report.exit_code = report.ok ? EXIT.OK : EXIT.MISMATCH;
  return { code: report.exit_code, text, report, json: o.json };
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
