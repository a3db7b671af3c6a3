// What both training paths of train.mjs share: the data of each micro-batch
// (read from --data or seeded random, so the unsplit and the split step see
// the same values), the gradient mean (GradientAccumulator: float64 sums over
// the micro-batches, divided by M and rounded once to the weight's type), zero
// optimizer state, and --save's source model and atomic write.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { badInput } from './errors.mjs';
import { mulberry32, randomTensor } from './inputs.mjs';
import { readTensorFile } from './tensor_pb.mjs';
import { dtypeFromName, floatToHalf, halfToFloat, numel } from './dtypes.mjs';
import { sha256 } from './training_plan.mjs';

/**
 * The gradient mean of a set of weights over a step's micro-batches: float64
 * sums in the order the gradients are added, divided by M and rounded once to
 * the weight's type. Note [Accumulator buffers]: the sums and the means live
 * in buffers made once per run, not per step. On this host the first write
 * to a fresh 6-12 MB typed array costs 10-35 ms of page faults, against
 * about 1 ms to overwrite one already touched; a split step paid that on
 * every device every step, between two stage runs.
 */
export class GradientAccumulator {
  /** weights: [{name, type, shape}]. */
  constructor(weights) {
    this.entries = new Map();
    for (const w of weights) {
      const n = numel(w.shape);
      const dt = dtypeFromName(w.type);
      // fill() touches every page now, before any step is timed.
      const sum = new Float64Array(n).fill(0);
      const mean = new dt.Array(n).fill(0);
      this.entries.set(w.name, { w, sum, mean, added: 0 });
    }
  }

  /** Starts a step: every sum is empty. */
  begin() {
    for (const e of this.entries.values()) e.added = 0;
  }

  /** Adds tensor t (float32, float64 or float16) to weight `name`'s sum. */
  add(name, t) {
    const e = this.entries.get(name);
    const { sum } = e;
    const d = t.data;
    if (t.type === 'float16') {
      if (e.added === 0) for (let i = 0; i < sum.length; i++) sum[i] = halfToFloat(d[i]);
      else for (let i = 0; i < sum.length; i++) sum[i] += halfToFloat(d[i]);
    } else if (e.added === 0) {
      sum.set(d);
    } else {
      addValues(sum, d);
    }
    e.added++;
  }

  /**
   * sum / M as a tensor of the weight's type and shape. Its data is this
   * accumulator's buffer, overwritten by the next step's mean: feed it to the
   * update and do not keep it.
   */
  mean(name, M) {
    const { w, sum, mean, added } = this.entries.get(name);
    if (added === 0) sum.fill(0);
    if (mean instanceof Uint16Array) for (let i = 0; i < sum.length; i++) mean[i] = floatToHalf(sum[i] / M);
    else for (let i = 0; i < sum.length; i++) mean[i] = sum[i] / M;
    return { type: w.type, dims: w.shape, data: mean };
  }
}

// Its own function, so that V8 compiles one loop per pair of array types.
function addValues(sum, d) {
  const n = sum.length;
  for (let i = 0; i < n; i++) sum[i] += d[i];
}

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
