// In-process unit tests of GradientAccumulator (train_common.mjs): the
// gradient mean both training paths feed their update models.
import test from 'node:test';
import assert from 'node:assert/strict';
import { GradientAccumulator } from '../train_common.mjs';
import { floatToHalf, halfToFloat } from '../dtypes.mjs';

const f32 = (v) => ({ type: 'float32', dims: [v.length], data: Float32Array.from(v) });

test('the mean is the float64 sum divided by M, rounded once to float32', () => {
  const acc = new GradientAccumulator([{ name: 'w', type: 'float32', shape: [3] }]);
  acc.begin();
  // 1 + 2^-24 rounds back to 1 in float32: a float32 running sum would lose the small terms.
  const tiny = 2 ** -24;
  const terms = [[1, 3, -2], [tiny, 0.5, 2], [tiny, 0.25, 0], [tiny, 0.125, 0]];
  for (const t of terms) acc.add('w', f32(t));
  const mean = acc.mean('w', terms.length);
  assert.equal(mean.type, 'float32');
  assert.deepEqual(mean.dims, [3]);
  const want = [0, 1, 2].map((i) => Math.fround(terms.reduce((s, t) => s + Math.fround(t[i]), 0) / terms.length));
  assert.deepEqual(Array.from(mean.data), want);
  const float32Running = Math.fround(terms.reduce((s, t) => Math.fround(s + t[0]), 0) / terms.length);
  assert.notEqual(want[0], float32Running, 'the small terms count');
});

test('a second step starts from empty sums in the same buffers', () => {
  const acc = new GradientAccumulator([{ name: 'w', type: 'float32', shape: [2] }]);
  acc.begin();
  acc.add('w', f32([5, 7]));
  acc.add('w', f32([1, 1]));
  const first = acc.mean('w', 2);
  assert.deepEqual(Array.from(first.data), [3, 4]);
  acc.begin();
  acc.add('w', f32([2, 4]));
  acc.add('w', f32([0, 0]));
  const second = acc.mean('w', 2);
  assert.deepEqual(Array.from(second.data), [1, 2]);
  assert.equal(second.data, first.data, 'one mean buffer per weight, reused');
});

test('a weight that received no gradient in a step has mean zero', () => {
  const acc = new GradientAccumulator([{ name: 'w', type: 'float32', shape: [2] }]);
  acc.begin();
  acc.add('w', f32([5, 7]));
  acc.mean('w', 1);
  acc.begin();
  assert.deepEqual(Array.from(acc.mean('w', 4).data), [0, 0]);
});

test('float16 and float64 weights: summed in float64, the mean in the weight type', () => {
  const acc = new GradientAccumulator([
    { name: 'h', type: 'float16', shape: [2] },
    { name: 'd', type: 'float64', shape: [1] },
  ]);
  acc.begin();
  const half = (v) => ({ type: 'float16', dims: [v.length], data: Uint16Array.from(v, floatToHalf) });
  acc.add('h', half([1.5, -2]));
  acc.add('h', half([0.5, 1]));
  acc.add('d', { type: 'float64', dims: [1], data: Float64Array.of(0.1) });
  acc.add('d', { type: 'float64', dims: [1], data: Float64Array.of(0.2) });
  const h = acc.mean('h', 2);
  assert.ok(h.data instanceof Uint16Array);
  assert.deepEqual(Array.from(h.data, halfToFloat), [1, -0.5]);
  assert.deepEqual(Array.from(acc.mean('d', 2).data), [(0.1 + 0.2) / 2]);
});
