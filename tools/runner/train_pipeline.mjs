// The split training step (plan.json training.pipeline; README.md, "Split training steps"):
// one worker thread per device (train_worker.mjs), each running its own
// order of (stage, micro-batch) runs and then its update stage, handing
// stage outputs and new weight values straight to the other workers.
//
// The main thread runs the init model once (the weights' initial values,
// as the unsplit step starts from), makes each step's data exactly as the
// unsplit path does (train_common.mjs) and posts each worker the data inputs
// its stages read, starts every step on every worker and waits for all of
// them (steps do not overlap), and gathers the losses, the timeline and, at
// the end, the trained weights from the devices that update them.
import { MessageChannel } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { badInput, internal } from './errors.mjs';
import { WorkerDevice } from './executor.mjs';
import { createSession, runSession } from './ort_session.mjs';
import { checkInitial, microbatchData } from './train_common.mjs';
import { dataOf, pipelineRoute, weightsOf } from './train_pipeline_device.mjs';
import { nowUs } from './schedule.mjs';

const WORKER = new URL('./train_worker.mjs', import.meta.url);

/** The initial weights: the unsplit step's init model, run once here. */
async function initialWeights(plan, threads) {
  const session = await createSession(plan.models.init, { threads });
  try {
    const out = await runSession(session, {}, plan.weights.map((w) => w.initial), 'init model');
    const weights = {};
    for (const w of plan.weights) {
      const bad = checkInitial(out[w.initial], w);
      if (bad) throw internal(bad);
      weights[w.name] = out[w.initial];
    }
    return weights;
  } finally {
    await session.release().catch(() => {});
  }
}

/** Each stage model's inputs and outputs must be the ones plan.json says. */
function checkModels(plan, meta) {
  for (const s of plan.pipeline.stages) {
    const m = meta.get(s.id);
    const inputs = m.inputs.map((i) => i.name);
    const outputs = new Set(m.outputs.map((o) => o.name));
    let wantIn = s.inputs;
    let wantOut = s.outputs;
    let optional = [];
    if (s.kind === 'update') {
      const ws = plan.weights.filter((w) => s.weights.includes(w.name));
      wantIn = ws.flatMap((w) => [w.update.weight, w.update.gradient, ...w.update.state.map((x) => x.name)]);
      wantOut = ws.flatMap((w) => [w.update.output, ...w.update.state.map((x) => x.output)]);
      optional = plan.stepInput ? [plan.stepInput] : [];
    }
    for (const n of inputs) if (!wantIn.includes(n) && !optional.includes(n)) throw badInput(`stage ${s.id}: ${s.file} takes input '${n}' that plan.json does not give it`);
    for (const n of wantIn) if (!inputs.includes(n)) throw badInput(`stage ${s.id}: plan.json gives input '${n}' that ${s.file} does not take`);
    for (const n of wantOut) if (!outputs.has(n)) throw badInput(`stage ${s.id}: plan.json expects output '${n}' that ${s.file} does not produce`);
  }
}

/**
 * Trains o.steps steps of the split step. onReady() once the models are
 * loaded and checked, onStep(s, loss, ms) after each step.
 * Returns { weights: {name: tensor}, loss: [per step], step_ms: [per step],
 * timeline: [{step, runs: [{device, stage, kind, microbatch, start_us,
 * end_us}], max_stashes: [per device]}] (µs since the first step began),
 * devices: [ids], max_stashes: [per device, over all steps] }.
 */
export async function trainPipeline(o, plan, onStep = () => {}, onReady = () => {}) {
  const p = plan.pipeline;
  const M = p.microbatches;
  const route = pipelineRoute(plan);
  const devices = p.devices.filter((d) => p.stages.some((s) => s.device === d));
  const initial = await initialWeights(plan, o.threads);
  const workers = new Map(devices.map((d) => [d, new WorkerDevice(d, WORKER)]));
  const abort = () => Promise.all([...workers.values()].map((w) => w.terminate()));
  const on = (d, msg, transfer) => workers.get(d).call(msg, transfer);
  try {
    const meta = new Map();
    const loaded = await Promise.all(devices.map((d) => on(d, {
      op: 'load', stages: p.stages.filter((s) => s.device === d).map((s) => ({ id: s.id, modelPath: s.modelPath })), opts: { threads: o.threads },
    })));
    for (const part of loaded) for (const [id, v] of Object.entries(part)) meta.set(Number(id), v);
    checkModels(plan, meta);
    // One MessageChannel per pair of devices: tensors and weights go worker to worker.
    const peers = new Map(devices.map((d) => [d, {}]));
    for (const a of devices) {
      for (const b of devices) {
        if (b <= a) continue;
        const { port1, port2 } = new MessageChannel();
        peers.get(a)[b] = port1;
        peers.get(b)[a] = port2;
      }
    }
    await Promise.all(devices.map((d) => on(d, {
      op: 'setup', route, peers: peers.get(d), weights: Object.fromEntries(weightsOf(route, d).map((n) => [n, initial[n]])),
    }, Object.values(peers.get(d)))));
    onReady();

    const result = { loss: [], step_ms: [], timeline: [], devices, max_stashes: devices.map(() => 0) };
    let origin = null;
    for (let s = 0; s < o.steps; s++) {
      const data = Array.from({ length: M }, (_, m) => microbatchData(o, plan, s, m));
      const start = performance.now();
      const t0 = nowUs();
      origin ??= t0;
      const parts = await Promise.all(devices.map((d) => {
        const names = dataOf(route, d);
        return on(d, { op: 'step', step: s, data: data.map((mb) => Object.fromEntries(names.map((n) => [n, mb[n]]))) });
      }));
      const ms = performance.now() - start;
      const losses = parts.flatMap((x) => x.losses).sort((a, b) => a[0] - b[0]);
      if (losses.length !== M) throw internal(`step ${s + 1}: ${losses.length} losses for ${M} micro-batches`);
      // Summed in micro-batch order, as the unsplit step does.
      let lossSum = 0;
      for (const [, l] of losses) lossSum += l;
      const rel = (v) => Math.round((v - origin) * 1000) / 1000;
      const runs = parts.flatMap((x) => x.timeline).sort((a, b) => a.start_us - b.start_us)
        .map((r) => ({ ...r, start_us: rel(r.start_us), end_us: rel(r.end_us) }));
      result.timeline.push({ step: s + 1, start_us: rel(t0), runs, max_stashes: parts.map((x) => x.max_stashes) });
      parts.forEach((x, k) => (result.max_stashes[k] = Math.max(result.max_stashes[k], x.max_stashes)));
      result.loss.push(lossSum / M);
      result.step_ms.push(ms);
      onStep(s, lossSum / M, ms);
    }
    const homed = await Promise.all(devices.map((d) => on(d, { op: 'weights', step: o.steps })));
    result.weights = Object.assign({}, ...homed);
    for (const w of plan.weights) if (!result.weights[w.name]) throw internal(`no device returned the trained '${w.name}'`);
    for (const d of devices) await on(d, { op: 'close' }).catch(() => {});
    return result;
  } finally {
    // A failed device leaves the others waiting for its tensors: stop them all.
    await abort();
  }
}
