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
 *     weights: [{name, type, shape, bytes, initial, gradient, device (or null),
 *                update: {weight, gradient, output, state: [{name, output}]}}],
 *     pipeline: null, or the split step (see validatePipeline) }
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
    if (w.device !== undefined && (!Number.isInteger(w.device) || w.device < 0)) throw new Error(`weight '${w.name}': "device" must be a device id`);
    return { ...spec, bytes: w.bytes, initial: w.initial, gradient: w.gradient, update: u, device: w.device ?? null };
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
  const stepInput = isName(t.optimizer?.step_input) ? t.optimizer.step_input : null;
  const pipeline = t.pipeline === undefined || t.pipeline === null
    ? null
    : validatePipeline(t.pipeline, dir, { loss, dataInputs, weights, stepInput });
  return {
    dir, models, loss, dataInputs, weights, pipeline,
    source: { path: sourcePath, given: isName(given) ? given : null, sha256: raw.source?.sha256 ?? null },
    stepInput,
    optimizer: t.optimizer ?? null,
  };
}

const KINDS = ['forward', 'backward', 'update'];
const isIdList = (v) => Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0);

/**
 * Validates training.pipeline, the split step (stage models
 * without Send/Recv, one update model per device, the planner's "order").
 * Returns { schedule, microbatches, devices, predicted,
 *   stages: [{id, kind, device, file, modelPath, inputs, outputs, after,
 *             weights (update stages: the weights it updates)}],
 *   order: Map(device -> [[stage id, micro-batch]]),
 *   update: Map(device -> update stage id),
 *   producer: Map(tensor -> stage id) (per-micro-batch stages' outputs) }.
 * Checks: stage files exist; ids are 0..n-1 in list order; "after" names
 * lower ids; every input of a per-micro-batch stage is a data input, a
 * weight or an output of a lower-id stage; a tensor has one producer; each
 * weight's gradient is output by exactly one stage, on the weight's device,
 * and the weight is updated by that device's update stage; "order" lists
 * every (per-micro-batch stage, micro-batch) exactly once on the stage's
 * device, runs a device's own producers first, and the devices' orders
 * together cannot deadlock; microbatches >= 1.
 */
