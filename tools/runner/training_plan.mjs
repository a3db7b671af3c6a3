// Reads and validates the "training" object of OUT_DIR/plan.json (written by
// `onnx-autopar MODEL -o OUT --mode training`; tools/artifacts/training_json.h
// documents it) into the form train.mjs needs. Every failure is a
// RunnerError(BAD_INPUT) naming plan.json.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { badInput } from './errors.mjs';
import { dtypeFromName } from './dtypes.mjs';

const isName = (v) => typeof v === 'string' && v.length > 0;
const isShape = (v) => Array.isArray(v) && v.every((d) => Number.isInteger(d) && d >= 0);

/**
 * Loads OUT_DIR/plan.json's training step. Returns
 *   { dir, models: {init, gradient, update} (absolute paths),
 *     source: {path (absolute, or null when not found), given, sha256},
 *     loss: {output, input, classes}, dataInputs: [{name, type, shape}],
 *     stepInput: name or null, optimizer: the plan's object,
 *     weights: [{name, type, shape, bytes, initial, gradient,
 *                update: {weight, gradient, output, state: [{name, output}]}}] }
 */
export function loadTrainingPlan(outDir) {
  const dir = resolve(outDir);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw badInput(`${outDir}: no such directory`);
  const path = join(dir, 'plan.json');
  if (!existsSync(path)) throw badInput(`${path}: missing (not an onnx-autopar output directory?)`);
  let raw;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw badInput(`${path}: not valid JSON (${e.message})`);
  }
  try {
    return validateTrainingPlan(raw, dir);
  } catch (e) {
    throw badInput(`${path}: ${e.message}`);
  }
}

function tensorSpec(v, what) {
  if (!v || !isName(v.name)) throw new Error(`${what}: needs a "name"`);
  if (!isShape(v.shape)) throw new Error(`${what} '${v.name}': "shape" must be a static shape`);
  dtypeFromName(v.dtype); // throws for a type the runner cannot hold
  return { name: v.name, type: v.dtype, shape: v.shape };
}

/** Validates a parsed plan object's training step; `dir` resolves model paths. Throws plain Errors. */
export function validateTrainingPlan(raw, dir) {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('top level must be an object');
  const t = raw.training;
  if (raw.mode !== 'training' || !t || typeof t !== 'object') {
    throw new Error('not a training plan (write one with onnx-autopar MODEL -o OUT --devices 1 --mode training --loss ... --optimizer ...)');
  }
  const models = {};
  for (const k of ['init', 'gradient', 'update']) {
    if (!isName(t.models?.[k])) throw new Error(`training.models.${k} must be a path`);
    models[k] = resolve(dir, t.models[k]);
    if (!existsSync(models[k])) throw new Error(`training.models.${k}: ${t.models[k]} does not exist`);
  }
  if (!isName(t.loss?.output)) throw new Error('training.loss.output must name the loss');
  const loss = {
    output: t.loss.output,
    input: isName(t.loss.input) ? t.loss.input : null,
    classes: Number.isInteger(t.loss.classes) && t.loss.classes > 0 ? t.loss.classes : null,
  };
  if (!Array.isArray(t.data_inputs)) throw new Error('training.data_inputs must be an array');
  const dataInputs = t.data_inputs.map((d, i) => tensorSpec(d, `training.data_inputs[${i}]`));
  if (!Array.isArray(t.weights) || t.weights.length === 0) throw new Error('training.weights must list the trained weights');
  const weights = t.weights.map((w, i) => {
    const spec = tensorSpec(w, `training.weights[${i}]`);
    const u = w.update;
    for (const k of ['initial', 'gradient']) if (!isName(w[k])) throw new Error(`weight '${w.name}': "${k}" must name a tensor`);
    if (!u || !isName(u.weight) || !isName(u.gradient) || !isName(u.output) || !Array.isArray(u.state)) {
      throw new Error(`weight '${w.name}': "update" needs weight, gradient, output and state`);
    }
    for (const s of u.state) if (!isName(s?.name) || !isName(s?.output)) throw new Error(`weight '${w.name}': every state entry needs name and output`);
    return { ...spec, bytes: w.bytes, initial: w.initial, gradient: w.gradient, update: u };
  });
  if (new Set(weights.map((w) => w.name)).size !== weights.length) throw new Error('training.weights lists a weight twice');
  const given = raw.source?.path;
  let sourcePath = null;
  if (isName(given)) {
    // The path as the main command was given it: relative to where it ran,
    // which is usually where the runner runs; else relative to OUT_DIR's parent.
    for (const p of [resolve(given), resolve(dir, '..', given)]) {
      if (existsSync(p) && statSync(p).isFile()) {
        sourcePath = p;
        break;
      }
    }
  }
  return {
    dir, models, loss, dataInputs, weights,
    source: { path: sourcePath, given: isName(given) ? given : null, sha256: raw.source?.sha256 ?? null },
    stepInput: isName(t.optimizer?.step_input) ? t.optimizer.step_input : null,
    optimizer: t.optimizer ?? null,
  };
}

/** sha256 of a file's bytes, hex. */
export function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}
