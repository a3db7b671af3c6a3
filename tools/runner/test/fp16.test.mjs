// Half precision in checks (precision.mjs): the tolerance a check uses
// follows the precision the network computes in. Unit tests of the choice
// (float32 keeps 1e-4; float16 compute gets min(0.05, 6·2^-11·sqrt(L)), which
// accepts 8e-3 on magnitude 1 and rejects O(1) errors), and end-to-end runs of
// a deep float16 chain (make_fp16_fixture.py) split by the main command
// (AUTOPAR_CLI, else build/tools/onnx-autopar; skipped without it) over 2 and
// 3 devices (and as a Triton repository): --check passes, a stage with a
// wrong weight fails.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER_DIR, makeFixture, pythonMissing, runCli, runPython, tempDir } from '../testing/helpers.mjs';
import { compareOutputs, formatComparison } from '../compare.mjs';
import { checkTolerance, halfTolerance, modelPrecision, toleranceChooser } from '../precision.mjs';

const REPO_ROOT = join(RUNNER_DIR, '..', '..');
const CLI = process.env.AUTOPAR_CLI ?? join(REPO_ROOT, 'build/tools/onnx-autopar');
const noPython = pythonMissing();
const noCli = noPython || (existsSync(CLI) ? false : `${CLI} not built (set AUTOPAR_CLI)`);
const FIXTURE = join(RUNNER_DIR, 'test', 'make_fp16_fixture.py');
const DEFAULTS = { atol: 1e-4, rtol: 1e-4, halfTolerance: 1e-3, explicitTol: false };

const f32 = (name, values, dims = [values.length]) => ({ name, type: 'float32', dims, data: Float32Array.from(values) });

/** Builds a float16 chain model; returns its path. */
function fp16Model(dir, name, ...flags) {
  const path = join(dir, name);
  runPython([FIXTURE, path, ...flags]);
  return path;
}