export function validatePipeline(p, dir, { loss, dataInputs, weights, stepInput }) {
  if (typeof p !== 'object' || Array.isArray(p)) throw new Error('training.pipeline must be an object');
  const M = p.microbatches;
  if (!Number.isInteger(M) || M < 1) throw new Error(`training.pipeline.microbatches must be an integer >= 1, got ${JSON.stringify(M)}`);
  if (!isIdList(p.devices) || p.devices.length === 0) throw new Error('training.pipeline.devices must list device ids');
  const devices = p.devices;
  if (devices.some((d, i) => i > 0 && d <= devices[i - 1])) throw new Error('training.pipeline.devices must be ascending, without repeats');
  if (!Array.isArray(p.stages) || p.stages.length === 0) throw new Error('training.pipeline.stages must be a non-empty array');
  const data = new Set(dataInputs.map((d) => d.name));
  const weightByName = new Map(weights.map((w) => [w.name, w]));
  const producer = new Map();
  const stages = p.stages.map((s, i) => {
    const where = `training.pipeline.stages[${i}]`;
    if (!s || typeof s !== 'object') throw new Error(`${where} must be an object`);
    if (s.id !== i) throw new Error(`${where}: "id" is ${JSON.stringify(s.id)}; ids must be 0..${p.stages.length - 1} in list order`);
    const what = `stage ${i}`;
    if (!KINDS.includes(s.kind)) throw new Error(`${what}: "kind" must be forward, backward or update, got ${JSON.stringify(s.kind)}`);
    if (!devices.includes(s.device)) throw new Error(`${what}: device ${JSON.stringify(s.device)} is not in training.pipeline.devices [${devices}]`);
    if (!isName(s.file)) throw new Error(`${what}: "file" must be a path`);
    const modelPath = resolve(dir, s.file);
    if (!existsSync(modelPath)) throw new Error(`${what}: ${s.file} does not exist`);
    const perMb = s.kind !== 'update';
    if (s.per_microbatch !== undefined && s.per_microbatch !== perMb) {
      throw new Error(`${what}: a${s.kind === 'update' ? 'n update stage runs once per step' : ` ${s.kind} stage runs per micro-batch`} ("per_microbatch" says otherwise)`);
    }
    const stage = { id: i, kind: s.kind, device: s.device, file: s.file, modelPath, inputs: [], outputs: [], after: [], weights: [] };
    if (!perMb) {
      if (!Array.isArray(s.weights) || s.weights.some((w) => !weightByName.has(w))) {
        throw new Error(`${what}: an update stage's "weights" must list trained weights (training.weights[].name)`);
      }
      stage.weights = s.weights;
      return stage;
    }
    for (const k of ['inputs', 'outputs']) {
      if (!Array.isArray(s[k]) || s[k].some((n) => !isName(n))) throw new Error(`${what}: "${k}" must be an array of tensor names`);
      if (new Set(s[k]).size !== s[k].length) throw new Error(`${what}: "${k}" lists a name twice`);
    }
    if (s.outputs.length === 0) throw new Error(`${what}: outputs nothing`);
    const after = s.after ?? [];
    if (!isIdList(after)) throw new Error(`${what}: "after" must be an array of stage ids`);
    for (const a of after) if (a >= i) throw new Error(`${what}: "after" names stage ${a}; it may name only lower ids`);
    for (const t of s.inputs) {
      if (data.has(t) || weightByName.has(t) || producer.has(t)) continue;
      const later = p.stages.findIndex((o, j) => j > i && Array.isArray(o?.outputs) && o.outputs.includes(t));
      throw new Error(`${what}: input '${t}' is ${later >= 0 ? `an output of stage ${later}, which is not earlier` : 'no data input, no trained weight and no earlier stage\'s output'}`);
    }
    for (const t of s.outputs) {
      if (data.has(t) || weightByName.has(t)) throw new Error(`${what}: outputs '${t}', which is a data input or a trained weight`);
      if (producer.has(t)) throw new Error(`${what}: outputs '${t}', which stage ${producer.get(t)} outputs too`);
      producer.set(t, i);
    }
    Object.assign(stage, { inputs: s.inputs, outputs: s.outputs, after });
    return stage;
  });
  if (!producer.has(loss.output)) throw new Error(`no stage outputs the loss '${loss.output}' (training.loss.output)`);

  // Gradients and update stages: each weight's gradient on its device, updated there.
  const update = new Map();
  for (const s of stages) {
    if (s.kind !== 'update') continue;
    if (update.has(s.device)) throw new Error(`stage ${s.id}: device ${s.device} has a second update stage (stage ${update.get(s.device)} is one)`);
    update.set(s.device, s.id);
  }
  for (const w of weights) {
    const makers = stages.filter((s) => s.outputs.includes(w.gradient));
    if (makers.length !== 1) throw new Error(`weight '${w.name}': its gradient '${w.gradient}' is output by ${makers.length} stages; needs exactly one`);
    if (w.device === null) throw new Error(`weight '${w.name}': "device" is missing (a split step needs each weight's device)`);
    if (!devices.includes(w.device)) throw new Error(`weight '${w.name}': device ${w.device} is not in training.pipeline.devices [${devices}]`);
    if (makers[0].device !== w.device) throw new Error(`weight '${w.name}': its gradient comes from stage ${makers[0].id} on device ${makers[0].device}, not from the weight's device ${w.device}`);
    const u = update.get(w.device);
    if (u === undefined) throw new Error(`weight '${w.name}': device ${w.device} has no update stage`);
    if (!stages[u].weights.includes(w.name)) throw new Error(`weight '${w.name}': the update stage of its device ${w.device} (stage ${u}) does not list it`);
  }
  for (const s of stages) {
    for (const n of s.weights) if (weightByName.get(n).device !== s.device) throw new Error(`stage ${s.id}: updates '${n}', whose device is ${weightByName.get(n).device}`);
  }

  // The order: every (per-micro-batch stage, micro-batch) once, on its device.
  if (!Array.isArray(p.order)) throw new Error('training.pipeline.order must be an array of {device, runs}');
  const order = new Map();
  const seen = new Map();
  for (const [k, entry] of p.order.entries()) {
    const d = entry?.device;
    if (!devices.includes(d)) throw new Error(`training.pipeline.order[${k}]: device ${JSON.stringify(d)} is not in training.pipeline.devices`);
    if (order.has(d)) throw new Error(`training.pipeline.order: device ${d} is listed twice`);
    if (!Array.isArray(entry.runs)) throw new Error(`training.pipeline.order[${k}]: "runs" must be an array of [stage, micro-batch]`);
    const runs = entry.runs.map((r, j) => {
      if (!Array.isArray(r) || r.length !== 2 || !Number.isInteger(r[0]) || !Number.isInteger(r[1])) {
        throw new Error(`training.pipeline.order (device ${d}) run ${j}: expected [stage id, micro-batch], got ${JSON.stringify(r)}`);
      }
      const [id, m] = r;
      const s = stages[id];
      if (!s) throw new Error(`training.pipeline.order (device ${d}): run [${r}] names no stage`);
      if (s.kind === 'update') throw new Error(`training.pipeline.order (device ${d}): run [${r}] is an update stage (it runs once per step, after the order)`);
      if (s.device !== d) throw new Error(`training.pipeline.order (device ${d}): run [${r}] is stage ${id} of device ${s.device}`);
      if (m < 0 || m >= M) throw new Error(`training.pipeline.order (device ${d}): run [${r}] has micro-batch ${m}, outside 0..${M - 1}`);
      const key = `${id},${m}`;
      if (seen.has(key)) throw new Error(`training.pipeline.order (device ${d}): run [${r}] is listed twice`);
      seen.set(key, j);
      return [id, m];
    });
    order.set(d, runs);
  }
  for (const s of stages) {
    if (s.kind === 'update') continue;
    for (let m = 0; m < M; m++) {
      if (!seen.has(`${s.id},${m}`)) throw new Error(`training.pipeline.order (device ${s.device}) misses run [${s.id},${m}] (stage ${s.id}, micro-batch ${m})`);
    }
  }
  checkOrderRuns(stages, order, producer, devices);
  return { schedule: p.schedule ?? null, microbatches: M, devices, stages, order, update, producer, predicted: p.predicted ?? null };
}

