// Running the hand-made 2-device fixture deployment (make_fixture.py):
// --check passes (worker threads and --sequential), stage order in plan.json
// does not matter, wrong weights are caught (exit 3), seeds are deterministic,
// --inputs/--expected/--save-outputs/--profile work.
import test from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeFixture, pythonMissing, runCli, tempDir } from '../testing/helpers.mjs';
import { writeTensorFile } from '../tensor_pb.mjs';

const skip = pythonMissing();
const fx = skip ? null : makeFixture();
const deploy = () => join(fx, 'deploy');
const model = () => join(fx, 'model.onnx');

test('fixture deployment matches the original model (worker threads)', { skip }, () => {
  const r = runCli([deploy(), '--check', model(), '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const rep = JSON.parse(r.stdout);
  assert.equal(rep.ok, true);
  assert.equal(rep.mode, 'workers');
  assert.equal(rep.devices, 2);
  assert.equal(rep.stages, 4);
  assert.deepEqual(rep.timeline.map((x) => x.stage).sort(), [0, 1, 2, 3]);
  assert.deepEqual(rep.outputs.map((o) => [o.name, o.type, o.shape]), [['y', 'float32', [2, 4]], ['z', 'float32', [2, 4]], ['idx', 'int64', [2]]]);
  assert.deepEqual(rep.transfers, [{ tensor: 'r', src: 0, dst: 1, bytes: 128 }, { tensor: 'y', src: 1, dst: 0, bytes: 32 }]);
  assert.equal(rep.check.ok, true);
  assert.ok(rep.check.max_abs <= 1e-6, `max_abs ${rep.check.max_abs}`);
  const s3 = rep.timeline.find((x) => x.stage === 3);
  for (const x of rep.timeline) if (x.stage !== 3) assert.ok(x.end_ms <= s3.start_ms, 'stage 3 waits for all others');
});

test('fixture deployment matches in --sequential mode, human output', { skip }, () => {
  const r = runCli([deploy(), '--check', model(), '--sequential', '--seed', '11']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /ran 4 stages on 2 devices \(sequential/);
  assert.match(r.stdout, /^ {2}idx .*int64 .*ok$/m);
  assert.match(r.stdout, /^PASS vs original model: 3 outputs within atol 0.0001 \+ rtol 0.0001/m);
});

test('stage order in plan.json does not matter (runner follows dependencies)', { skip }, () => {
  const dir = join(tempDir('shuffled'), 'deploy');
  cpSync(deploy(), dir, { recursive: true });
  const plan = JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8'));
  plan.stages.reverse();
  writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan));
  const r = runCli([dir, '--check', model()]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

test('a stage with wrong weights is a mismatch (exit 3)', { skip }, () => {
  const bad = makeFixture({ corrupt: true });
  const r = runCli([join(bad, 'deploy'), '--check', join(bad, 'model.onnx')]);
  assert.equal(r.code, 3, r.stdout + r.stderr);
  assert.match(r.stdout, /^ {2}y .*MISMATCH: 8 of 8 elements differ/m);
  assert.match(r.stdout, /^FAIL vs original model: \d of 3 outputs mismatch/m);
  assert.equal(r.stderr, '');
});

test('same seed, same outputs; --save-outputs then --expected', { skip }, () => {
  const tmp = tempDir('seed');
  const a = join(tmp, 'a');
  const b = join(tmp, 'b');
  assert.equal(runCli([deploy(), '--seed', '5', '--save-outputs', a]).code, 0);
  assert.equal(runCli([deploy(), '--seed', '5', '--save-outputs', b, '--sequential']).code, 0);
  for (const f of ['output_0.pb', 'output_1.pb', 'output_2.pb']) {
    assert.deepEqual(readFileSync(join(a, f)), readFileSync(join(b, f)), f);
  }
  assert.equal(runCli([deploy(), '--seed', '5', '--expected', a]).code, 0);
  const other = runCli([deploy(), '--seed', '6', '--expected', a]);
  assert.equal(other.code, 3, other.stdout);
});

test('--inputs reads input_N.pb; integer inputs out of range fail in ORT (exit 4)', { skip }, () => {
  const dir = tempDir('inputs');
  writeTensorFile(join(dir, 'input_0.pb'), { name: 'ids', type: 'int64', dims: [2, 3], data: BigInt64Array.from([0n, 1n, 2n, 9n, 9n, 3n]) });
  writeTensorFile(join(dir, 'input_1.pb'), { name: 'x', type: 'float32', dims: [2, 8], data: new Float32Array(16).fill(0.5) });
  const r = runCli([deploy(), '--check', model(), '--inputs', dir]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const wrong = tempDir('inputs-wrong');
  writeTensorFile(join(wrong, 'input_0.pb'), { name: 'ids', type: 'int32', dims: [2, 3], data: new Int32Array(6) });
  writeTensorFile(join(wrong, 'input_1.pb'), { name: 'x', type: 'float32', dims: [2, 8], data: new Float32Array(16) });
  const w = runCli([deploy(), '--inputs', wrong]);
  assert.equal(w.code, 2);
  assert.match(w.stderr, /^run_deployment: error: input 'ids': file has int32, model wants int64\n$/);
  const oob = runCli([deploy(), '--int-range', '20,30']);
  assert.equal(oob.code, 4, oob.stdout + oob.stderr);
  assert.match(oob.stderr, /^run_deployment: error: stage 0 \(device 0\): ONNX Runtime run failed: .*\n$/);
});

test('--profile writes one ORT profile per stage and one for the original', { skip }, () => {
  const dir = tempDir('profile');
  mkdirSync(join(dir, 'p'));
  const r = runCli([deploy(), '--check', model(), '--profile', join(dir, 'p', 'run')]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const files = readdirSync(join(dir, 'p')).sort();
  for (const s of ['original', 's0', 's1', 's2', 's3']) assert.ok(files.some((f) => f.startsWith(`run_${s}_`)), `${s}: ${files}`);
  const events = JSON.parse(readFileSync(join(dir, 'p', files.find((f) => f.startsWith('run_s1_'))), 'utf8'));
  assert.ok(events.some((e) => e.cat === 'Node' && e.name.startsWith('mm2')), 'profile has the MatMul of stage 1');
});
