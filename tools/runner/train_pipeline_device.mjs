// One device of a split training step (plan.json
// training.pipeline): runs the device's "order" of (stage, micro-batch) runs,
// one at a time, each once its inputs for that micro-batch are here; then
// its update stage once. Used inside train_worker.mjs (one worker thread per
// device); it holds no ORT state itself (runStage does), so it is testable
// in-process.
//
// Inputs of a run: data inputs (the step's values for the micro-batch, from
// the main thread), trained weights (the value of this step: the init
// model's at step 0, then the update's), outputs of earlier stages for the
// same micro-batch (local, or sent by the device that ran the stage, one
// message per (stage, micro-batch, device), which also says "done" for
// "after"). A stage output is kept only while a local stage of that
// micro-batch still reads it.
//
// Outputs: the loss of each micro-batch goes back to the main thread; a
// weight's gradient is summed in float64 (train_common.mjs) and its mean fed
// to the update stage, which also takes and returns the optimizer state
// (kept here between steps) and, when the optimizer has one, the step t. New
// values of weights that other devices read are sent to them, tagged with
// the step they are for.
//
// Stashes: micro-batch m counts as stashed on this device from its first
// forward run of m here while the device holds a forward stage's output for
// m that a backward stage here still reads. A value that arrived before the
// device ran any forward stage of m is an input waiting for its run, not a
// stash.
import { GradientAccumulator, zeros } from './train_common.mjs';
import { movable, nowUs } from './schedule.mjs';

/**
 * The static routing of a split step, computed once on the main thread and
 * posted to every worker (plain data).
 */
export function pipelineRoute(plan) {
  const p = plan.pipeline;
  const stages = p.stages.map(({ id, kind, device, inputs, outputs, after, weights }) => ({ id, kind, device, inputs, outputs, after, weights }));
  const perMb = stages.filter((s) => s.kind !== 'update');
  // Each stage's run hands each other device that reads it (or waits on it) its outputs there.
  const sends = {};
  for (const s of perMb) {
    const byDevice = new Map();
    for (const r of perMb) {
      if (r.device === s.device) continue;
      const reads = r.inputs.filter((t) => s.outputs.includes(t));
      if (!reads.length && !r.after.includes(s.id)) continue;
      const set = byDevice.get(r.device) ?? new Set();
      for (const t of reads) set.add(t);
      byDevice.set(r.device, set);
    }
    sends[s.id] = [...byDevice].sort((a, b) => a[0] - b[0]).map(([device, set]) => ({ device, tensors: [...set].sort() }));
  }
  const weightReaders = {};
  for (const w of plan.weights) {
    weightReaders[w.name] = [...new Set(perMb.filter((s) => s.inputs.includes(w.name)).map((s) => s.device))].sort((a, b) => a - b);
  }
  return {
    microbatches: p.microbatches,
    stages,
    order: Object.fromEntries(p.order),
    update: Object.fromEntries(p.update),
    weights: plan.weights.map(({ name, type, shape, device, gradient, update }) => ({ name, type, shape, device, gradient, update })),
    weightReaders,
    dataInputs: plan.dataInputs.map((d) => d.name),
    lossOutput: plan.loss.output,
    stepInput: plan.stepInput,
    sends,
  };
}

/** The weights device d needs values of: those its stages read and those it updates. */
export function weightsOf(route, d) {
  return route.weights.filter((w) => w.device === d || route.weightReaders[w.name].includes(d)).map((w) => w.name);
}

/** The data inputs device d's stages read. */
export function dataOf(route, d) {
  const names = new Set(route.stages.filter((s) => s.device === d && s.kind !== 'update').flatMap((s) => s.inputs));
  return route.dataInputs.filter((n) => names.has(n));
}

