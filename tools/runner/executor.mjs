// Executes a validated plan as a pipeline: one DeviceSessions per device on its
// own worker thread (default: devices run concurrently), or every stage on the
// main thread (--sequential: one task at a time). Sessions are created once by
// openDeployment and reused by every step.
//
// A step runs every stage for each of the M micro-batches under the order rule
// of schedule.mjs; the workers hand tensors to each other directly. The main
// thread starts each step on every worker, waits for all of them (steps do not
// overlap) and collects the timelines and, when asked, the graph outputs.
// Step time = first task start to last task end, on a clock all threads share.
import { MessageChannel, Worker } from 'node:worker_threads';
import { DeviceSessions } from './device_sessions.mjs';
import { RunnerError, badInput, internal } from './errors.mjs';
import { StepScheduler, routing } from './schedule.mjs';
import { cpuShare, schedTotals } from './host_load.mjs';

/**
 * Proxy for one device's worker thread (device_worker.mjs, or another entry
 * with the same request/response protocol over postMessage).
 */
export class WorkerDevice {
  constructor(device, entry = new URL('./device_worker.mjs', import.meta.url)) {
    this.device = device;
    this.pending = new Map();
    this.nextReq = 0;
    this.worker = new Worker(entry, { workerData: { device } });
    this.worker.on('message', (m) => {
      const p = this.pending.get(m.req);
      this.pending.delete(m.req);
      if (m.ok) p.resolve(m.result);
      else p.reject(new RunnerError(m.error.message, m.error.code));
    });
    this.worker.on('error', (e) => this.failAll(internal(`device ${device} worker crashed: ${e.message}`)));
    this.worker.on('exit', (code) => {
      this.exited = internal(`device ${device} worker exited (code ${code})`);
      this.failAll(this.exited);
    });
  }
  failAll(err) {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
  call(msg, transfer = []) {
    if (this.exited || this.terminated) return Promise.reject(this.exited ?? internal(`device ${this.device} worker was stopped`));
    return new Promise((resolve, reject) => {
      const req = this.nextReq++;
      this.pending.set(req, { resolve, reject });
      this.worker.postMessage({ ...msg, req }, transfer);
    });
  }
  async close() {
    if (this.terminated || this.exited) return [];
    const files = await this.call({ op: 'close' });
    await this.terminate();
    return files;
  }
  terminate() {
    this.terminated = true;
    return this.worker.terminate();
  }
}

/**
 * Loads every stage model. opts: { concurrent, threads (intra-op threads per
 * session, 0 = ORT's default), microbatches, profilePrefix, verbose }.
 * Returns { meta: Map(stage id -> {inputs, outputs}), mode, threads,
 *           setInputs([m] -> {name: tensor}), run({warmup, repeat}), close() }.
 * Checks each stage model against the plan (its inputs/outputs, element types
 * of tensors passed between stages).
 */
export async function openDeployment(plan, opts = {}) {
  const concurrent = opts.concurrent !== false;
  const microbatches = opts.microbatches ?? 1;
  const threads = opts.threads ?? 1;
  const devices = [...new Set(plan.stages.map((s) => s.device))].sort((a, b) => a - b);
  const route = routing(plan);
  const sessionOpts = { threads, verbose: !!opts.verbose };
  const stageSpec = (s) => ({ id: s.id, modelPath: s.modelPath, profilePrefix: opts.profilePrefix ? `${opts.profilePrefix}_s${s.id}` : null });
  const exec = concurrent
    ? await workerExecutor(plan, devices, route, microbatches, stageSpec, sessionOpts)
    : await mainThreadExecutor(plan, route, microbatches, stageSpec, sessionOpts);
  try {
    checkStagesAgainstModels(plan, exec.meta);
  } catch (e) {
    await exec.abort();
    throw e;
  }
  return {
    meta: exec.meta,
    mode: concurrent ? 'workers' : 'sequential',
    threads,
    microbatches,
    setInputs: (inputs) => exec.setInputs(inputs),
    run: (o) => runSteps(plan, exec, microbatches, o),
    close: () => exec.close(),
    abort: () => exec.abort(),
  };
}

async function workerExecutor(plan, devices, route, microbatches, stageSpec, sessionOpts) {
  const workers = new Map(devices.map((d) => [d, new WorkerDevice(d)]));
  const abort = () => Promise.all([...workers.values()].map((w) => w.terminate()));
  const meta = new Map();
  try {
    const loaded = await Promise.all(devices.map((d) => workers.get(d).call({ op: 'load', stages: plan.stages.filter((s) => s.device === d).map(stageSpec), opts: sessionOpts })));
    for (const m of loaded) for (const [id, v] of Object.entries(m)) meta.set(Number(id), v);
    // One MessageChannel per pair of devices: tensors go worker to worker.
    const peers = new Map(devices.map((d) => [d, {}]));
    for (const a of devices) {
      for (const b of devices) {
        if (b <= a) continue;
        const { port1, port2 } = new MessageChannel();
        peers.get(a)[b] = port1;
        peers.get(b)[a] = port2;
      }
    }
    await Promise.all(devices.map((d) => workers.get(d).call({ op: 'setup', route, microbatches, peers: peers.get(d) }, Object.values(peers.get(d)))));
  } catch (e) {
    await abort();
    throw e;
  }
  const readers = (d) => new Set(plan.stages.filter((s) => s.device === d).flatMap((s) => s.inputs));
  return {
    meta,
    abort,
    async setInputs(inputs) {
      // Each worker gets only the graph inputs its stages read.
      await Promise.all(devices.map((d) => {
        const mine = readers(d);
        return workers.get(d).call({ op: 'inputs', inputs: inputs.map((mb) => Object.fromEntries(Object.entries(mb).filter(([n]) => mine.has(n)))) });
      }));
    },
    async step(k, collect) {
      try {
        const parts = await Promise.all(devices.map((d) => workers.get(d).call({ op: 'step', step: k, collect })));
        return mergeParts(parts, microbatches);
      } catch (e) {
        // A failed device leaves the others waiting for its tensors.
        await abort();
        throw e;
      }
    },
    async close() {
      const files = [];
      for (const w of workers.values()) files.push(...(await w.close()));
      return files;
    },
  };
}

async function mainThreadExecutor(plan, route, microbatches, stageSpec, sessionOpts) {
  const sessions = new DeviceSessions('main');
  let meta;
  try {
    meta = new Map(Object.entries(await sessions.load(plan.stages.map(stageSpec), sessionOpts)).map(([k, v]) => [Number(k), v]));
  } catch (e) {
    await sessions.close().catch(() => {});
    throw e;
  }
  const scheduler = new StepScheduler({ route, device: null, microbatches, runStage: (id, feeds, fetches) => sessions.run(id, feeds, fetches), send: () => {} });
  return {
    meta,
    abort: () => sessions.close().catch(() => {}),
    setInputs: async (inputs) => scheduler.setInputs(inputs),
    step: async (k, collect) => mergeParts([await scheduler.runStep(k, { collect })], microbatches),
    close: () => sessions.close(),
  };
}

function mergeParts(parts, microbatches) {
  const timeline = parts.flatMap((p) => p.timeline).sort((a, b) => a.start_us - b.start_us);
  const sent = parts.flatMap((p) => p.sent ?? []);
  const outputs = Array.from({ length: microbatches }, (_, m) => Object.assign({}, ...parts.map((p) => p.outputs[m])));
  return { timeline, outputs, sent };
}

/**
 * Runs `warmup` untimed steps, then `repeat` timed ones. The last step keeps the
 * graph outputs of every micro-batch. Returns { steps: [{step_us, timeline}]
 * (timed steps), outputs: [m] -> {name: tensor}, transfers (what one
 * micro-batch hands between devices), cpu_share (over the timed steps) }.
 */
async function runSteps(plan, exec, microbatches, { warmup = 0, repeat = 1 } = {}) {
  for (let k = 0; k < warmup; k++) await exec.step(k, false);
  const steps = [];
  let last;
  const before = schedTotals();
  for (let k = 0; k < repeat; k++) {
    last = await exec.step(warmup + k, k === repeat - 1);
    const t0 = Math.min(...last.timeline.map((t) => t.start_us));
    const t1 = Math.max(...last.timeline.map((t) => t.end_us));
    steps.push({ step_us: t1 - t0, t0 });
  }
  const cpu_share = cpuShare(before, schedTotals());
  const t0 = steps.at(-1).t0;
  const timeline = last.timeline.map((t) => ({ ...t, start_us: round3(t.start_us - t0), end_us: round3(t.end_us - t0) }));
  const transfers = last.sent.filter((x) => x.microbatch === 0).sort((a, b) => a.at_us - b.at_us).map(({ tensor, src, dst, bytes }) => ({ tensor, src, dst, bytes }));
  return { steps: steps.map((s) => s.step_us), timeline, outputs: last.outputs, transfers, cpu_share };
}

const round3 = (v) => Math.round(v * 1000) / 1000;

/** The plan's stage inputs/outputs must be exactly the model's; types must agree across stages. */
function checkStagesAgainstModels(plan, meta) {
  const typeOf = new Map(); // tensor -> [type, stage id] from its producer
  for (const s of plan.stages) {
    const m = meta.get(s.id);
    const modelIn = m.inputs.map((i) => i.name);
    const modelOut = new Set(m.outputs.map((o) => o.name));
    for (const n of modelIn) if (!s.inputs.includes(n)) throw badInput(`stage ${s.id}: ${s.model} takes input '${n}' that plan.json does not list`);
    for (const n of s.inputs) if (!modelIn.includes(n)) throw badInput(`stage ${s.id}: plan.json lists input '${n}' that ${s.model} does not take`);
    for (const n of s.outputs) if (!modelOut.has(n)) throw badInput(`stage ${s.id}: plan.json lists output '${n}' that ${s.model} does not produce`);
    for (const o of m.outputs) typeOf.set(o.name, [o.type, s.id]);
  }
  for (const s of plan.stages) {
    for (const i of meta.get(s.id).inputs) {
      const p = typeOf.get(i.name);
      if (p && plan.producer.get(i.name) === p[1] && p[0] !== i.type) {
        throw badInput(`'${i.name}' is ${p[0]} out of stage ${p[1]} but stage ${s.id} takes ${i.type}`);
      }
    }
  }
}
