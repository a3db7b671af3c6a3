// The pipelined schedule of one step: every stage runs once for each of M
// micro-batches. One StepScheduler drives the stages of one device (inside that
// device's worker thread) or, with --sequential, every stage on the main thread.
//
// Order rule (the simulator assumes the same): a device runs one task
// (stage, micro-batch) at a time. When it is free it starts, among its tasks
// whose inputs for that micro-batch have ALL arrived (and whose "after" stages
// are done for it), the one with the smallest key (micro-batch index, stage
// index in plan.json's stage order). For forward-only inference this is the
// GPipe / 1F1B fill order: micro-batch m+1 enters stage 0 while m is in stage 1.
//
// Tensors: graph inputs are the step's inputs for micro-batch m; a stage's
// output goes to the local stages that read it (shared, read-only: ONNX Runtime
// never writes its inputs) and to each other device that has a reader (one
// message per (stage, micro-batch, device), which also says "stage done" for
// devices that only wait on it through "after"). A message's buffer is moved
// (transferred) only when that device is the tensor's sole reader; otherwise the
// receiver gets a copy, so no reader ever sees another one's buffer change.
// Graph outputs are kept, per micro-batch, only in steps that collect them.

/** Microseconds on a clock shared by every thread of the process (CLOCK_MONOTONIC). */
export const nowUs = () => Number(process.hrtime.bigint()) / 1e3;

/**
 * The static routing of a plan, computed once on the main thread and posted to
 * the workers (plain data). stages: [{id, index, device, inputs, outputs, deps}].
 * sends: {stage id: [{device, tensors}]} — what each stage's run must hand to
 * each other device (tensors may be empty: a pure "done" notice).
 */
export function routing(plan) {
  const stages = plan.stages.map((s) => ({ id: s.id, index: s.index, device: s.device, inputs: s.inputs, outputs: s.outputs, deps: [...s.deps] }));
  const sends = {};
  for (const s of stages) {
    const byDevice = new Map();
    for (const r of stages) {
      if (r.device === s.device || !r.deps.includes(s.id)) continue;
      const set = byDevice.get(r.device) ?? new Set();
      for (const t of r.inputs) if (s.outputs.includes(t)) set.add(t);
      byDevice.set(r.device, set);
    }
    sends[s.id] = [...byDevice].sort((a, b) => a[0] - b[0]).map(([device, set]) => ({ device, tensors: [...set].sort() }));
  }
  return { stages, sends, graphInputs: plan.inputs.map((i) => i.name), graphOutputs: plan.outputs.map((o) => o.name) };
}

/** Runs the steps of the stages in `route.stages` on `device` (null: every stage, no sends). */
export class StepScheduler {
  /**
   * opts: { route (from routing()), device (number | null), microbatches,
   *         runStage: async (stageId, feeds, fetches) => outputs,
   *         send: (device, message, transferList) => void }
   */
  constructor({ route, device, microbatches, runStage, send }) {
    this.local = route.stages.filter((s) => device === null || s.device === device).sort((a, b) => a.index - b.index);
    this.byId = new Map(route.stages.map((s) => [s.id, s]));
    this.sends = device === null ? {} : route.sends;
    this.graphInputs = new Set(route.graphInputs);
    this.graphOutputs = new Set(route.graphOutputs);
    this.microbatches = microbatches;
    this.runStage = runStage;
    this.send = send;
    this.inputs = []; // [m] -> {name: tensor}: the graph inputs this device reads
    this.inbox = new Map(); // step -> messages that arrived before the step started
    this.step = null;
    // Local readers of each tensor (per micro-batch), to drop a value after its last read.
    this.localReaders = new Map();
    for (const s of this.local) for (const t of s.inputs) this.localReaders.set(t, (this.localReaders.get(t) ?? 0) + 1);
  }

  /** Sets the graph inputs of every micro-batch: [m] -> {name: tensor}. */
  setInputs(inputs) {
    if (inputs.length !== this.microbatches) throw new Error(`expected inputs for ${this.microbatches} micro-batches, got ${inputs.length}`);
    this.inputs = inputs;
  }