export class PipelineDevice {
  /**
   * opts: { route (pipelineRoute), device, runStage: async (stageId, feeds,
   * fetches) => outputs, send: (device, message, transferList) => void,
   * now: clock in µs shared by every thread (default nowUs) }
   */
  constructor({ route, device, runStage, send, now = nowUs }) {
    this.route = route;
    this.device = device;
    this.runStage = runStage;
    this.send = send;
    this.now = now;
    this.M = route.microbatches;
    this.stages = new Map(route.stages.map((s) => [s.id, s]));
    this.runs = (route.order[device] ?? []).map(([id, m]) => [this.stages.get(id), m]);
    this.updateStage = route.update[device] === undefined ? null : this.stages.get(route.update[device]);
    this.dataNames = new Set(route.dataInputs);
    this.weightByName = new Map(route.weights.map((w) => [w.name, w]));
    this.homed = route.weights.filter((w) => w.device === device);
    this.gradientOf = new Map(this.homed.map((w) => [w.gradient, w]));
    const local = route.stages.filter((s) => s.device === device && s.kind !== 'update');
    // Local reads of each stage output per micro-batch (data and weights are not counted: they are not dropped).
    this.localReaders = new Map();
    for (const s of local) {
      for (const t of s.inputs) if (!this.dataNames.has(t) && !this.weightByName.has(t)) this.localReaders.set(t, (this.localReaders.get(t) ?? 0) + 1);
    }
    // Forward outputs a local backward stage reads: what a stash holds here.
    const forwardOutputs = new Set(route.stages.filter((s) => s.kind === 'forward').flatMap((s) => s.outputs));
    this.stashNames = new Set(local.filter((s) => s.kind === 'backward').flatMap((s) => s.inputs).filter((t) => forwardOutputs.has(t)));
    this.weights = new Map(); // name -> Map(step -> tensor): the value each step reads
    this.state = new Map(); // optimizer state of the homed weights
    for (const w of this.homed) for (const st of w.update.state) this.state.set(st.name, zeros(w.type, w.shape));
    this.gradients = new GradientAccumulator(this.homed);
    this.inbox = new Map(); // step -> stage-output messages that came before the step began
    this.step = null;
    this.wake = null;
  }

  /** The weights' values for step 0 ({name: tensor}). */
  setWeights(values) {
    for (const [name, t] of Object.entries(values)) this.weights.set(name, new Map([[0, t]]));
  }

  /** The current values of the weights this device updates. */
  homedWeights(step) {
    return Object.fromEntries(this.homed.map((w) => [w.name, this.weights.get(w.name).get(step)]));
  }

  /** A message from another device: {type: 'out', step, m, stage, tensors} or {type: 'weights', step, tensors}. */
  receive(msg) {
    if (msg.type === 'weights') {
      for (const [name, t] of Object.entries(msg.tensors)) {
        const versions = this.weights.get(name) ?? new Map();
        versions.set(msg.step, t);
        this.weights.set(name, versions);
      }
    } else if (this.step?.index === msg.step) {
      this.accept(msg);
    } else {
      const list = this.inbox.get(msg.step) ?? [];
      list.push(msg);
      this.inbox.set(msg.step, list);
    }
    this.wake?.();
  }

  accept({ m, stage, tensors }) {
    const st = this.step;
    st.done[m].add(stage);
    for (const [name, t] of Object.entries(tensors)) st.values[m].set(name, t);
  }

  value(st, m, name) {
    if (this.dataNames.has(name)) return st.data[m]?.[name];
    if (this.weightByName.has(name)) return this.weights.get(name)?.get(st.index);
    return st.values[m].get(name);
  }

  ready(st, stage, m) {
    for (const a of stage.after) if (!st.done[m].has(a)) return false;
    for (const t of stage.inputs) if (this.value(st, m, t) === undefined) return false;
    return true;
  }

