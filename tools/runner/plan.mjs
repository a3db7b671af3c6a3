// Reads and validates OUT_DIR/plan.json into the form the
// scheduler needs. Only the fields the runner uses are checked: stages (id,
// device, model, inputs, outputs, after), inputs, outputs, devices and, when
// present, transfers. Each failure is a RunnerError(BAD_INPUT) naming plan.json.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { badInput } from './errors.mjs';

const isInt = (v) => Number.isInteger(v);

function nameList(v, what) {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string' || !s)) {
    throw new Error(`${what} must be an array of tensor names`);
  }
  if (new Set(v).size !== v.length) throw new Error(`${what} lists a name twice`);
  return v;
}

/**
 * Loads OUT_DIR/plan.json. Returns
 *   { dir, stages: [{id, device, model, modelPath, inputs, outputs, after, deps, index}],
 *     inputs: [{name, devices}], outputs: [{name, device}], devices: [id],
 *     producer: Map(tensor -> stage id), order: [stage ids, topological],
 *     microbatches: M the plan was made for (null: not said),
 *     predictedStepUs: the plan's predicted step for those M micro-batches (or null) }
 * An input with "per_microbatch": false takes the same value in every micro-batch.
 */
export function loadPlan(outDir) {
  const dir = resolve(outDir);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw badInput(`${outDir}: no such deployment directory`);
  const path = join(dir, 'plan.json');
  if (!existsSync(path)) throw badInput(`${path}: missing (not an onnx-autopar output directory?)`);
  let raw;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw badInput(`${path}: not valid JSON (${e.message})`);
  }
  try {
    return validatePlan(raw, dir);
  } catch (e) {
    throw badInput(`${path}: ${e.message}`);
  }
}

