#!/usr/bin/env node
// run_deployment: runs an onnx-autopar deployment (OUT_DIR/plan.json and its
// stage models) in ONNX Runtime and, optionally, verifies it against the
// unsplit model (--check) or stored outputs (--expected). With --microbatches M
// a step pushes M micro-batches (each the model's inputs as given) through the
// stages as a pipeline; --repeat/--warmup time steps. See README.md.
//
// Exit codes: 0 ok, 2 bad input, 3 outputs mismatch, 4 runtime/internal error.
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT, RunnerError, badInput, internal } from './errors.mjs';
import { loadPlan, singleModelPlan } from './plan.mjs';
import { openDeployment } from './executor.mjs';
import { DeviceSessions } from './device_sessions.mjs';
import { createSession } from './ort_session.mjs';
import { checkInputValueNames, parseInputValues, randomInputsReport, seededInputs, readTensorDir, checkInputs } from './inputs.mjs';
import { combineComparisons, compareOutputs, formatComparison } from './compare.mjs';
import { hostLoad } from './host_load.mjs';
import { writeTensorFile } from './tensor_pb.mjs';
import { isTritonRepository, runTritonRepository } from './triton_run.mjs';
import { checkTolerance } from './precision.mjs';

const USAGE = `usage: node tools/runner/run_deployment.mjs OUT_DIR|MODEL.onnx|OUT_DIR/triton [options]
  (a Triton model repository runs through its ensemble, from its configs alone; see README.md)
  --check ORIGINAL.onnx   also run the unsplit model on the same micro-batches and compare every output
  --microbatches M        micro-batches per step, each the model's inputs as given
                          (default: the mb<m> folders of --inputs, else plan.json's, else 1)
  --repeat R              time R steps (default 1)
  --warmup W              run W untimed steps first (default 0)
  --threads-per-device T  intra-op threads of every session: one device = T threads (default 1; 0 = ORT's default)
  --inputs DIR            read inputs from DIR/input_N.pb (M > 1: DIR/mb<m>/input_N.pb)
  --seed N                random inputs; micro-batch m from seed N+m (default 0)
  --int-range LO,HI       integer inputs uniform in [LO, HI) (default 0,10)
  --input-value NAME=V[,V...]  exactly these contents for input NAME in every micro-batch (a scalar,
                          or row-major for its shape; true/false for bools), e.g. the value an If was
                          inlined for with onnx-autopar --input-value; other inputs stay random (repeatable)
  --dim NAME=V            value for a symbolic input dim (repeatable; default 1)
  --expected DIR          compare with DIR/output_N.pb (M > 1: DIR/mb<m>/output_N.pb)
  --atol A --rtol R       tolerance |a-b| <= A + R*|b| for every float output (default: 1e-4, 1e-4
                          for float32 compute; for a network computing in float16/bfloat16, from
                          its roundoff and depth, see README.md)
  --save-outputs DIR      write the outputs as DIR/output_N.pb (M > 1: DIR/mb<m>/output_N.pb)
  --profile PREFIX        ORT profiling; one PREFIX_s<stage>_<time>.json per stage
  --sequential            run all stages on the main thread, one at a time
  --threads N             the same as --threads-per-device
  --json                  print one JSON object (results or error) on stdout
  --verbose               per-task timeline and ORT warnings
exit codes: 0 ok, 2 bad input, 3 mismatch, 4 runtime/internal error`;

const OPTIONS = {
  check: { type: 'string' }, inputs: { type: 'string' }, seed: { type: 'string' },
  'int-range': { type: 'string' }, 'input-value': { type: 'string', multiple: true }, dim: { type: 'string', multiple: true }, expected: { type: 'string' },
  atol: { type: 'string' }, rtol: { type: 'string' }, 'save-outputs': { type: 'string' },
  profile: { type: 'string' }, sequential: { type: 'boolean' }, threads: { type: 'string' },
  'threads-per-device': { type: 'string' }, microbatches: { type: 'string' }, repeat: { type: 'string' },
  warmup: { type: 'string' },
  json: { type: 'boolean' }, verbose: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
};