  /** Resolves once cond() holds (re-checked whenever a message arrives). */
  until(cond) {
    if (cond()) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = () => {
        if (!cond()) return;
        this.wake = null;
        resolve();
      };
    });
  }

  /**
   * Runs step `index` (0-based) on data [m] -> {name: tensor} (the data
   * inputs this device reads). Resolves to { timeline: [{device, stage, kind,
   * microbatch, start_us, end_us}], losses: [[m, loss]], max_stashes }.
   */
  async runStep(index, data) {
    if (this.step) throw new Error(`step ${index} started while step ${this.step.index} runs`);
    const M = this.M;
    const st = {
      index,
      data,
      values: Array.from({ length: M }, () => new Map()),
      reads: Array.from({ length: M }, () => new Map(this.localReaders)),
      done: Array.from({ length: M }, () => new Set()),
      forwardRan: new Array(M).fill(false),
      timeline: [],
      losses: [],
      maxStashes: 0,
    };
    this.step = st;
    this.gradients.begin();
    for (const msg of this.inbox.get(index) ?? []) this.accept(msg);
    this.inbox.delete(index);
    try {
      for (const [stage, m] of this.runs) {
        await this.until(() => this.ready(st, stage, m));
        await this.execute(st, stage, m);
      }
      if (this.updateStage) await this.update(st);
    } finally {
      this.step = null;
      this.wake = null;
    }
    // Values older than the next step are read no more.
    for (const versions of this.weights.values()) for (const k of versions.keys()) if (k <= index) versions.delete(k);
    return { timeline: st.timeline, losses: st.losses, max_stashes: st.maxStashes };
  }

  async execute(st, stage, m) {
    const feeds = {};
    for (const t of stage.inputs) feeds[t] = this.value(st, m, t);
    const start_us = this.now();
    const out = await this.runStage(stage.id, feeds, stage.outputs);
    const end_us = this.now();
    st.timeline.push({ device: this.device, stage: stage.id, kind: stage.kind, microbatch: m, start_us, end_us });
    for (const t of stage.outputs) if (!out[t]) throw new Error(`stage ${stage.id} returned no '${t}'`);
    if (stage.outputs.includes(this.route.lossOutput)) st.losses.push([m, Number(out[this.route.lossOutput].data[0])]);
    // Sent before the gradients are summed: the sum takes milliseconds (a
    // pass over the stage's weight gradients) that a device waiting for
    // these tensors need not wait.
    const sends = this.route.sends[stage.id] ?? [];
    for (const { device, tensors } of sends) {
      const payload = {};
      const transfer = [];
      for (const t of tensors) {
        payload[t] = out[t];
        // Moved only to its sole reader: nothing here (no local stage, no
        // gradient sum) and no other device reads it.
        const sole = !st.reads[m].get(t) && !this.gradientOf.has(t) && sends.filter((x) => x.tensors.includes(t)).length === 1;
        if (sole && movable(out[t])) transfer.push(out[t].data.buffer);
      }
      this.send(device, { type: 'out', step: st.index, m, stage: stage.id, tensors: payload }, transfer);
    }
    if (stage.kind === 'forward') st.forwardRan[m] = true;
    // Inputs read for the last time here are dropped.
    for (const t of stage.inputs) {
      if (!st.reads[m].has(t)) continue;
      const left = st.reads[m].get(t) - 1;
      st.reads[m].set(t, left);
      if (left === 0) st.values[m].delete(t);
    }
    for (const t of stage.outputs) {
      const w = this.gradientOf.get(t);
      if (w) this.gradients.add(w.name, out[t]);
      if (st.reads[m].get(t)) st.values[m].set(t, out[t]);
    }
    st.done[m].add(stage.id);
    let stashed = 0;
    for (let k = 0; k < this.M; k++) {
      if (st.forwardRan[k] && [...this.stashNames].some((t) => st.values[k].has(t))) stashed++;
    }
    st.maxStashes = Math.max(st.maxStashes, stashed);
  }

  /** The update stage: the homed weights' mean gradients, values and state in; new values and state out. */
  async update(st) {
    const stage = this.updateStage;
    const feeds = {};
    for (const w of this.homed) {
      feeds[w.update.weight] = this.weights.get(w.name).get(st.index);
      feeds[w.update.gradient] = this.gradients.mean(w.name, this.M);
      for (const s of w.update.state) feeds[s.name] = this.state.get(s.name);
    }
    if (this.route.stepInput) feeds[this.route.stepInput] = { type: 'float32', dims: [], data: Float32Array.of(st.index + 1) };
    const fetches = this.homed.flatMap((w) => [w.update.output, ...w.update.state.map((s) => s.output)]);
    const start_us = this.now();
    const out = await this.runStage(stage.id, feeds, fetches);
    const end_us = this.now();
    st.timeline.push({ device: this.device, stage: stage.id, kind: 'update', microbatch: null, start_us, end_us });
    const next = st.index + 1;
    const toSend = new Map(); // device -> {name: tensor}
    for (const w of this.homed) {
      const t = out[w.update.output];
      if (!t) throw new Error(`stage ${stage.id} returned no '${w.update.output}'`);
      this.weights.get(w.name).set(next, t);
      for (const s of w.update.state) this.state.set(s.name, out[s.output]);
      for (const d of this.route.weightReaders[w.name]) {
        if (d === this.device) continue;
        const msg = toSend.get(d) ?? {};
        msg[w.name] = t;
        toSend.set(d, msg);
      }
    }
    for (const [d, tensors] of toSend) this.send(d, { type: 'weights', step: next, tensors }, []);
  }
}
