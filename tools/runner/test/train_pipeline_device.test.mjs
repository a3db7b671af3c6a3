// PipelineDevice (train_pipeline_device.mjs) in-process, without ORT: two
// devices whose messages arrive late and out of step, a weight read on both
// devices (tied), and stage outputs dropped after their last local read.
import test from 'node:test';
import assert from 'node:assert/strict';
import { PipelineDevice } from '../train_pipeline_device.mjs';

const scalar = (v) => ({ type: 'float32', dims: [], data: Float32Array.of(v) });
const num = (t) => t.data[0];

// s0 forward  d0: x, W -> a        a = x + W
// s1 forward  d1: a, W -> loss, b  loss = a * W, b = W
// s2 backward d1: b -> ga          ga = b
// s3 backward d0: ga, x -> W_grad     W_grad = ga + x
// s4 update   d0: W                W' = W - g (sgd, lr 1)
const M = 2;
const route = {
  microbatches: M,
  stages: [
    { id: 0, kind: 'forward', device: 0, inputs: ['x', 'W'], outputs: ['a'], after: [], weights: [] },
    { id: 1, kind: 'forward', device: 1, inputs: ['a', 'W'], outputs: ['loss', 'b'], after: [0], weights: [] },
    { id: 2, kind: 'backward', device: 1, inputs: ['b'], outputs: ['ga'], after: [1], weights: [] },
    { id: 3, kind: 'backward', device: 0, inputs: ['ga', 'x'], outputs: ['W_grad'], after: [2], weights: [] },
    { id: 4, kind: 'update', device: 0, inputs: [], outputs: [], after: [], weights: ['W'] },
  ],
  order: { 0: [[0, 0], [0, 1], [3, 0], [3, 1]], 1: [[1, 0], [2, 0], [1, 1], [2, 1]] },
  update: { 0: 4 },
  weights: [{ name: 'W', type: 'float32', shape: [], device: 0, gradient: 'W_grad', update: { weight: 'W', gradient: 'W_grad', output: 'W.updated', state: [] } }],
  weightReaders: { W: [0, 1] },
  dataInputs: ['x'],
  lossOutput: 'loss',
  stepInput: null,
  sends: { 0: [{ device: 1, tensors: ['a'] }], 1: [], 2: [{ device: 0, tensors: ['ga'] }], 3: [] },
};

const COMPUTE = {
  0: ({ x, W }) => ({ a: scalar(num(x) + num(W)) }),
  1: ({ a, W }) => ({ loss: scalar(num(a) * num(W)), b: W }),
  2: ({ b }) => ({ ga: b }),
  3: ({ ga, x }) => ({ W_grad: scalar(num(ga) + num(x)) }),
  4: ({ W, W_grad }) => ({ 'W.updated': scalar(num(W) - num(W_grad)) }),
};

/** Two devices wired to each other; every message is delivered after a random delay. */
function pair() {
  const held = { 0: [], 1: [] }; // what each device holds of stage outputs, per run
  const devices = {};
  let t = 0;
  for (const d of [0, 1]) {
    devices[d] = new PipelineDevice({
      route,
      device: d,
      now: () => t++,
      runStage: async (id, feeds) => {
        await new Promise((r) => setTimeout(r, Math.random() * 3));
        held[d].push(Math.max(...devices[d].step.values.map((v) => v.size)));
        return COMPUTE[id](feeds);
      },
      send: (dst, msg) => setTimeout(() => devices[dst].receive(structuredClone(msg)), Math.random() * 5),
    });
  }
  return { devices, held };
}

test('two devices train a tied weight: each step reads the weight its update wrote', async () => {
  const { devices, held } = pair();
  devices[0].setWeights({ W: scalar(1) });
  devices[1].setWeights({ W: scalar(1) });
  const data = (s) => Array.from({ length: M }, (_, m) => ({ x: scalar(s * 10 + m) }));
  let W = 1;
  for (let s = 0; s < 3; s++) {
    // Device 1 starts late: device 0's first messages of the step wait in its inbox.
    const late = new Promise((r) => setTimeout(r, 10)).then(() => devices[1].runStep(s, data(s)));
    const [r0, r1] = await Promise.all([devices[0].runStep(s, data(s)), late]);
    const xs = data(s).map((d) => num(d.x));
    // loss_m = (x_m + W) * W, summed on device 1; W_grad_m = W + x_m, mean over M.
    assert.deepEqual(r1.losses.sort(), xs.map((x, m) => [m, Math.fround(Math.fround(x + W) * W)]));
    assert.deepEqual(r0.losses, []);
    const g = xs.reduce((a, x) => a + Math.fround(W + x), 0) / M;
    W = Math.fround(W - Math.fround(g));
    assert.equal(num(devices[0].homedWeights(s + 1).W), W);
    assert.deepEqual(r0.timeline.map((r) => [r.stage, r.microbatch, r.kind]), [[0, 0, 'forward'], [0, 1, 'forward'], [3, 0, 'backward'], [3, 1, 'backward'], [4, null, 'update']]);
    assert.deepEqual(r1.timeline.map((r) => [r.stage, r.microbatch]), [[1, 0], [2, 0], [1, 1], [2, 1]]);
    // Device 0 holds no forward output for its backward (it reads ga and x): no stashes;
    // device 1 holds b from s1 to s2 for one micro-batch at a time.
    assert.equal(r0.max_stashes, 0);
    assert.equal(r1.max_stashes, 1);
  }
  // Nothing piles up: at most both micro-batches' values are held at once, and the step's maps are gone.
  assert.ok(Math.max(...held[0], ...held[1]) <= 2);
  assert.equal(devices[0].step, null);
  await new Promise((r) => setTimeout(r, 20)); // the last update's W reaches device 1
  assert.deepEqual([...devices[1].weights.get('W').keys()], [3], 'device 1 keeps only the next step\'s W');
  assert.equal(num(devices[1].weights.get('W').get(3)), W);
});
