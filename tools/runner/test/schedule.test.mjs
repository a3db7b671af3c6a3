// The pipelined schedule without ONNX Runtime: StepScheduler with stage runs
// that only record themselves, wired device to device in-process.
import test from 'node:test';
import assert from 'node:assert/strict';
import { StepScheduler, routing } from '../schedule.mjs';
import { validatePlan } from '../plan.mjs';

const tensor = (v) => ({ type: 'float32', dims: [1], data: Float32Array.of(v) });

/** A plan without model files: validatePlan wants paths that exist, so every stage points at this file. */
function plan(stages, inputs, outputs) {
  const here = new URL(import.meta.url).pathname;
  return validatePlan({ stages: stages.map((s) => ({ ...s, model: here })), inputs: inputs.map((name) => ({ name })), outputs: outputs.map((name) => ({ name })) }, '/');
}

/** Schedulers for each device (or one for all, device null) that run stages as out = in + 1. */
function wire(p, devices, M, { latencyMs = 0 } = {}) {
  const route = routing(p);
  const order = [];
  const sent = [];
  const scheds = new Map();
  for (const d of devices) {
    scheds.set(d, new StepScheduler({
      route, device: d, microbatches: M,
      runStage: async (id, feeds, fetches) => {
        order.push([d, id, feeds]);
        const sum = Object.values(feeds).reduce((a, t) => a + t.data[0], 0);
        return Object.fromEntries(fetches.map((n) => [n, tensor(sum + 1)]));
      },
      send: (dst, msg, transfer) => {
        sent.push({ dst, msg, transfer });
        setTimeout(() => scheds.get(dst).receive(msg), latencyMs);
      },
    }));
  }
  return { scheds, order, sent };
}

const chain = () => plan(
  [
    { id: 0, device: 0, inputs: ['x'], outputs: ['a'] },
    { id: 1, device: 1, inputs: ['a'], outputs: ['b'] },
    { id: 2, device: 0, inputs: ['b', 'x'], outputs: ['c'] },
  ],
  ['x'], ['a', 'c'],
);

test('one device: tasks run in (micro-batch, stage index) order', async () => {
  const p = chain();
  const { scheds, order } = wire(p, [null], 3);
  const s = scheds.get(null);
  s.setInputs([0, 10, 20].map((v) => ({ x: tensor(v) })));
  const r = await s.runStep(0, { collect: true });
  assert.deepEqual(order.map(([, id]) => id), [0, 1, 2, 0, 1, 2, 0, 1, 2]);
  assert.deepEqual(r.timeline.map((t) => [t.microbatch, t.stage]), [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [2, 0], [2, 1], [2, 2]]);
  // c = (x + 1 + 1) + x + 1 for each micro-batch's own x
  assert.deepEqual(r.outputs.map((o) => [o.a.data[0], o.c.data[0]]), [[1, 3], [11, 23], [21, 43]]);
});

test('two devices: a device fills with later micro-batches while it waits for another device', async () => {
  const p = chain();
  const { scheds, order, sent } = wire(p, [0, 1], 3, { latencyMs: 30 });
  scheds.get(0).setInputs([0, 10, 20].map((v) => ({ x: tensor(v) })));
  scheds.get(1).setInputs([{}, {}, {}]);
  const [r0, r1] = await Promise.all([scheds.get(0).runStep(0, { collect: true }), scheds.get(1).runStep(0, { collect: true })]);
  const dev0 = order.filter(([d]) => d === 0).map(([, id]) => id);
  assert.deepEqual(dev0, [0, 0, 0, 2, 2, 2], 'stage 0 of every micro-batch before stage 2 of any');
  assert.equal(r1.timeline.length, 3);
  assert.deepEqual(r0.outputs.map((o) => o.c.data[0]), [3, 23, 43]);
  // 'a' is a graph output kept on device 0 and read by device 1: sent as a copy.
  // 'b' has one reader, on device 0: its buffer is moved.
  for (const { msg, transfer } of sent) {
    if (msg.stage === 0) assert.deepEqual(transfer, [], 'a collected output is copied, not moved');
    if (msg.stage === 1) assert.equal(transfer.length, 1, 'a tensor with one remote reader is moved');
  }
  assert.equal(r0.outputs[1].a.data[0], 11, 'the collected output is intact after the hand-over');
});

test('messages for a step that has not started yet wait for it', async () => {
  const p = chain();
  const { scheds } = wire(p, [0, 1], 2);
  scheds.get(0).setInputs([{ x: tensor(1) }, { x: tensor(2) }]);
  scheds.get(1).setInputs([{}, {}]);
  const first = scheds.get(0).runStep(0);
  await new Promise((r) => setTimeout(r, 20)); // device 1's tensors for step 0 are now in its inbox
  const r1 = await scheds.get(1).runStep(0);
  await first;
  assert.equal(r1.timeline.length, 2);
});

test('a failing stage run rejects the step', async () => {
  const p = chain();
  const route = routing(p);
  const s = new StepScheduler({ route, device: null, microbatches: 1, runStage: async () => { throw new Error('boom'); }, send: () => {} });
  s.setInputs([{ x: tensor(0) }]);
  await assert.rejects(s.runStep(0), /boom/);
});

test('routing: one message per (stage, other device), control-only dependencies included', () => {
  const p = plan(
    [
      { id: 0, device: 0, inputs: ['x'], outputs: ['a', 'u'] },
      { id: 1, device: 1, inputs: ['a'], outputs: ['b'] },
      { id: 2, device: 1, inputs: ['x'], outputs: ['c'], after: [0] },
      { id: 3, device: 0, inputs: ['b', 'c', 'u'], outputs: ['d'] },
    ],
    ['x'], ['d'],
  );
  const r = routing(p);
  assert.deepEqual(r.sends[0], [{ device: 1, tensors: ['a'] }]);
  assert.deepEqual(r.sends[1], [{ device: 0, tensors: ['b'] }]);
  assert.deepEqual(r.sends[2], [{ device: 0, tensors: ['c'] }]);
  assert.deepEqual(r.sends[3], []);
  const q = plan([{ id: 0, device: 0, inputs: ['x'], outputs: ['a'] }, { id: 1, device: 1, inputs: ['x'], outputs: ['b'], after: [0] }], ['x'], ['a', 'b']);
  assert.deepEqual(routing(q).sends[0], [{ device: 1, tensors: [] }], 'an "after" across devices is a done notice');
});