function number(v, flag, { int = false, min = -Infinity } = {}) {
  const n = Number(v);
  if (v === '' || !Number.isFinite(n) || (int && !Number.isInteger(n)) || n < min) throw badInput(`${flag}: bad value '${v}'`);
  return n;
}

/** Parses argv into a checked options object. */
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
  if (v.inputs && v.seed !== undefined) throw badInput('--inputs and --seed are exclusive');
  if (v.inputs && v['input-value']) throw badInput('--inputs and --input-value are exclusive (put the value in the input_N.pb file)');
  if (v.threads !== undefined && v['threads-per-device'] !== undefined) throw badInput('--threads and --threads-per-device are the same flag; give one');
  let intRange = [0, 10];
  if (v['int-range'] !== undefined) {
    const parts = v['int-range'].split(',');
    if (parts.length !== 2) throw badInput(`--int-range: expected LO,HI, got '${v['int-range']}'`);
    intRange = parts.map((p) => number(p, '--int-range', { int: true }));
    if (intRange[1] <= intRange[0]) throw badInput('--int-range: HI must be greater than LO');
  }
  const dimValues = {};
  for (const d of v.dim ?? []) {
    const m = /^(.+)=(\d+)$/.exec(d);
    if (!m) throw badInput(`--dim: expected NAME=VALUE, got '${d}'`);
    dimValues[m[1]] = Number(m[2]);
  }
  const explicitTol = v.atol !== undefined || v.rtol !== undefined;
  const threadsFlag = v['threads-per-device'] !== undefined ? '--threads-per-device' : '--threads';
  const threads = v['threads-per-device'] ?? v.threads;
  return {
    target: parsed.positionals[0],
    check: v.check, inputsDir: v.inputs, expectedDir: v.expected,
    seed: v.seed === undefined ? 0 : number(v.seed, '--seed', { int: true, min: 0 }),
    intRange, dimValues, inputValues: parseInputValues(v['input-value']),
    atol: v.atol === undefined ? 1e-4 : number(v.atol, '--atol', { min: 0 }),
    rtol: v.rtol === undefined ? 1e-4 : number(v.rtol, '--rtol', { min: 0 }),
    halfTolerance: explicitTol ? 0 : 1e-3, explicitTol,
    saveDir: v['save-outputs'], profile: v.profile ? resolve(v.profile) : null,
    concurrent: !v.sequential,
    threads: threads === undefined ? 1 : number(threads, threadsFlag, { int: true, min: 0 }),
    microbatches: v.microbatches === undefined ? null : number(v.microbatches, '--microbatches', { int: true, min: 1 }),
    repeat: v.repeat === undefined ? 1 : number(v.repeat, '--repeat', { int: true, min: 1 }),
    warmup: v.warmup === undefined ? 0 : number(v.warmup, '--warmup', { int: true, min: 0 }),
    json: !!v.json, verbose: !!v.verbose,
  };
}

/** Plan for the target: OUT_DIR/plan.json, or a one-stage plan for a plain .onnx file. */
async function targetPlan(target) {
  if (target.endsWith('.onnx') && existsSync(target) && statSync(target).isFile()) {
    const s = await createSession(target, {});
    const plan = singleModelPlan(target, s.inputNames, s.outputNames);
    await s.release();
    return plan;
  }
  return loadPlan(target);
}

/**
 * Input specs {name, type, shape} in the order inputs are generated/read.
 * Without --check, a graph input no stage reads (the rate of an If that
 * onnx-autopar inlined for one --input-value, CastLike's `like` once the
 * function is expanded) has no type to take: it is {name, unread: true},
 * read from --inputs when there, never made at random, and needed by no
 * stage. Only a graph output that passes it straight through would need it.
 */