/** Validates a parsed plan object; `dir` resolves stage model paths. Throws plain Errors. */
export function validatePlan(raw, dir) {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('top level must be an object');
  // "predicted" is read only for its step_time_us, which counts M micro-batches
  // (one micro-batch = the model as given) only when the plan says M.
  if (raw.format !== undefined && raw.format !== 'onnx-autopar-plan') throw new Error(`unknown format '${raw.format}'`);
  if (raw.version !== undefined && raw.version !== 1) throw new Error(`unsupported version ${raw.version} (runner reads 1)`);
  if (!Array.isArray(raw.stages) || raw.stages.length === 0) throw new Error('"stages" must be a non-empty array (was the deployment written with --stages?)');

  const deviceIds = Array.isArray(raw.devices) ? raw.devices.map((d) => d?.id) : null;
  if (deviceIds && deviceIds.some((d) => !isInt(d))) throw new Error('every device needs an integer "id"');

  const byId = new Map();
  const stages = raw.stages.map((s, index) => {
    const where = `stage #${index}`;
    if (!s || typeof s !== 'object') throw new Error(`${where} is not an object`);
    if (!isInt(s.id) || s.id < 0) throw new Error(`${where}: "id" must be a non-negative integer`);
    if (byId.has(s.id)) throw new Error(`stage id ${s.id} appears twice`);
    if (!isInt(s.device)) throw new Error(`stage ${s.id}: "device" must be an integer`);
    if (deviceIds && !deviceIds.includes(s.device)) throw new Error(`stage ${s.id}: device ${s.device} is not in "devices"`);
    if (typeof s.model !== 'string' || !s.model) throw new Error(`stage ${s.id}: "model" must be a path`);
    const modelPath = resolve(dir, s.model);
    if (!existsSync(modelPath)) throw new Error(`stage ${s.id}: model ${s.model} does not exist`);
    if (s.after !== undefined && (!Array.isArray(s.after) || s.after.some((a) => !isInt(a)))) {
      throw new Error(`stage ${s.id}: "after" must be an array of stage ids`);
    }
    const stage = {
      id: s.id, device: s.device, model: s.model, modelPath, index,
      inputs: nameList(s.inputs, `stage ${s.id}: "inputs"`),
      outputs: nameList(s.outputs, `stage ${s.id}: "outputs"`),
      after: s.after ?? [],
      deps: new Set(),
    };
    if (stage.outputs.length === 0) throw new Error(`stage ${s.id} has no outputs`);
    byId.set(s.id, stage);
    return stage;
  });

  if (raw.microbatches !== undefined && (!isInt(raw.microbatches) || raw.microbatches < 1)) throw new Error('"microbatches" must be a positive integer');
  const inputs = (raw.inputs ?? []).map((i) => {
    if (!i || typeof i.name !== 'string' || !i.name) throw new Error('every entry of "inputs" needs a "name"');
    if (i.devices !== undefined && (!Array.isArray(i.devices) || i.devices.some((d) => !isInt(d)))) {
      throw new Error(`input '${i.name}': "devices" must be an array of device ids`);
    }
    if (i.per_microbatch !== undefined && typeof i.per_microbatch !== 'boolean') throw new Error(`input '${i.name}': "per_microbatch" must be true or false`);
    return { name: i.name, devices: i.devices ?? null, perMicrobatch: i.per_microbatch !== false };
  });
  const inputNames = new Set(nameList(inputs.map((i) => i.name), '"inputs"'));
  const outputs = (raw.outputs ?? []).map((o) => {
    if (!o || typeof o.name !== 'string' || !o.name) throw new Error('every entry of "outputs" needs a "name"');
    return { name: o.name, device: isInt(o.device) ? o.device : null };
  });
  nameList(outputs.map((o) => o.name), '"outputs"');
  if (outputs.length === 0) throw new Error('"outputs" must list the graph outputs');

  const producer = new Map();
  for (const s of stages) {
    for (const t of s.outputs) {
      if (inputNames.has(t)) {
        // A graph output that is a graph input passes through the stage that reads it.
        if (s.inputs.includes(t)) continue;
        throw new Error(`stage ${s.id} outputs '${t}', which is a graph input`);
      }
      if (producer.has(t)) throw new Error(`tensor '${t}' is produced by stages ${producer.get(t)} and ${s.id}`);
      producer.set(t, s.id);
    }
  }
  const transfers = Array.isArray(raw.transfers) ? raw.transfers : null;
  const hasTransfer = (t, src, dst) => transfers.some((x) => x?.tensor === t && x.src === src && x.dst === dst);
  for (const s of stages) {
    for (const a of s.after) {
      if (!byId.has(a)) throw new Error(`stage ${s.id}: "after" names unknown stage ${a}`);
      if (a === s.id) throw new Error(`stage ${s.id} is "after" itself`);
      s.deps.add(a);
    }
    for (const t of s.inputs) {
      if (inputNames.has(t)) {
        const devs = inputs.find((i) => i.name === t).devices;
        if (devs && !devs.includes(s.device)) {
          throw new Error(`stage ${s.id} on device ${s.device} reads input '${t}', which goes only to devices [${devs}]`);
        }
        continue;
      }
      const p = producer.get(t);
      if (p === undefined) throw new Error(`stage ${s.id}: input '${t}' is neither a graph input nor any stage's output`);
      if (p === s.id) throw new Error(`stage ${s.id} consumes its own output '${t}'`);
      s.deps.add(p);
      const src = byId.get(p).device;
      if (transfers && src !== s.device && !hasTransfer(t, src, s.device)) {
        throw new Error(`'${t}' goes from device ${src} (stage ${p}) to device ${s.device} (stage ${s.id}) but "transfers" has no such entry`);
      }
    }
  }
  for (const o of outputs) {
    if (inputNames.has(o.name)) continue;
    const p = producer.get(o.name);
    if (p === undefined) throw new Error(`output '${o.name}' is produced by no stage`);
    if (o.device !== null && byId.get(p).device !== o.device) {
      throw new Error(`output '${o.name}' is said to be on device ${o.device} but stage ${p} runs on device ${byId.get(p).device}`);
    }
  }
  const devices = deviceIds ?? [...new Set(stages.map((s) => s.device))].sort((a, b) => a - b);
  const predicted = raw.predicted?.step_time_us;
  return {
    dir, stages, byId, inputs, outputs, devices, producer, order: topoOrder(stages),
    microbatches: raw.microbatches ?? null,
    predictedStepUs: typeof predicted === 'number' && raw.microbatches !== undefined ? predicted : null,
  };
}

/** Kahn's algorithm; among ready stages the earliest in plan order goes first. */
function topoOrder(stages) {
  const remaining = new Map(stages.map((s) => [s.id, s.deps.size]));
  const users = new Map(stages.map((s) => [s.id, []]));
  for (const s of stages) for (const d of s.deps) users.get(d).push(s);
  const ready = stages.filter((s) => s.deps.size === 0);
  const order = [];
  while (ready.length) {
    ready.sort((a, b) => a.index - b.index);
    const s = ready.shift();
    order.push(s.id);
    for (const u of users.get(s.id)) {
      remaining.set(u.id, remaining.get(u.id) - 1);
      if (remaining.get(u.id) === 0) ready.push(u);
    }
  }
  if (order.length !== stages.length) {
    const stuck = stages.filter((s) => !order.includes(s.id)).map((s) => s.id);
    throw new Error(`stages form a cycle (through stages ${stuck.join(', ')})`);
  }
  return order;
}

/** A one-stage plan for running a plain .onnx model (no plan.json). */
export function singleModelPlan(modelPath, inputNames, outputNames) {
  const dir = resolve(modelPath, '..');
  return validatePlan(
    {
      stages: [{ id: 0, device: 0, model: resolve(modelPath), inputs: inputNames, outputs: outputNames, after: [] }],
      inputs: inputNames.map((name) => ({ name, devices: [0] })),
      outputs: outputNames.map((name) => ({ name, device: 0 })),
    },
    dir,
  );
}
