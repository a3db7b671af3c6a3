// Every user error ends in exactly one line `run_deployment: error: ...` on
// stderr and a distinct exit code (2 bad input, 4 ONNX Runtime failure).
// Deployments here are hand-written plans around test-data models.
import test from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TESTDATA, runCli, tempDir, testdata } from '../testing/helpers.mjs';

const noData = existsSync(TESTDATA) ? false : `${TESTDATA} not installed`;
const MATMUL = testdata('node/test_matmul_2d/model.onnx'); // a[3,4] @ b[4,3] -> c

/** A deployment dir with stages/s0.onnx = test_matmul_2d and the given plan (object or raw text). */
function deployment(plan) {
  const dir = tempDir('errors');
  mkdirSync(join(dir, 'stages'));
  copyFileSync(MATMUL, join(dir, 'stages', 's0.onnx'));
  if (plan !== undefined) writeFileSync(join(dir, 'plan.json'), typeof plan === 'string' ? plan : JSON.stringify(plan));
  return dir;
}

const goodPlan = () => ({
  format: 'onnx-autopar-plan', version: 1,
  devices: [{ id: 0 }],
  inputs: [{ name: 'a', devices: [0] }, { name: 'b', devices: [0] }],
  outputs: [{ name: 'c', device: 0 }],
  stages: [{ id: 0, device: 0, model: 'stages/s0.onnx', inputs: ['a', 'b'], outputs: ['c'], after: [] }],
});

/** Asserts exit code and a single stderr line matching `re`. */
function expectError(args, code, re) {
  const r = runCli(args);
  assert.equal(r.code, code, `exit ${r.code}: ${r.stdout}${r.stderr}`);
  const lines = r.stderr.split('\n');
  assert.equal(lines.length, 2, `one line on stderr, got: ${r.stderr}`);
  assert.match(lines[0], /^run_deployment: error: /);
  assert.match(lines[0], re);
  return r;
}

test('a valid hand-written plan runs', { skip: noData }, () => {
  const r = runCli([deployment(goodPlan()), '--check', MATMUL]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('missing plan.json / directory / arguments are bad input (exit 2)', { skip: noData }, () => {
  expectError([deployment()], 2, /plan\.json: missing/);
  expectError(['/nonexistent/deploy'], 2, /no such deployment directory/);
  expectError([], 2, /expected exactly one OUT_DIR/);
  expectError([deployment(goodPlan()), '--bogus'], 2, /Unknown option '--bogus'/);
  expectError([deployment(goodPlan()), '--atol', 'x'], 2, /--atol: bad value 'x'/);
  expectError([deployment(goodPlan()), '--check', '/nonexistent.onnx'], 2, /--check: \/nonexistent.onnx does not exist/);
});

test('invalid plans are bad input (exit 2)', { skip: noData }, () => {
  const mutate = (f) => {
    const p = goodPlan();
    f(p);
    return deployment(p);
  };
  expectError([deployment('{"stages": [')], 2, /plan\.json: not valid JSON/);
  expectError([mutate((p) => (p.version = 7))], 2, /unsupported version 7/);
  expectError([mutate((p) => (p.stages = []))], 2, /"stages" must be a non-empty array/);
  expectError([mutate((p) => (p.stages[0].model = 'stages/s9.onnx'))], 2, /stage 0: model stages\/s9\.onnx does not exist/);
  expectError([mutate((p) => (p.stages[0].inputs = ['a', 'q']))], 2, /stage 0: input 'q' is neither a graph input nor any stage's output/);
  expectError([mutate((p) => (p.stages[0].device = 3))], 2, /device 3 is not in "devices"/);
  expectError([mutate((p) => (p.outputs = [{ name: 'zz' }]))], 2, /output 'zz' is produced by no stage/);
  expectError([mutate((p) => (p.inputs[0].devices = [1]))], 2, /reads input 'a', which goes only to devices \[1\]/);
  expectError([mutate((p) => p.stages.push({ id: 1, device: 0, model: 'stages/s0.onnx', inputs: ['a', 'b'], outputs: ['c2'], after: [2] }))], 2, /unknown stage 2/);
  expectError(
    [mutate((p) => {
      p.stages[0].after = [1];
      p.stages.push({ id: 1, device: 0, model: 'stages/s0.onnx', inputs: ['a', 'b'], outputs: ['c2'], after: [0] });
    })],
    2,
    /stages form a cycle/,
  );
  // The plan and the stage model disagree.
  expectError([mutate((p) => (p.stages[0].inputs = ['a']))], 2, /takes input 'b' that plan\.json does not list/);
  expectError([mutate((p) => (p.stages[0].outputs = ['c', 'd']))], 2, /lists output 'd' that stages\/s0\.onnx does not produce/);
});

test('a cross-device tensor missing from "transfers" is bad input', { skip: noData }, () => {
  // Stage 1 on device 1 reads 'c' from stage 0 on device 0; "transfers" is empty.
  // (plan.json is validated before any model is loaded.)
  const p = goodPlan();
  p.devices.push({ id: 1 });
  p.inputs[1].devices = [0, 1];
  p.transfers = [];
  p.stages.push({ id: 1, device: 1, model: 'stages/s0.onnx', inputs: ['c', 'b'], outputs: ['c1'], after: [0] });
  expectError([deployment(p)], 2, /'c' goes from device 0 \(stage 0\) to device 1 \(stage 1\) but "transfers" has no such entry/);
});

test('ONNX Runtime failures exit 4', { skip: noData }, () => {
  const dir = deployment(goodPlan());
  writeFileSync(join(dir, 'stages', 's0.onnx'), 'not a model');
  expectError([dir], 4, /ONNX Runtime cannot load .*s0\.onnx/);
});

test('--json reports errors on stdout too', { skip: noData }, () => {
  const r = expectError([deployment(), '--json'], 2, /plan\.json: missing/);
  const rep = JSON.parse(r.stdout);
  assert.equal(rep.ok, false);
  assert.equal(rep.exit_code, 2);
  assert.match(rep.error, /plan\.json: missing/);
});

test('--help prints usage and exits 0', () => {
  const r = runCli(['--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^usage: node tools\/runner\/run_deployment\.mjs/);
});