/**
 * Plays the devices' orders against each other (a run may start once the runs
 * whose outputs or "after" it needs have): a device order that needs a later
 * run of its own device, or orders that wait on each other, are errors
 * rather than a hang.
 */
function checkOrderRuns(stages, order, producer, devices) {
  const needs = (s) => [...new Set([...s.after, ...s.inputs.filter((t) => producer.has(t)).map((t) => producer.get(t))])];
  for (const [d, runs] of order) {
    const pos = new Map(runs.map(([id, m], j) => [`${id},${m}`, j]));
    runs.forEach(([id, m], j) => {
      for (const n of needs(stages[id])) {
        if (stages[n].device === d && pos.get(`${n},${m}`) > j) {
          throw new Error(`training.pipeline.order (device ${d}): run [${id},${m}] comes before run [${n},${m}], whose outputs it reads`);
        }
      }
    });
  }
  const done = new Set();
  const next = new Map(devices.map((d) => [d, 0]));
  for (let progress = true; progress;) {
    progress = false;
    for (const [d, runs] of order) {
      while (next.get(d) < runs.length) {
        const [id, m] = runs[next.get(d)];
        if (!needs(stages[id]).every((n) => done.has(`${n},${m}`))) break;
        done.add(`${id},${m}`);
        next.set(d, next.get(d) + 1);
        progress = true;
      }
    }
  }
  const stuck = [...order].filter(([d, runs]) => next.get(d) < runs.length);
  if (stuck.length) {
    const what = stuck.map(([d, runs]) => {
      const [id, m] = runs[next.get(d)];
      const missing = needs(stages[id]).filter((n) => !done.has(`${n},${m}`));
      return `device ${d} at run [${id},${m}] waits for ${missing.map((n) => `[${n},${m}]`).join(', ')}`;
    });
    throw new Error(`training.pipeline.order deadlocks: ${what.join('; ')}`);
  }
}

/** sha256 of a file's bytes, hex. */
export function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}
