// `run_deployment.mjs REPOSITORY` for a Triton model repository (what
// `onnx-autopar --stages --triton` writes to OUT_DIR/triton): loads every
// step's ONNX model, checks the repository as Triton would
// (triton_repository.mjs), runs each micro-batch as one request through the
// ensemble, and compares the ensemble's outputs with the unsplit model
// (--check) or stored outputs (--expected).
//
// Requests and responses use the configs' shapes: a scalar is [1] there
// (Triton wants non-empty dims), so a scalar input is sent as [1] and a [1]
// output is compared with the scalar the original model gives.
//
// Runs on this machine's CPU: the instance groups' GPUs are reported, not
// used. Each request runs its steps one at a time, so step times are not a
// measure of what Triton would achieve.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EXIT, badInput } from './errors.mjs';
import { DeviceSessions } from './device_sessions.mjs';
import { randomInputsReport, seededInputs, readTensorDir, checkInputs } from './inputs.mjs';
import { combineComparisons, compareOutputs, formatComparison } from './compare.mjs';
import { writeTensorFile } from './tensor_pb.mjs';
import { numel } from './dtypes.mjs';
import { checkTolerance } from './precision.mjs';
import { TRITON_TYPES, checkRepository, dimsMatch, loadTritonRepository, runEnsemble } from './triton_repository.mjs';

export { isTritonRepository } from './triton_repository.mjs';

/** A tensor as the ensemble takes it: the input's dims when they differ only by the scalar-as-[1] convention. */
function toRequest(t, io) {
  if (dimsMatch(io.dims, t.dims)) return t;
  if (t.dims.length === 0 && io.dims.length === 1 && (io.dims[0] === 1 || io.dims[0] === -1)) return { ...t, dims: [1] };
  throw badInput(`input '${io.name}' has shape [${t.dims}], the ensemble wants [${io.dims}]`);
}

/** An ensemble output as the reference has it: a [1] response for a scalar reference is that scalar. */
function likeReference(t, ref) {
  if (!t || !ref) return t;
  if (ref.dims.length === 0 && t.dims.length === 1 && numel(t.dims) === 1) return { ...t, dims: [] };
  return t;
}

/** Input specs {name, type, shape} for random inputs: the model input each ensemble input feeds first. */
function ensembleInputSpecs(repo, meta) {
  return repo.ensemble.config.inputs.map((io) => {
    for (const step of repo.steps) {
      for (const [key, tensor] of step.inputMap) {
        if (tensor !== io.name) continue;
        const m = meta.get(step.index).inputs.find((i) => i.name === key);
        if (m) return { ...m, name: io.name };
      }
    }
    return { name: io.name, type: TRITON_TYPES[io.dataType], shape: io.dims.map((d) => (d >= 0 ? d : null)), isTensor: true };
  });
}

/**
 * Runs the repository for the parsed options `o` of run_deployment.mjs;
 * returns { code, text, report, json } like its main.
 */
