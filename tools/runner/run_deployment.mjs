#!/usr/bin/env node
// run_deployment: runs an onnx-autopar deployment (OUT_DIR/plan.json and its
// stage models) in ONNX Runtime and, optionally, verifies it against the
// unsplit model (--check) or stored outputs (--expected). See README.md.
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
import { randomInputs, readTensorDir, checkInputs } from './inputs.mjs';
import { compareOutputs, formatComparison } from './compare.mjs';
import { writeTensorFile } from './tensor_pb.mjs';

const USAGE = `usage: node tools/runner/run_deployment.mjs OUT_DIR|MODEL.onnx [options]
  --check ORIGINAL.onnx   also run the unsplit model on the same inputs and compare every output
  --inputs DIR            read inputs from DIR/input_N.pb (by tensor name, else position)
  --seed N                random inputs from seed N (default 0)
  --int-range LO,HI       integer inputs uniform in [LO, HI) (default 0,10)
  --dim NAME=V            value for a symbolic input dim (repeatable; default 1)
  --expected DIR          compare with DIR/output_N.pb (by name, else the model's output order)
  --atol A --rtol R       tolerance |a-b| <= A + R*|b| for float outputs (default 1e-4, 1e-4)
  --save-outputs DIR      write the deployment's outputs as DIR/output_N.pb
  --profile PREFIX        ORT profiling; one PREFIX_s<stage>_<time>.json per stage
  --sequential            run all stages on the main thread, one at a time
  --threads N             intra-op threads per session (default: cores / devices)
  --json                  print one JSON object (results or error) on stdout
  --verbose               per-stage timeline and ORT warnings
exit codes: 0 ok, 2 bad input, 3 mismatch, 4 runtime/internal error`;

const OPTIONS = {
  check: { type: 'string' }, inputs: { type: 'string' }, seed: { type: 'string' },
  'int-range': { type: 'string' }, dim: { type: 'string', multiple: true }, expected: { type: 'string' },
  atol: { type: 'string' }, rtol: { type: 'string' }, 'save-outputs': { type: 'string' },
  profile: { type: 'string' }, sequential: { type: 'boolean' }, threads: { type: 'string' },
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
  return {
    target: parsed.positionals[0],
    check: v.check, inputsDir: v.inputs, expectedDir: v.expected,
    seed: v.seed === undefined ? 0 : number(v.seed, '--seed', { int: true, min: 0 }),
    intRange, dimValues,
    atol: v.atol === undefined ? 1e-4 : number(v.atol, '--atol', { min: 0 }),
    rtol: v.rtol === undefined ? 1e-4 : number(v.rtol, '--rtol', { min: 0 }),
    halfTolerance: explicitTol ? 0 : 1e-3,
    saveDir: v['save-outputs'], profile: v.profile ? resolve(v.profile) : null,
    concurrent: !v.sequential,
    threads: v.threads === undefined ? undefined : number(v.threads, '--threads', { int: true, min: 0 }),
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

/** Input specs {name, type, shape} in the order inputs are generated/read. */
function inputSpecs(plan, dep, original) {
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
  return plan.inputs.map(({ name }) => {
    const s = plan.stages.find((st) => st.inputs.includes(name));
    if (!s) throw badInput(`graph input '${name}' is read by no stage; cannot tell its type (use --check)`);
    return dep.meta.get(s.id).inputs.find((i) => i.name === name);
  });
}

async function main(argv) {
  const o = parseCli(argv);
  if (o.help) return { code: EXIT.OK, text: [USAGE] };
  const text = [];
  const report = { ok: true, target: o.target };
  const plan = await targetPlan(o.target);
  if (o.check && !existsSync(o.check)) throw badInput(`--check: ${o.check} does not exist`);
  if (o.profile) mkdirSync(resolve(o.profile, '..'), { recursive: true });

  let original = null;
  if (o.check) {
    const sessions = new DeviceSessions('original');
    const meta = await sessions.load([{ id: 0, modelPath: o.check, profilePrefix: o.profile && `${o.profile}_original` }], { verbose: o.verbose });
    original = { path: o.check, sessions, meta: meta[0] };
  }
  const dep = await openDeployment(plan, { concurrent: o.concurrent, threads: o.threads, profilePrefix: o.profile, verbose: o.verbose });
  try {
    const specs = inputSpecs(plan, dep, original);
    let inputs;
    if (o.inputsDir) {
      inputs = readTensorDir(o.inputsDir, 'input', specs.map((s) => s.name));
      checkInputs(inputs, specs);
      report.inputs = { source: resolve(o.inputsDir) };
    } else {
      const r = randomInputs(specs, o.seed, { intRange: o.intRange, dimValues: o.dimValues });
      inputs = r.tensors;
      report.inputs = { source: 'random', seed: o.seed, int_range: o.intRange };
      report.notes = r.notes;
      text.push(...r.notes.map((n) => `note: ${n}`));
    }
    const nDev = new Set(plan.stages.map((s) => s.device)).size;
    const result = await dep.run(inputs);
    Object.assign(report, {
      mode: dep.mode, devices: nDev, stages: plan.stages.length, threads_per_session: dep.threads,
      wall_ms: result.wallMs, timeline: result.timeline, transfers: result.transfers,
      outputs: plan.outputs.map(({ name }) => ({ name, type: result.outputs[name].type, shape: result.outputs[name].dims })),
    });
    const how = dep.mode === 'workers' ? 'one worker thread per device' : 'sequential on the main thread';
    text.push(`ran ${plural(plan.stages.length, "stage")} on ${plural(nDev, "device")} (${how}) in ${result.wallMs.toFixed(2)} ms`);
    if (o.verbose) for (const t of result.timeline) text.push(`  stage ${t.stage}  device ${t.device}  ${t.start_ms.toFixed(3)} .. ${t.end_ms.toFixed(3)} ms`);
    text.push('outputs: ' + report.outputs.map((x) => `${x.name} ${x.type} [${x.shape}]`).join(', '));

    const refNames = original ? original.meta.outputs.map((x) => x.name) : plan.outputs.map((x) => x.name);
    const tol = { atol: o.atol, rtol: o.rtol, halfTolerance: o.halfTolerance };
    if (original) {
      const ref = await original.sessions.run(0, inputs);
      const cmp = compareOutputs(result.outputs, ref, refNames, tol);
      report.check = { model: resolve(o.check), ok: cmp.ok, max_abs: cmp.maxAbs, max_rel: cmp.maxRel, outputs: cmp.results };
      text.push(`check against ${o.check}:`, ...formatComparison(cmp, 'original model', tol));
      report.ok &&= cmp.ok;
    }
    if (o.expectedDir) {
      const expected = readTensorDir(o.expectedDir, 'output', refNames);
      const cmp = compareOutputs(result.outputs, expected, refNames.filter((n) => n in expected), tol);
      report.expected = { dir: resolve(o.expectedDir), ok: cmp.ok, max_abs: cmp.maxAbs, max_rel: cmp.maxRel, outputs: cmp.results };
      text.push(`compare with ${o.expectedDir}:`, ...formatComparison(cmp, 'expected outputs', tol));
      report.ok &&= cmp.ok;
    }
    if (o.saveDir) {
      mkdirSync(o.saveDir, { recursive: true });
      refNames.forEach((n, i) => result.outputs[n] && writeTensorFile(join(o.saveDir, `output_${i}.pb`), { ...result.outputs[n], name: n }));
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

const plural = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;

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
