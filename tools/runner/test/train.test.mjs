// train.mjs on the tiny MLPs of make_train_fixture.py, with their training
// steps written by the main command (AUTOPAR_CLI; skipped without it):
// M micro-batches averaged equal one step on them concatenated, --save
// writes the source model with exactly the trained weights (external data
// inlined), random data is seeded, and bad input is one error line.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER_DIR, pythonMissing, runPython, tempDir } from '../testing/helpers.mjs';
import { readInitializers } from '../model_weights.mjs';
import { createSession, runSession } from '../ort_session.mjs';
import { readTensorFile, writeTensorFile } from '../tensor_pb.mjs';

const CLI = process.env.AUTOPAR_CLI;
const skip = !CLI ? 'AUTOPAR_CLI (the onnx-autopar executable) is not set' : pythonMissing();
const TRAIN = join(RUNNER_DIR, 'train.mjs');
const fx = skip ? null : tempDir('train-fixture');
if (!skip) runPython([join(RUNNER_DIR, 'test', 'make_train_fixture.py'), fx]);

function train(args) {
  const r = spawnSync(process.execPath, [TRAIN, ...args], { encoding: 'utf8', timeout: 120000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Writes the training step of `model` to a fresh folder; returns it. */
function step(model, ...flags) {
  const out = join(tempDir('train-out'), 'out');
  const r = spawnSync(CLI, [model, '-o', out, '--devices', '1', '--mode', 'training', '--loss', 'cross-entropy:logits',
    '--no-report', '--quiet', ...flags], { encoding: 'utf8' });
  assert.equal(r.status, 0, `onnx-autopar failed: ${r.stdout}${r.stderr}`);
  return out;
}

const sgd = ['--optimizer', 'sgd', '--learning-rate', '0.5'];

/** |a - b| <= tol for every element; returns the largest difference. */
function assertClose(a, b, tol, what) {
  assert.deepEqual(a.dims, b.dims, `${what}: shapes`);
  let max = 0;
  for (let i = 0; i < a.data.length; i++) max = Math.max(max, Math.abs(Number(a.data[i]) - Number(b.data[i])));
  assert.ok(max <= tol, `${what}: differs by ${max}`);
  return max;
}

test('M micro-batches averaged equal one step on them concatenated (2 SGD steps)', { skip }, () => {
  const saved2 = join(tempDir('saved'), 'b2.onnx');
  const saved4 = join(tempDir('saved'), 'b4.onnx');
  const r2 = train([step(join(fx, 'mlp_b2.onnx'), ...sgd), '--steps', '2', '--microbatches', '2', '--data', join(fx, 'data_b2'), '--save', saved2, '--json']);
  assert.equal(r2.code, 0, r2.stderr);
  const r4 = train([step(join(fx, 'mlp_b4.onnx'), ...sgd), '--steps', '2', '--microbatches', '1', '--data', join(fx, 'data_b4'), '--save', saved4, '--json']);
  assert.equal(r4.code, 0, r4.stderr);
  const [j2, j4] = [JSON.parse(r2.stdout), JSON.parse(r4.stdout)];
  assert.equal(j2.loss.length, 2);
  j2.loss.forEach((l, s) => assert.ok(Math.abs(l - j4.loss[s]) <= 1e-6, `step ${s + 1}: loss ${l} vs ${j4.loss[s]}`));
  assert.notEqual(j2.loss[0], j2.loss[1], 'the second step sees trained weights');
  const [w2, w4] = [readInitializers(readFileSync(saved2)), readInitializers(readFileSync(saved4))];
  const source = readInitializers(readFileSync(join(fx, 'mlp_b2.onnx')));
  for (const name of ['W1', 'b1', 'W2', 'b2']) {
    assertClose(w2.get(name), w4.get(name), 1e-6, name);
    assert.ok(w2.get(name).data.some((v, i) => v !== source.get(name).data[i]), `${name} was trained`);
  }
});

test('--save writes the source model with w - lr * mean gradient (one SGD step)', { skip }, async () => {
  const out = step(join(fx, 'mlp_b2.onnx'), ...sgd);
  const saved = join(tempDir('saved'), 'sub', 'trained.onnx');
  const r = train([out, '--microbatches', '2', '--data', join(fx, 'data_b2'), '--save', saved]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^step 1 {2}loss \S+ {2}\S+ ms$/m);
  assert.match(r.stdout, /^saved /m);
  // The same step by hand: the gradient model on each micro-batch, the mean, w - 0.5 g.
  const plan = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).training;
  const session = await createSession(join(out, plan.models.gradient));
  const source = readInitializers(readFileSync(join(fx, 'mlp_b2.onnx')));
  const feedsOf = (m) => {
    const dir = join(fx, 'data_b2', 'step_0', `mb_${m}`);
    const feeds = { x: readTensorFile(join(dir, 'x.pb')), labels: readTensorFile(join(dir, 'labels.pb')) };
    for (const w of plan.weights) feeds[w.name] = source.get(w.name);
    return feeds;
  };
  const grads = [await runSession(session, feedsOf(0)), await runSession(session, feedsOf(1))];
  await session.release();
  const trained = readInitializers(readFileSync(saved));
  assert.deepEqual([...trained.keys()], [...source.keys()], 'same initializers, same order');
  for (const w of plan.weights) {
    const expected = source.get(w.name).data.map((v, i) => v - 0.5 * ((grads[0][w.gradient].data[i] + grads[1][w.gradient].data[i]) / 2));
    assertClose(trained.get(w.name), { dims: w.shape, data: expected }, 1e-6, w.name);
  }
  // Same graph, names and opset: only the initializers' values differ.
  runPython(['-c', `
import onnx, sys
a, b = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
onnx.checker.check_model(b)
assert a.opset_import == b.opset_import and a.graph.node == b.graph.node
assert a.graph.input == b.graph.input and a.graph.output == b.graph.output
assert [t.name for t in a.graph.initializer] == [t.name for t in b.graph.initializer]
`, join(fx, 'mlp_b2.onnx'), saved]);
});

test('--save inlines external data: the saved model stands alone', { skip }, () => {
  const src = join(tempDir('ext'), 'model');
  cpSync(join(fx, 'external'), src, { recursive: true });
  const out = step(join(src, 'mlp.onnx'), ...sgd, '--freeze', '^scale$');
  const plan = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).training;
  assert.deepEqual(plan.frozen, ['scale']);
  const saved = join(tempDir('saved'), 'trained.onnx');
  const r = train([out, '--microbatches', '2', '--data', join(fx, 'data_b2'), '--save', saved]);
  assert.equal(r.code, 0, r.stderr);
  rmSync(src, { recursive: true }); // the saved model needs none of the source's files
  const trained = readInitializers(readFileSync(saved), '/nonexistent');
  assert.deepEqual([...trained.get('scale').data], [0.5]);
  assert.deepEqual([...trained.get('shape').data], [2n, 4n]);
  runPython(['-c', 'import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m); '
    + 'assert not any(t.data_location for t in m.graph.initializer)', saved]);
});

test('random data is seeded: the same seed gives the same losses, another seed others', { skip }, () => {
  const out = step(join(fx, 'mlp_b2.onnx'), '--optimizer', 'adam');
  const run = (seed) => {
    const r = train([out, '--steps', '3', '--microbatches', '2', '--seed', seed, '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const [a, b, c] = [run('1'), run('1'), run('2')];
  assert.equal(a.loss.length, 3);
  assert.ok(a.loss.every(Number.isFinite));
  assert.deepEqual(a.loss, b.loss);
  assert.notDeepEqual(a.loss, c.loss);
  assert.equal(a.step_ms.length, 3);
  assert.equal(a.weights.count, 4);
  assert.equal(a.weights.bytes, 4 * (15 + 5 + 20 + 4));
  assert.equal(a.optimizer.name, 'adam');
  assert.equal(a.saved, null);
});

/** Expects one error line with exit code 2, and no saved model. */
function assertBadInput(args, pattern) {
  const saved = join(tempDir('saved'), 'never.onnx');
  const r = train([...args, '--save', saved]);
  assert.equal(r.code, 2, `exit code ${r.code}: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /^train: error: .*\n$/);
  assert.match(r.stderr, pattern);
  assert.ok(!existsSync(saved), 'no model saved');
}

test('bad input: one error line, exit 2, nothing saved', { skip }, () => {
  const inference = join(tempDir('inference'), 'out');
  const r = spawnSync(CLI, [join(fx, 'mlp_b2.onnx'), '-o', inference, '--devices', '1', '--no-report', '--quiet'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assertBadInput([inference], /not a training plan/);
  assertBadInput([join(fx, 'nowhere')], /no such directory/);

  const out = step(join(fx, 'mlp_b2.onnx'), ...sgd);
  assertBadInput([out, '--steps', '3', '--data', join(fx, 'data_b2')], /step_2.mb_0.x\.pb is missing/);
  assertBadInput([out, '--microbatches', '0'], /--microbatches: bad value '0'/);

  const data = join(tempDir('bad-data'), 'data');
  cpSync(join(fx, 'data_b2'), data, { recursive: true });
  const mb = join(data, 'step_0', 'mb_1');
  writeTensorFile(join(mb, 'labels.pb'), { name: 'labels', type: 'int32', dims: [2], data: Int32Array.of(0, 1) });
  assertBadInput([out, '--microbatches', '2', '--data', data], /labels.pb: input 'labels' is int32, the step wants int64/);
  writeTensorFile(join(mb, 'labels.pb'), { name: 'labels', type: 'int64', dims: [2], data: BigInt64Array.of(0n, 1n) });
  writeTensorFile(join(mb, 'x.pb'), { name: 'x', type: 'float32', dims: [3, 3], data: new Float32Array(9) });
  assertBadInput([out, '--microbatches', '2', '--data', data], /x.pb: input 'x' has shape \[3,3\], the step wants \[2,3\]/);
});

test('--help prints the usage', () => {
  const r = train(['--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^usage: node tools\/runner\/train.mjs OUT_DIR/);
});
