// In-process unit tests: comparison rules, random inputs, plan ordering.
import test from 'node:test';
import assert from 'node:assert/strict';
import { compareTensor } from '../compare.mjs';
import { mulberry32, randomInputs } from '../inputs.mjs';
import { validatePlan } from '../plan.mjs';
import { floatToHalf } from '../dtypes.mjs';
import { existsSync } from 'node:fs';
import { TESTDATA } from '../testing/helpers.mjs';

const f32 = (v, dims = [v.length]) => ({ type: 'float32', dims, data: Float32Array.from(v) });

test('float comparison: |a-b| <= atol + rtol*|b|, NaN/inf handling', () => {
  const tol = { atol: 1e-4, rtol: 1e-4 };
  assert.equal(compareTensor('t', f32([1, 2]), f32([1, 2]), tol).ok, true);
  assert.equal(compareTensor('t', f32([100.009]), f32([100]), tol).ok, true); // 0.009 <= 1e-4 + 0.01
  assert.equal(compareTensor('t', f32([100.02]), f32([100]), tol).ok, false);
  assert.equal(compareTensor('t', f32([NaN, Infinity]), f32([NaN, Infinity]), tol).ok, true);
  const r = compareTensor('t', f32([NaN, 0]), f32([1, 0]), tol);
  assert.equal(r.ok, false);
  assert.equal(r.mismatches, 1);
  assert.equal(compareTensor('t', f32([-Infinity]), f32([Infinity]), tol).ok, false);
  const s = compareTensor('t', f32([0.5, 2e-5]), f32([0.5, 0]), tol);
  assert.equal(s.ok, true);
  assert.equal(s.maxAbs, Math.fround(2e-5));
  assert.ok(Math.abs(s.maxRel - 0.2) < 1e-6, `rel is floored at atol: ${s.maxRel}`);
});

test('shape, type, missing, integer and float16 rules', () => {
  assert.match(compareTensor('t', f32([1, 2], [2]), f32([1, 2], [1, 2])).reason, /shape \[2\], expected \[1,2\]/);
  assert.match(compareTensor('t', undefined, f32([1])).reason, /missing/);
  const i64 = (v) => ({ type: 'int64', dims: [v.length], data: BigInt64Array.from(v) });
  assert.match(compareTensor('t', f32([1]), i64([1n])).reason, /element type float32, expected int64/);
  assert.equal(compareTensor('t', i64([1n, 2n]), i64([1n, 2n])).ok, true);
  assert.equal(compareTensor('t', i64([1n, 3n]), i64([1n, 2n]), { atol: 10, rtol: 10 }).ok, false); // exact for ints
  const h = (v) => ({ type: 'float16', dims: [v.length], data: Uint16Array.from(v, floatToHalf) });
  assert.equal(compareTensor('t', h([1.0]), h([1.0009765625])).ok, true); // one ulp: within the 1e-3 float16 floor
  assert.equal(compareTensor('t', h([1.0]), h([1.0009765625]), { atol: 1e-4, rtol: 1e-4, halfTolerance: 0 }).ok, false);
});

test('random inputs: deterministic, ranges, symbolic dims', () => {
  const a = mulberry32(42);
  const b = mulberry32(42);
  for (let i = 0; i < 100; i++) assert.equal(a(), b());
  const specs = [
    { name: 'x', type: 'float32', shape: ['batch', 4] },
    { name: 'ids', type: 'int64', shape: [3, 5] },
    { name: 'm', type: 'bool', shape: [8] },
    { name: 'u', type: 'uint8', shape: [50] },
  ];
  const r1 = randomInputs(specs, 1, { dimValues: { batch: 2 } });
  const r2 = randomInputs(specs, 1, { dimValues: { batch: 2 } });
  assert.deepEqual(r1, r2);
  assert.notDeepEqual(randomInputs(specs, 2, { dimValues: { batch: 2 } }).tensors.x.data, r1.tensors.x.data);
  assert.deepEqual(r1.tensors.x.dims, [2, 4]);
  assert.ok(r1.tensors.x.data.every((v) => v >= -1 && v < 1));
  assert.ok(r1.tensors.ids.data.every((v) => v >= 0n && v < 10n));
  assert.ok(r1.tensors.m.data.every((v) => v === 0 || v === 1));
  const wide = randomInputs(specs, 1, { intRange: [-1000, 1000], dimValues: { batch: 1 } });
  assert.ok(wide.tensors.u.data.every((v) => v >= 0 && v < 256), 'clamped to uint8');
  const noted = randomInputs(specs, 1);
  assert.deepEqual(noted.tensors.x.dims, [1, 4]);
  assert.match(noted.notes[0], /\('batch'\) is not static; using 1 \(set it with --dim batch=N\)/);
});

test('plan: topological order honours after and data, ties by plan order', { skip: existsSync(TESTDATA) ? false : 'no test data' }, () => {
  const model = `${TESTDATA}/node/test_matmul_2d/model.onnx`;
  const st = (id, device, inputs, outputs, after = []) => ({ id, device, model, inputs, outputs, after });
  const plan = validatePlan(
    {
      inputs: [{ name: 'a' }],
      outputs: [{ name: 'd' }],
      stages: [st(3, 0, ['c', 'b'], ['d']), st(1, 1, ['a'], ['b']), st(0, 0, ['a'], ['c'], [1]), st(2, 1, ['a'], ['e'])],
    },
    '/',
  );
  assert.deepEqual(plan.order, [1, 0, 3, 2]); // 3 is listed first, so it goes as soon as it is ready
  assert.deepEqual([...plan.byId.get(3).deps].sort(), [0, 1]);
});