function inputSpecs(plan, dep, original, inputValues = {}) {
  if (!original) checkInputValueNames(inputValues, plan.inputs.map((i) => i.name), 'the deployment');
  if (original) {
    const names = original.meta.inputs.map((i) => i.name);
    for (const i of plan.inputs) if (!names.includes(i.name)) throw badInput(`plan input '${i.name}' is not an input of ${original.path}`);
    for (const s of plan.stages) {
      for (const i of dep.meta.get(s.id).inputs) {
        const o = original.meta.inputs.find((x) => x.name === i.name);
        if (o && o.type !== i.type) throw badInput(`stage ${s.id} takes input '${i.name}' as ${i.type}, ${original.path} as ${o.type}`);
      }
    }
    return original.meta.inputs;
  }
  return plan.inputs.flatMap(({ name }) => {
    const s = plan.stages.find((st) => st.inputs.includes(name));
    if (s) return [dep.meta.get(s.id).inputs.find((i) => i.name === name)];
    if (plan.outputs.some((o) => o.name === name)) {
      throw badInput(`graph input '${name}' is read by no stage but is a graph output; cannot tell its type (use --check)`);
    }
    return [{ name, unread: true }];
  });
}

/** Micro-batches an --inputs DIR holds: its DIR/mb0, mb1, ... subfolders, else DIR itself is one. */
function microbatchDirs(dir) {
  let n = 0;
  while (existsSync(join(dir, `mb${n}`))) n++;
  return Math.max(1, n);
}

/** Where micro-batch m's files live under DIR: DIR itself for a single micro-batch, else DIR/mb<m>. */
const mbDir = (dir, m, M) => (M === 1 ? dir : join(dir, `mb${m}`));

/**
 * The graph inputs of every micro-batch: [m] -> {name: tensor}. Random inputs
 * of micro-batch m come from seed + m; an input the plan marks
 * "per_microbatch": false keeps micro-batch 0's value in all of them.
 */
function microbatchInputs(o, plan, specs, M, report, text) {
  if (o.inputsDir) {
    report.inputs = { source: resolve(o.inputsDir) };
    return Array.from({ length: M }, (_, m) => {
      const t = readTensorDir(mbDir(o.inputsDir, m, M), 'input', specs.map((s) => s.name));
      checkInputs(t, specs);
      return t;
    });
  }
  const shared = new Set(plan.inputs.filter((i) => !i.perMicrobatch).map((i) => i.name));
  const all = [];
  for (let m = 0; m < M; m++) {
    const r = seededInputs(specs, o.seed + m, {
      intRange: o.intRange, dimValues: o.dimValues, inputValues: o.inputValues,
      unread: plan.inputs.map((i) => i.name), what: o.check ?? 'the deployment',
    });
    if (m === 0) {
      report.notes = r.notes;
      text.push(...r.notes.map((n) => `note: ${n}`));
    } else {
      for (const n of shared) if (n in r.tensors) r.tensors[n] = all[0][n];
    }
    all.push(r.tensors);
  }
  report.inputs = randomInputsReport(o);
  if (shared.size) report.inputs.shared = [...shared];
  return all;
}

/** median, min, max and all of a list of step times (µs). */
function stepStats(all) {
  const s = [...all].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  const r = (v) => Math.round(v * 10) / 10;
  return { median: r(median), min: r(s[0]), max: r(s.at(-1)), all: all.map(r) };
}