export async function runTritonRepository(o) {
  for (const [flag, given] of [['--repeat', o.repeat !== 1], ['--warmup', o.warmup !== 0], ['--profile', !!o.profile]]) {
    if (given) throw badInput(`${flag} is not available for a Triton repository (it runs each request once, step by step)`);
  }
  const repo = loadTritonRepository(o.target);
  const text = [];
  const report = { ok: true, target: o.target, mode: 'triton', ensemble: repo.ensemble.name };
  const sessions = new DeviceSessions('triton');
  let original = null;
  try {
    const meta = new Map(Object.entries(await sessions.load(repo.steps.map((s) => ({ id: s.index, modelPath: s.modelPath })), { threads: o.threads, verbose: o.verbose })).map(([k, v]) => [Number(k), v]));
    const errors = checkRepository(repo, meta);
    if (errors.length) throw badInput(`${repo.ensemble.name}: ${errors.length} problem${errors.length === 1 ? '' : 's'} Triton would refuse: ${errors.join('; ')}`);

    if (o.check) {
      const s = new DeviceSessions('original');
      const m = await s.load([{ id: 0, modelPath: o.check }], { threads: o.threads, verbose: o.verbose });
      original = { path: o.check, sessions: s, meta: m[0] };
    }
    const ecfg = repo.ensemble.config;
    const specs = original ? original.meta.inputs : ensembleInputSpecs(repo, meta);
    if (original) {
      for (const io of ecfg.inputs) if (!specs.some((s) => s.name === io.name)) throw badInput(`ensemble input '${io.name}' is not an input of ${o.check}`);
    }
    const M = o.microbatches ?? 1;
    const requests = [];
    if (o.inputsDir) {
      report.inputs = { source: resolve(o.inputsDir) };
      for (let m = 0; m < M; m++) {
        const t = readTensorDir(M === 1 ? o.inputsDir : join(o.inputsDir, `mb${m}`), 'input', specs.map((s) => s.name));
        checkInputs(t, specs);
        requests.push(t);
      }
    } else {
      for (let m = 0; m < M; m++) {
        const r = seededInputs(specs, o.seed + m, {
          intRange: o.intRange, dimValues: o.dimValues, inputValues: o.inputValues,
          what: o.check ?? `the ensemble '${repo.ensemble.name}'`,
        });
        if (m === 0) text.push(...r.notes.map((n) => `note: ${n}`));
        requests.push(r.tensors);
      }
      report.inputs = randomInputsReport(o);
    }

    const results = [];
    for (const inputs of requests) {
      const request = Object.fromEntries(ecfg.inputs.map((io) => [io.name, toRequest(inputs[io.name], io)]));
      results.push(await runEnsemble(repo, request, (index, feeds, fetches) => sessions.run(index, feeds, fetches)));
    }
    const outputs = results.map((r) => r.outputs);
    const last = results.at(-1);
    const t0 = last.timeline[0]?.start_us ?? 0;
    const models = repo.steps.map((s) => ({ name: s.modelName, model: s.modelPath, instance_groups: s.model.config.instanceGroups }));
    Object.assign(report, {
      steps: repo.steps.length,
      microbatches: M,
      order: last.timeline.map((t) => t.step),
      models,
      timeline: last.timeline.map((t) => ({ ...t, start_us: Math.round(t.start_us - t0), end_us: Math.round(t.end_us - t0) })),
      outputs: ecfg.outputs.map((io) => ({ name: io.name, type: outputs[0][io.name].type, shape: outputs[0][io.name].dims })),
    });
    const wall = (last.timeline.at(-1)?.end_us ?? t0) - t0;
    text.push(`ran Triton ensemble '${repo.ensemble.name}': ${repo.steps.length} step${repo.steps.length === 1 ? '' : 's'} wired from config.pbtxt alone, ` +
      `${M === 1 ? 'one request' : `${M} requests`} on this CPU (last in ${(wall / 1000).toFixed(2)} ms)`);
    const groups = new Map(); // "KIND_GPU gpus [0]" -> models
    for (const m of models) {
      for (const g of m.instance_groups) {
        const key = `${g.kind}${g.gpus.length ? ` [${g.gpus}]` : ''}${g.count === 1 ? '' : ` x${g.count}`}`;
        groups.set(key, (groups.get(key) ?? 0) + 1);
      }
    }
    text.push(`instance groups as configured (not used here): ${[...groups].sort((a, b) => a[0].localeCompare(b[0])).map(([k, n]) => `${k}: ${n} model${n === 1 ? '' : 's'}`).join(', ')}`);
    if (o.verbose) {
      for (const t of report.timeline) text.push(`  step ${t.step}  ${t.model}  ${(t.start_us / 1000).toFixed(3)} .. ${(t.end_us / 1000).toFixed(3)} ms`);
    }
    text.push('outputs: ' + report.outputs.map((x) => `${x.name} ${x.type} [${x.shape}]`).join(', '));

    // The network's precision, from the original model, else the step models.
    const tol = checkTolerance(o, o.check ? [o.check] : o.expectedDir ? repo.steps.map((s) => s.modelPath) : [], text);
    const perMb = M === 1 ? '' : ` on each of ${M} requests`;
    if (original) {
      const names = original.meta.outputs.map((x) => x.name);
      const cmps = [];
      for (let m = 0; m < M; m++) {
        const ref = await original.sessions.run(0, requests[m]);
        const actual = Object.fromEntries(names.map((n) => [n, likeReference(outputs[m][n], ref[n])]));
        cmps.push(compareOutputs(actual, ref, names, tol));
      }
      const cmp = combineComparisons(cmps);
      report.check = { model: resolve(o.check), ok: cmp.ok, max_abs: cmp.maxAbs, max_rel: cmp.maxRel, microbatches_checked: M, failed_microbatches: cmp.failedMicrobatches, outputs: cmp.results };
      text.push(`check against ${o.check}${perMb}:`, ...formatComparison(cmp, 'original model', tol));
      report.ok &&= cmp.ok;
    }
    const names = ecfg.outputs.map((io) => io.name);
    if (o.expectedDir) {
      const cmps = outputs.map((out, m) => {
        const expected = readTensorDir(M === 1 ? o.expectedDir : join(o.expectedDir, `mb${m}`), 'output', names);
        const present = names.filter((n) => n in expected);
        const actual = Object.fromEntries(present.map((n) => [n, likeReference(out[n], expected[n])]));
        return compareOutputs(actual, expected, present, tol);
      });
      const cmp = combineComparisons(cmps);
      report.expected = { dir: resolve(o.expectedDir), ok: cmp.ok, max_abs: cmp.maxAbs, max_rel: cmp.maxRel, failed_microbatches: cmp.failedMicrobatches, outputs: cmp.results };
      text.push(`compare with ${o.expectedDir}${perMb}:`, ...formatComparison(cmp, 'expected outputs', tol));
      report.ok &&= cmp.ok;
    }
    if (o.saveDir) {
      outputs.forEach((out, m) => {
        const dir = M === 1 ? o.saveDir : join(o.saveDir, `mb${m}`);
        mkdirSync(dir, { recursive: true });
        names.forEach((n, i) => writeTensorFile(join(dir, `output_${i}.pb`), { ...out[n], name: n }));
      });
      text.push(`outputs written to ${o.saveDir} (as the ensemble returns them)`);
    }
  } finally {
    await sessions.close().catch(() => {});
    if (original) await original.sessions.close().catch(() => {});
  }
  report.exit_code = report.ok ? EXIT.OK : EXIT.MISMATCH;
  return { code: report.exit_code, text, report, json: o.json };
}