/** Splits `model` over `devices` devices into stages; returns OUT_DIR. */
function split(model, devices) {
  const out = join(tempDir('fp16-split'), 'out');
  const r = spawnSync(CLI, [model, '-o', out, '--devices', String(devices), '--stages', '--algo', 'round-robin',
    '--allow-slower-split', '--no-report', '--quiet'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `onnx-autopar failed: ${r.stdout}${r.stderr}`);
  return out;
}

test('half tolerance: from float16 roundoff and depth, capped', () => {
  const u = 2 ** -11;
  assert.equal(halfTolerance(1).atol, 6 * u);
  assert.equal(halfTolerance(100).rtol, 60 * u);
  assert.equal(halfTolerance(100000).atol, 0.05);
  assert.equal(halfTolerance(0).atol, 6 * u, 'depth 0 counts as 1');
  assert.equal(halfTolerance(4, 'bfloat16').atol, 12 * 2 ** -8);
  // 8e-3 on an output of magnitude 1 passes from depth 2 on ...
  for (const L of [2, 10, 100, 1000]) {
    const t = halfTolerance(L);
    assert.ok(8e-3 <= t.atol + t.rtol * 1, `depth ${L}`);
  }
  // ... and an error of 0.25 on magnitude 1 fails at any depth.
  const t = halfTolerance(1e9);
  assert.ok(0.25 > t.atol + t.rtol * 1);
});

test('a float32 model keeps atol/rtol 1e-4', { skip: noPython }, () => {
  const fx = makeFixture();
  const prec = modelPrecision([join(fx, 'model.onnx')]);
  assert.equal(prec.half, null);
  assert.match(prec.why, /^0% of floating-point initializer bytes/);
  const tol = checkTolerance(DEFAULTS, [join(fx, 'model.onnx')]);
  assert.deepEqual(
    { ...tol.tolFor('y', 'float32'), why: undefined },
    { atol: 1e-4, rtol: 1e-4, precision: 'float32', why: undefined },
  );
  assert.equal(tol.tolFor('idx', 'int64'), null, 'integers stay exact');
  // A float16 output of a float32 network is still computed in float16.
  assert.equal(tol.tolFor('y', 'float16').precision, 'float16');
  // The deployment's stage models tell the same as the model.
  const stages = readdirSync(join(fx, 'deploy', 'stages')).map((f) => join(fx, 'deploy', 'stages', f));
  assert.equal(modelPrecision(stages).half, null);
});

test('a float16 model: float16 and float32 outputs get the half tolerance; --atol/--rtol override', { skip: noPython }, () => {
  const dir = tempDir('fp16-units');
  const m = fp16Model(dir, 'm.onnx', '--layers', '20', '--cast-out');
  const prec = modelPrecision([m]);
  assert.equal(prec.half, 'float16');
  // 20 blocks of MatMul, Add, Tanh; 6 residual Adds; the final Cast.
  assert.equal(prec.depthOf('y'), 20 * 3 + 6 + 1);
  const tolFor = toleranceChooser({ atol: 1e-4, rtol: 1e-4 }, prec);
  assert.deepEqual([tolFor('y', 'float32').atol, tolFor('y', 'float32').precision], [halfTolerance(67).atol, 'float16']);
  assert.equal(tolFor('y', 'float16').atol, halfTolerance(67).atol);
  assert.match(tolFor('y', 'float32').why, /100% of floating-point initializer bytes are float16\/bfloat16; 67 nodes on the longest path/);
  const given = checkTolerance({ ...DEFAULTS, atol: 1e-3, explicitTol: true }, [m]).tolFor('y', 'float32');
  assert.deepEqual([given.atol, given.rtol, given.precision], [1e-3, 1e-4, 'given']);

  // The comparison: 8e-3 on magnitude 1 passes under float16 compute, fails under float32.
  const ref = { y: f32('y', [1, -1, 0.5, 0]) };
  const near = { y: f32('y', [1.008, -0.992, 0.504, 0.003]) };
  const half = checkTolerance(DEFAULTS, [m]);
  const cmp = compareOutputs(near, ref, ['y'], half);
  assert.equal(cmp.ok, true);
  const lines = formatComparison(cmp, 'original model', half);
  assert.match(lines[1], /^float16 compute: atol 0\.024 rtol 0\.024 \(100% of floating-point/);
  assert.match(lines[2], /^PASS vs original model: 1 output within atol 0\.024 \+ rtol 0\.024/);
  assert.equal(compareOutputs(near, ref, ['y'], DEFAULTS).ok, false);
  // Real errors still fail: a swapped pair of elements, a wrong value.
  assert.equal(compareOutputs({ y: f32('y', [-1, 1, 0.5, 0]) }, ref, ['y'], half).ok, false);
  assert.equal(compareOutputs({ y: f32('y', [1, -1, 0.75, 0]) }, ref, ['y'], half).ok, false);
});

test('no floating-point initializers: a Cast to float16 makes it half-precision compute', { skip: noPython }, () => {
  const dir = tempDir('fp16-cast');
  const path = join(dir, 'cast.onnx');
  runPython(['-c', `
import onnx
from onnx import TensorProto as T, helper as h
g = h.make_graph([h.make_node('Cast', ['x'], ['c'], to=T.FLOAT16), h.make_node('Tanh', ['c'], ['t']),
                  h.make_node('Cast', ['t'], ['y'], to=T.FLOAT)], 'g',
                 [h.make_tensor_value_info('x', T.FLOAT, [2])], [h.make_tensor_value_info('y', T.FLOAT, [2])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), ${JSON.stringify(path)})
`]);
  const prec = modelPrecision([path]);
  assert.equal(prec.half, 'float16');
  assert.equal(prec.why, 'no floating-point initializers; 1 Cast to half precision');
  assert.equal(prec.depthOf('y'), 3);
  const t = toleranceChooser({ atol: 1e-4, rtol: 1e-4 }, prec)('y', 'float32');
  assert.deepEqual([t.precision, t.atol], ['float16', halfTolerance(3).atol]);
});

for (const devices of [2, 3]) {
  for (const castOut of [false, true]) {
    const what = castOut ? 'float16 chain with a final Cast to float32' : 'float16 chain';
    test(`${what} split over ${devices} devices passes --check; a wrong weight fails`, { skip: noCli }, () => {
      const dir = tempDir('fp16-e2e');
      const m = fp16Model(dir, 'm.onnx', '--layers', '30', ...(castOut ? ['--cast-out'] : []));
      const out = split(m, devices);
      const r = runCli([out, '--check', m]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`^ {2}y +${castOut ? 'float32' : 'float16'} \\[4,32\\] .* ok$`, 'm'));
      assert.match(r.stdout, /^float16 compute: atol 0\.0294 rtol 0\.0294 \(100% of floating-point initializer bytes are float16\/bfloat16; 101 nodes on the longest path/m);
      assert.match(r.stdout, /^PASS vs original model: 1 output within atol 0\.0294 \+ rtol 0\.0294/m);
      const rep = JSON.parse(runCli([out, '--check', m, '--json']).stdout);
      assert.equal(rep.check.ok, true);
      assert.equal(rep.check.outputs[0].precision, 'float16');
      // The split does round differently (else this test proves nothing) ...
      assert.ok(rep.check.max_abs > 1e-4, `max_abs ${rep.check.max_abs}`);
      // ... and the float32 tolerance, given explicitly, rejects it.
      assert.equal(runCli([out, '--check', m, '--atol', '1e-4', '--rtol', '1e-4']).code, 3);

      runPython([FIXTURE, '--corrupt', out, '--weight', 'W15']);
      const bad = runCli([out, '--check', m]);
      assert.equal(bad.code, 3, bad.stdout + bad.stderr);
      assert.match(bad.stdout, /^ {2}y .*MISMATCH: \d+ of 128 elements differ/m);
      assert.match(bad.stdout, /^FAIL vs original model: 1 of 1 outputs mismatch \(atol 0\.0294, rtol 0\.0294/m);
    });
  }
}

test('--expected without --check reads the precision from the stage models', { skip: noCli }, () => {
  const dir = tempDir('fp16-expected');
  const m = fp16Model(dir, 'm.onnx', '--cast-out');
  const out = split(m, 2);
  const saved = join(dir, 'ref');
  assert.equal(runCli([m, '--save-outputs', saved]).code, 0);
  const r = runCli([out, '--expected', saved]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^float16 compute: atol 0\.0294 rtol 0\.0294/m);
});

test('a Triton repository of a float16 network passes --check with the half tolerance', { skip: noCli }, () => {
  const dir = tempDir('fp16-triton');
  const m = fp16Model(dir, 'm.onnx', '--cast-out');
  const out = join(dir, 'out');
  const s = spawnSync(CLI, [m, '-o', out, '--devices', '2', '--stages', '--triton', '--algo', 'round-robin',
    '--allow-slower-split', '--no-report', '--quiet'], { encoding: 'utf8' });
  assert.equal(s.status, 0, s.stdout + s.stderr);
  const r = runCli([join(out, 'triton'), '--check', m]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^float16 compute: atol 0\.0294 rtol 0\.0294/m);
});
