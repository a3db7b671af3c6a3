// The unsplit training step (plan.json training.models: init, gradient,
// update), run on the main thread: train.mjs's path for a one-device plan,
// and the reference that `train.mjs --check` compares a split step with.
//
// A step: the gradient model runs on each of the M micro-batches; the
// gradients are accumulated as a mean (train_common.mjs); then the update
// model runs once, fed the step number t (1 for the first) when the
// optimizer needs it. Weights start as the init model's outputs, optimizer
// state as zeros; both are kept between steps.
import { performance } from 'node:perf_hooks';
import { internal } from './errors.mjs';
import { createSession, runSession } from './ort_session.mjs';
import { GradientAccumulator, checkInitial, microbatchData, zeros } from './train_common.mjs';

/**
 * Trains o.steps steps of o.microbatches micro-batches. onReady() once the
 * models are loaded, onStep(s, loss, ms) after each step. Returns { weights: {name: tensor}, loss: [per
 * step], step_ms: [per step] }.
 */
export async function trainUnsplit(o, plan, onStep = () => {}, onReady = () => {}) {
  const M = o.microbatches;
  const sessions = {};
  try {
    for (const k of ['init', 'gradient', 'update']) sessions[k] = await createSession(plan.models[k], { threads: o.threads });
    onReady();
    // Weights from the init model; optimizer state as zeros.
    const initial = await runSession(sessions.init, {}, plan.weights.map((w) => w.initial), 'init model');
    const weights = {};
    const state = {};
    for (const w of plan.weights) {
      const bad = checkInitial(initial[w.initial], w);
      if (bad) throw internal(bad);
      weights[w.name] = initial[w.initial];
      for (const s of w.update.state) state[s.name] = zeros(w.type, w.shape);
    }
    const fetches = [plan.loss.output, ...plan.weights.map((w) => w.gradient)];
    const result = { weights, loss: [], step_ms: [] };
    // One micro-batch: its gradients are the mean as they are. More: summed in float64.
    const sums = M === 1 ? null : new GradientAccumulator(plan.weights);
    for (let s = 0; s < o.steps; s++) {
      const data = Array.from({ length: M }, (_, m) => microbatchData(o, plan, s, m));
      const start = performance.now();
      sums?.begin();
      let last = null;
      let lossSum = 0;
      for (let m = 0; m < M; m++) {
        last = await runSession(sessions.gradient, { ...data[m], ...weights }, fetches, `gradient model (step ${s + 1}, micro-batch ${m})`);
        lossSum += Number(last[plan.loss.output].data[0]);
        if (sums) for (const w of plan.weights) sums.add(w.name, last[w.gradient]);
      }
      const feeds = {};
      for (const w of plan.weights) {
        feeds[w.update.weight] = weights[w.name];
        feeds[w.update.gradient] = sums ? sums.mean(w.name, M) : last[w.gradient];
        for (const st of w.update.state) feeds[st.name] = state[st.name];
      }
      if (plan.stepInput) feeds[plan.stepInput] = { type: 'float32', dims: [], data: Float32Array.of(s + 1) };
      const updated = await runSession(sessions.update, feeds, undefined, `update model (step ${s + 1})`);
      for (const w of plan.weights) {
        weights[w.name] = updated[w.update.output];
        for (const st of w.update.state) state[st.name] = updated[st.output];
      }
      const ms = performance.now() - start;
      result.loss.push(lossSum / M);
      result.step_ms.push(ms);
      onStep(s, lossSum / M, ms);
    }
    return result;
  } finally {
    for (const s of Object.values(sessions)) await s.release().catch(() => {});
  }
}
