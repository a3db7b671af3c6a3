// What both training paths of train.mjs share: the data of each micro-batch
// (read from --data or seeded random, so the unsplit and the split step see
// the same values), the gradient mean (float64 sums over the micro-batches,
// divided by M and rounded once to the weight's type), zero optimizer state,
// and --save's source model and atomic write.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { badInput } from './errors.mjs';
import { mulberry32, randomTensor } from './inputs.mjs';
import { readTensorFile } from './tensor_pb.mjs';
import { dtypeFromName, floatToHalf, halfToFloat, numel } from './dtypes.mjs';
import { sha256 } from './training_plan.mjs';

/** sum += t's values (a float32, float64 or float16 tensor). */
export function addInto(sum, t) {
  const d = t.data;
  if (t.type === 'float16') {
    for (let i = 0; i < sum.length; i++) sum[i] += halfToFloat(d[i]);
  } else {
    for (let i = 0; i < sum.length; i++) sum[i] += d[i];
  }
}

/** sum / M as a tensor of weight w's type and shape (rounded once to the type). `sum` is consumed. */
export function meanOf(sum, M, w) {
  for (let i = 0; i < sum.length; i++) sum[i] /= M;
  const dt = dtypeFromName(w.type);
  const data = dt.kind === 'half' ? Uint16Array.from(sum, floatToHalf) : dt.Array.from(sum);
  return { type: w.type, dims: w.shape, data };
}

/** A fresh float64 sum for weight w's gradient. */
export const gradientSum = (w) => new Float64Array(numel(w.shape));

export const zeros = (type, dims) => ({ type, dims, data: new (dtypeFromName(type).Array)(numel(dims)) });

/** Where micro-batch m of step s keeps input `name`. */
const dataPath = (dir, s, m, name) => join(dir, `step_${s}`, `mb_${m}`, `${name}.pb`);

/** Every data file of the run exists (checked before the first step, so a missing one costs no training). */
export function checkDataFiles(o, plan) {
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
export function microbatchData(o, plan, s, m) {
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

/** Checks the init model's output for weight w (type and shape as plan.json says). */
export function checkInitial(t, w) {
  if (!t) return `init model: no output '${w.initial}'`;
  if (t.type !== w.type || t.dims.length !== w.shape.length || t.dims.some((d, i) => d !== w.shape[i])) {
    return `init model: '${w.initial}' is ${t.type} [${t.dims}], plan.json says ${w.type} [${w.shape}]`;
  }
  return null;
}

/** The source model's bytes, checked against the plan's sha256 (read before training when --save is given). */
export function readSource(plan) {
  const { path, given, sha256: want } = plan.source;
  if (!given) throw badInput(`--save: ${plan.dir}/plan.json names no source model`);
  if (!path) throw badInput(`--save: the source model ${given} (plan.json source.path) is not found from here or from ${plan.dir}/..`);
  const bytes = readFileSync(path);
  if (want && sha256(bytes) !== want) throw badInput(`--save: ${path} changed since the plan was written (sha256 differs)`);
  return { path, bytes };
}

/** Writes `bytes` to `path` through a temporary file, so that a failure leaves no half-written model. */
export function writeAtomically(path, bytes) {
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
