// Executes a validated plan: one DeviceSessions per device, either on its own
// worker thread (default: devices run concurrently) or all on the main thread
// (--sequential: one stage at a time, in plan topological order).
//
// The main thread is the scheduler and the only place tensors live between
// stages: a stage starts when its device is idle and every stage it depends
// on ("after" plus the producers of its inputs) is done; its inputs are copied
// to the device's worker, its outputs copied back. A device runs one stage at
// a time; among ready stages of a device the earliest in plan order goes first.
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DeviceSessions } from './device_sessions.mjs';
import { RunnerError, badInput, internal } from './errors.mjs';

/** Proxy for a DeviceSessions living in a worker thread (same async interface). */
class WorkerDevice {
  constructor(device) {
    this.device = device;
    this.pending = new Map();
    this.nextReq = 0;
    this.worker = new Worker(new URL('./device_worker.mjs', import.meta.url), { workerData: { device } });
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
  call(msg) {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      const req = this.nextReq++;
      this.pending.set(req, { resolve, reject });
      this.worker.postMessage({ ...msg, req });
    });
  }
  load(stages, opts) {
    return this.call({ op: 'load', stages, opts });
  }
  run(id, feeds, fetches) {
    return this.call({ op: 'run', id, feeds, fetches });
  }
  async close() {
    const files = await this.call({ op: 'close' });
    await this.worker.terminate();
    return files;
  }
  terminate() {
    return this.worker.terminate();
  }
}

/**
 * Loads every stage model. opts: { concurrent, threads, profilePrefix, verbose }.
 * Returns { meta: Map(stage id -> {inputs, outputs}), run(inputs), close(), mode }.
 * Checks each stage model against the plan (its inputs/outputs, element types
 * of tensors passed between stages).
 */
export async function openDeployment(plan, opts = {}) {
  const concurrent = opts.concurrent !== false;
  const devices = [...new Set(plan.stages.map((s) => s.device))].sort((a, b) => a - b);
  const threads = opts.threads ?? (concurrent ? Math.max(1, Math.floor(availableParallelism() / devices.length)) : 0);
  const execs = new Map(devices.map((d) => [d, concurrent ? new WorkerDevice(d) : new DeviceSessions(d)]));
  const sessionOpts = { threads, verbose: !!opts.verbose };
  const meta = new Map();
  try {
    const loaded = await Promise.all(
      devices.map((d) =>
        execs.get(d).load(
          plan.stages
            .filter((s) => s.device === d)
            .map((s) => ({ id: s.id, modelPath: s.modelPath, profilePrefix: opts.profilePrefix ? `${opts.profilePrefix}_s${s.id}` : null })),
          sessionOpts,
        ),
      ),
    );
    for (const m of loaded) for (const [id, v] of Object.entries(m)) meta.set(Number(id), v);
    checkStagesAgainstModels(plan, meta);
  } catch (e) {
    await Promise.all([...execs.values()].map((x) => x.terminate?.()));
    throw e;
  }
  return {
    meta,
    mode: concurrent ? 'workers' : 'sequential',
    threads,
    run: (inputs) => runStages(plan, execs, inputs, concurrent ? Infinity : 1),
    async close() {
      const files = [];
      for (const x of execs.values()) files.push(...(await x.close()));
      return files;
    },
    async abort() {
      await Promise.all([...execs.values()].map((x) => x.terminate?.()));
    },
  };
}

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

/** Runs all stages once. Returns { outputs: {name: tensor}, timeline, transfers, wallMs }. */
function runStages(plan, execs, inputs, maxInFlight) {
  const values = new Map(Object.entries(inputs));
  const uses = new Map();
  const bump = (t) => uses.set(t, (uses.get(t) ?? 0) + 1);
  for (const s of plan.stages) s.inputs.forEach(bump);
  for (const o of plan.outputs) bump(o.name);
  for (const i of plan.inputs) if (!values.has(i.name)) return Promise.reject(badInput(`no value for graph input '${i.name}'`));

  const done = new Set();
  const started = new Set();
  const busy = new Set();
  const timeline = [];
  const transfers = [];
  const t0 = performance.now();
  const ms = () => +(performance.now() - t0).toFixed(3);

  return new Promise((resolve, reject) => {
    let failed = false;
    const dispatch = () => {
      if (failed) return;
      if (done.size === plan.stages.length) {
        const outputs = {};
        for (const o of plan.outputs) outputs[o.name] = values.get(o.name);
        resolve({ outputs, timeline, transfers, wallMs: ms() });
        return;
      }
      for (const id of plan.order) {
        if (busy.size >= maxInFlight) break;
        const s = plan.byId.get(id);
        if (started.has(id) || busy.has(s.device) || ![...s.deps].every((d) => done.has(d))) continue;
        started.add(id);
        busy.add(s.device);
        const feeds = {};
        for (const t of s.inputs) {
          feeds[t] = values.get(t);
          const p = plan.producer.get(t);
          const src = p === undefined ? null : plan.byId.get(p).device;
          if (src !== null && src !== s.device) transfers.push({ tensor: t, src, dst: s.device, bytes: byteSize(feeds[t]) });
          uses.set(t, uses.get(t) - 1);
          if (uses.get(t) === 0) values.delete(t);
        }
        const start = ms();
        execs.get(s.device).run(id, feeds, s.outputs).then(
          (out) => {
            timeline.push({ stage: id, device: s.device, start_ms: start, end_ms: ms() });
            for (const t of s.outputs) {
              if (!out[t]) return fail(internal(`stage ${id} returned no '${t}'`));
              if (uses.get(t)) values.set(t, out[t]);
            }
            done.add(id);
            busy.delete(s.device);
            dispatch();
          },
          fail,
        );
      }
    };
    const fail = (e) => {
      if (!failed) (failed = true), reject(e);
    };
    dispatch();
  });
}

const byteSize = (t) => (ArrayBuffer.isView(t.data) ? t.data.byteLength : t.data.reduce((a, s) => a + Buffer.byteLength(s), 0));