  /**
   * Runs one step. Resolves to { timeline: [{stage, device, microbatch,
   * start_us, end_us}] (shared clock, see nowUs), outputs: [m] -> {name: tensor}
   * (the graph outputs produced here; empty objects unless `collect`),
   * sent: [{tensor, src, dst, bytes, microbatch, at_us}] (handed to other devices) }.
   */
  runStep(step, { collect = false } = {}) {
    if (this.step) return Promise.reject(new Error(`step ${step} started while step ${this.step.index} runs`));
    const M = this.microbatches;
    const st = {
      index: step,
      collect,
      values: Array.from({ length: M }, () => new Map()),
      reads: Array.from({ length: M }, () => new Map(this.localReaders)),
      done: Array.from({ length: M }, () => new Set()),
      pending: [],
      busy: false,
      timeline: [],
      sent: [],
      outputs: Array.from({ length: M }, () => ({})),
    };
    for (let m = 0; m < M; m++) for (const s of this.local) st.pending.push({ stage: s, m });
    // Key order (micro-batch, stage index): this.local is sorted by index.
    st.pending.sort((a, b) => a.m - b.m || a.stage.index - b.stage.index);
    this.step = st;
    return new Promise((resolve, reject) => {
      st.resolve = resolve;
      st.reject = reject;
      for (const msg of this.inbox.get(step) ?? []) this.accept(msg);
      this.inbox.delete(step);
      this.pump();
    });
  }

  /** A message from another device: {step, m, stage, tensors: {name: tensor}}. */
  receive(msg) {
    if (!this.step || this.step.index !== msg.step) {
      const list = this.inbox.get(msg.step) ?? [];
      list.push(msg);
      this.inbox.set(msg.step, list);
      return;
    }
    this.accept(msg);
    this.pump();
  }

  accept({ m, stage, tensors }) {
    const st = this.step;
    st.done[m].add(stage);
    for (const [name, t] of Object.entries(tensors)) st.values[m].set(name, t);
  }

  value(st, m, name) {
    return this.graphInputs.has(name) && !st.values[m].has(name) ? this.inputs[m]?.[name] : st.values[m].get(name);
  }

  ready(st, { stage, m }) {
    for (const d of stage.deps) if (!st.done[m].has(d)) return false;
    for (const t of stage.inputs) if (this.value(st, m, t) === undefined) return false;
    return true;
  }

  pump() {
    const st = this.step;
    if (!st || st.busy || st.failed) return;
    if (st.pending.length === 0) {
      this.step = null;
      st.resolve({ timeline: st.timeline, outputs: st.outputs, sent: st.sent });
      return;
    }
    const k = st.pending.findIndex((task) => this.ready(st, task));
    if (k < 0) return; // waiting for another device
    const [task] = st.pending.splice(k, 1);
    st.busy = true;
    this.execute(st, task).then(
      () => {
        st.busy = false;
        this.pump();
      },
      (e) => {
        st.failed = true;
        this.step = null;
        st.reject(e);
      },
    );
  }

  async execute(st, { stage, m }) {
    const feeds = {};
    for (const t of stage.inputs) feeds[t] = this.value(st, m, t);
    const start_us = nowUs();
    const out = await this.runStage(stage.id, feeds, stage.outputs);
    const end_us = nowUs();
    st.timeline.push({ stage: stage.id, device: stage.device, microbatch: m, start_us, end_us });
    for (const t of stage.outputs) if (!out[t]) throw new Error(`stage ${stage.id} returned no '${t}'`);
    // Inputs read for the last time on this device are dropped.
    for (const t of stage.inputs) {
      const left = st.reads[m].get(t) - 1;
      st.reads[m].set(t, left);
      if (left === 0) st.values[m].delete(t);
    }
    const collected = new Set();
    for (const t of stage.outputs) {
      if (this.graphOutputs.has(t) && st.collect) {
        st.outputs[m][t] = out[t];
        collected.add(t);
      }
      if (st.reads[m].get(t)) st.values[m].set(t, out[t]);
    }
    st.done[m].add(stage.id);
    const sends = this.sends[stage.id] ?? [];
    for (const { device, tensors } of sends) {
      const payload = {};
      const transfer = [];
      for (const t of tensors) {
        payload[t] = out[t];
        st.sent.push({ tensor: t, src: stage.device, dst: device, bytes: byteSize(out[t]), microbatch: m, at_us: end_us });
        const sole = !collected.has(t) && !st.reads[m].get(t) && sends.filter((x) => x.tensors.includes(t)).length === 1;
        if (sole && movable(out[t])) transfer.push(out[t].data.buffer);
      }
      this.send(device, { step: st.index, m, stage: stage.id, tensors: payload }, transfer);
    }
  }
}

/** A tensor whose typed array owns its whole buffer (so moving the buffer moves nothing else). */
export const movable = (t) => ArrayBuffer.isView(t.data) && t.data.byteOffset === 0 && t.data.byteLength === t.data.buffer.byteLength;

/** Bytes of a tensor's data (strings: their UTF-8 length). */
export const byteSize = (t) => (ArrayBuffer.isView(t.data) ? t.data.byteLength : t.data.reduce((a, s) => a + Buffer.byteLength(s), 0));