async function main(argv) {
  const o = parseCli(argv);
  if (o.help) return { code: EXIT.OK, text: [USAGE] };
  if (isTritonRepository(o.target)) return runTritonRepository(o);
  const text = [];
  const report = { ok: true, target: o.target };
  const plan = await targetPlan(o.target);
  if (o.check && !existsSync(o.check)) throw badInput(`--check: ${o.check} does not exist`);
  if (o.profile) mkdirSync(resolve(o.profile, '..'), { recursive: true });
  const M = o.microbatches ?? (o.inputsDir ? microbatchDirs(o.inputsDir) : plan.microbatches ?? 1);

  let original = null;
  if (o.check) {
    const sessions = new DeviceSessions('original');
    const meta = await sessions.load([{ id: 0, modelPath: o.check, profilePrefix: o.profile && `${o.profile}_original` }], { verbose: o.verbose });
    original = { path: o.check, sessions, meta: meta[0] };
  }
  const dep = await openDeployment(plan, { concurrent: o.concurrent, threads: o.threads, microbatches: M, profilePrefix: o.profile, verbose: o.verbose });
  try {
    const specs = inputSpecs(plan, dep, original, o.inputValues);
    const inputs = microbatchInputs(o, plan, specs, M, report, text);
    await dep.setInputs(inputs);
    const nDev = new Set(plan.stages.map((s) => s.device)).size;
    const result = await dep.run({ warmup: o.warmup, repeat: o.repeat });
    const outputs = result.outputs.map((out, m) => {
      // A graph output that is a graph input passes straight through.
      for (const { name } of plan.outputs) if (!out[name] && inputs[m][name]) out[name] = inputs[m][name];
      return out;
    });
    const step = stepStats(result.steps);
    Object.assign(report, {
      mode: dep.mode, devices: nDev, stages: plan.stages.length,
      microbatches: M, repeat: o.repeat, warmup: o.warmup,
      threads_per_device: o.threads, threads_per_session: o.threads,
      step_us: step,
      throughput_mb_per_s: Math.round((M / (step.median / 1e6)) * 10) / 10,
      predicted_step_us: plan.predictedStepUs !== null && plan.microbatches === M ? plan.predictedStepUs : null,
      cpu_share: result.cpu_share === null ? null : Math.round(result.cpu_share * 1000) / 1000,
      ...hostLoad(),
      wall_ms: Math.round(result.steps.at(-1)) / 1000,
      timeline: result.timeline.map((t) => ({ ...t, start_ms: t.start_us / 1000, end_ms: t.end_us / 1000 })),
      transfers: result.transfers,
      outputs: plan.outputs.map(({ name }) => ({ name, type: outputs[0][name].type, shape: outputs[0][name].dims })),
    });
    const how = dep.mode === 'workers' ? 'one worker thread per device' : 'sequential on the main thread';
    const threadsNote = o.threads === 1 ? '' : `, ${o.threads || "ORT's default"} intra-op threads per device`;
    if (M === 1 && o.repeat === 1 && o.warmup === 0) {
      text.push(`ran ${plural(plan.stages.length, 'stage')} on ${plural(nDev, 'device')} (${how}${threadsNote}) in ${(step.median / 1000).toFixed(2)} ms`);
    } else {
      text.push(`ran ${plural(plan.stages.length, 'stage')} on ${plural(nDev, 'device')} (${how}${threadsNote}): ` +
        `${plural(M, 'micro-batch', 'micro-batches')} per step, ${plural(o.repeat, 'timed step')} after ${o.warmup} warm-up`);
      text.push(`step: median ${ms(step.median)}  min ${ms(step.min)}  max ${ms(step.max)}  (${report.throughput_mb_per_s} micro-batches/s)`);
    }
    if (report.predicted_step_us !== null) {
      text.push(`predicted ${ms(report.predicted_step_us)} per step (plan.json): measured/predicted ${(step.median / report.predicted_step_us).toFixed(2)}`);
    }
    if (report.cpu_share !== null && report.cpu_share < 0.8) {
      text.push(`note: cpu share ${report.cpu_share} (load ${report.load_avg_1m.toFixed(2)} on ${report.cores} cores): other processes took the cores; times are inflated`);
    }
    if (o.verbose) {
      for (const t of result.timeline) text.push(`  stage ${t.stage}  device ${t.device}  micro-batch ${t.microbatch}  ${ms(t.start_us)} .. ${ms(t.end_us)}`);
    }
    text.push('outputs: ' + report.outputs.map((x) => `${x.name} ${x.type} [${x.shape}]`).join(', '));

    const refNames = original ? original.meta.outputs.map((x) => x.name) : plan.outputs.map((x) => x.name);
    // The network's precision, from the original model, else the stage models.
    const precisionFrom = original ? [o.check] : o.expectedDir ? plan.stages.map((s) => s.modelPath) : [];
    const tol = checkTolerance(o, precisionFrom, text);
    const perMb = M === 1 ? '' : ` on each of ${M} micro-batches`;
    if (original) {
      const cmps = [];
      for (let m = 0; m < M; m++) cmps.push(compareOutputs(outputs[m], await original.sessions.run(0, inputs[m]), refNames, tol));
      const cmp = combineComparisons(cmps);
      report.check = {
        model: resolve(o.check), ok: cmp.ok, max_abs: cmp.maxAbs, max_rel: cmp.maxRel, max_abs_err: cmp.maxAbs,
        microbatches_checked: M, failed_microbatches: cmp.failedMicrobatches, outputs: cmp.results,
      };
      text.push(`check against ${o.check}${perMb}:`, ...formatComparison(cmp, 'original model', tol));
      report.ok &&= cmp.ok;
    }
    if (o.expectedDir) {
      const cmps = outputs.map((out, m) => {
        const expected = readTensorDir(mbDir(o.expectedDir, m, M), 'output', refNames);
        return compareOutputs(out, expected, refNames.filter((n) => n in expected), tol);
      });
      const cmp = combineComparisons(cmps);
      report.expected = { dir: resolve(o.expectedDir), ok: cmp.ok, max_abs: cmp.maxAbs, max_rel: cmp.maxRel, failed_microbatches: cmp.failedMicrobatches, outputs: cmp.results };
      text.push(`compare with ${o.expectedDir}${perMb}:`, ...formatComparison(cmp, 'expected outputs', tol));
      report.ok &&= cmp.ok;
    }
    if (o.saveDir) {
      outputs.forEach((out, m) => {
        const dir = mbDir(o.saveDir, m, M);
        mkdirSync(dir, { recursive: true });
        refNames.forEach((n, i) => out[n] && writeTensorFile(join(dir, `output_${i}.pb`), { ...out[n], name: n }));
      });
      text.push(`outputs written to ${o.saveDir}`);
    }
  } finally {
    report.profiles = await dep.close().catch(() => []);
    if (original) report.profiles.push(...(await original.sessions.close()));
  }
  if (o.profile) text.push(`profiles: ${report.profiles.join(' ')}`);
  report.exit_code = report.ok ? EXIT.OK : EXIT.MISMATCH;
  return { code: report.exit_code, text, report, json: o.json };
}

const ms = (us) => `${(us / 1000).toFixed(us < 10000 ? 3 : 2)} ms`;
const plural = (n, w, many = `${w}s`) => `${n} ${n === 1 ? w : many}`;

const argv = process.argv.slice(2);
const wantJson = argv.includes('--json');
main(argv).then(
  ({ code, text, report, json }) => {
    if (json) process.stdout.write(JSON.stringify(report, null, 1) + '\n');
    else process.stdout.write(text.join('\n') + '\n');
    process.exit(code);
  },
  (e) => {
    const err = e instanceof RunnerError ? e : internal(`internal error: ${e?.stack?.split('\n').slice(0, 2).join(' ') ?? e}`);
    const msg = err.message.replace(/\s*\n\s*/g, ' ');
    process.stderr.write(`run_deployment: error: ${msg}\n`);
    if (wantJson) process.stdout.write(JSON.stringify({ ok: false, exit_code: err.code, error: msg }) + '\n');
    process.exit(err.code);
  },
);
