// Tests of the optimised-run node times: reading a model's nodes from the
// ONNX wire format, spreading fused nodes' times back over the model's nodes
// (graphs written here in code), and measure.mjs end to end on a small CNN
// (skipped without onnxruntime-node or Debian's python with onnx).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { attributeOptimisedTimes } from '../optimised_times.mjs';
import { decodeModelNodes, readModelNodes } from '../onnx_nodes.mjs';
import { REPO_ROOT } from '../lib.mjs';
import { pythonMissing, runPython, tempDir } from '../../runner/testing/helpers.mjs';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ORT = join(REPO_ROOT, 'tools/runner/node_modules/onnxruntime-node');
const node = (name, op, inputs, outputs) => ({ name, op, inputs, outputs });
const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);

// x -> conv1 -> bn -> relu1 -> conv2 -> add(conv2, relu1) -> relu2 -> gemm -> y
const RESIDUAL = [
  node('conv1', 'Conv', ['x', 'w1'], ['c1']),
  node('bn', 'BatchNormalization', ['c1', 's', 'b', 'm', 'v'], ['n1']),
  node('relu1', 'Relu', ['n1'], ['r1']),
  node('conv2', 'Conv', ['r1', 'w2'], ['c2']),
  node('add', 'Add', ['c2', 'r1'], ['a']),
  node('relu2', 'Relu', ['a'], ['r2']),
  node('gemm', 'Gemm', ['r2', 'wf'], ['y']),
];
const UNOPTIMISED = { conv1: 60, bn: 20, relu1: 20, conv2: 80, add: 10, relu2: 10, gemm: 5 };

test('fused nodes named after the tensor they end in or the node they start from take their neighbours', () => {
  // As ORT's NCHWc transform names them: conv1+bn+relu1 after relu1's output,
  // conv2+add+relu2 after conv2's output.
  const r = attributeOptimisedTimes(RESIDUAL, UNOPTIMISED, { r1_nchwc: 50, c2_nchwc: 90, gemm: 4 });
  // Each group's time split in the unoptimised proportions: 60:20:20 and 80:10:10.
  assert.deepEqual(r.node_us, { conv1: 30, bn: 10, relu1: 10, conv2: 72, add: 9, relu2: 9, gemm: 4 });
  assert.equal(r.anchored, 3);
  assert.equal(r.unanchored_us, 0);
});

test('a neighbour goes to the group with the most time per unoptimised µs', () => {
  // "conv2/<fusion>/" holds conv2, add and relu2; gemm's 5 µs are its own.
  const r = attributeOptimisedTimes(RESIDUAL, UNOPTIMISED, { conv1: 50, bn: 10, relu1: 10, 'conv2/ConvAddActivationFusion/': 100, gemm: 5 });
  assert.equal(r.node_us.conv2, 80);
  assert.equal(r.node_us.add, 10);
  assert.equal(r.node_us.relu2, 10);
  assert.equal(r.node_us.gemm, 5);
  assert.equal(r.node_us.conv1, 50);
});

test('the longest matching name wins and a bare prefix is not a match', () => {
  const nodes = [node('m', 'MatMul', ['x', 'w'], ['t']), node('m_1', 'MatMul', ['t', 'w'], ['u']), node('mx', 'Relu', ['u'], ['y'])];
  const r = attributeOptimisedTimes(nodes, { m: 1, m_1: 1, mx: 1 }, { 'm_1/MatMulScaleFusion/': 6, m: 3, mxy: 3 });
  assert.equal(r.anchored, 2);
  assert.equal(r.unanchored_us, 3); // "mxy" is neither "mx" nor "m" followed by '/' or '_'
  // m_1's 6 µs shared with mx, which only it reaches; the 3 unclaimed µs over all three.
  assert.deepEqual(r.node_us, { m: 4, m_1: 4, mx: 4 });
});

test('nodes ORT added are spread over every node; the total is the optimised kernel sum', () => {
  const optimised = { r1_nchwc: 50, 'conv2/Fusion/': 90, ReorderOutput: 17, reorder_token_3: 3, gemm: 4 };
  const r = attributeOptimisedTimes(RESIDUAL, UNOPTIMISED, optimised);
  assert.equal(r.unanchored_us, 20);
  assert.ok(Math.abs(sum(r.node_us) - sum(optimised)) < 1e-9);
  // 20 µs over 205 µs of unoptimised time: gemm (5 µs) gets 5/205 of it.
  assert.ok(Math.abs(r.node_us.gemm - (4 + (20 * 5) / 205)) < 1e-9);
});

test('a group whose members had no unoptimised time gives its time to the anchor', () => {
  const r = attributeOptimisedTimes(RESIDUAL, {}, { r1_nchwc: 9 });
  assert.equal(r.node_us.relu1, 9);
  assert.equal(r.node_us.conv1, 0);
});

test('decodeModelNodes: rejects bytes that are not a model', () => {
  assert.throws(() => decodeModelNodes(new Uint8Array([0x0a, 0xff]), 'junk.onnx'), /junk.onnx: not an ONNX model/);
  assert.throws(() => decodeModelNodes(new Uint8Array([0x08, 0x07]), 'empty.onnx'), /no graph/);
});

test('measure.mjs on a small CNN: node_us names the model nodes, optimised times add up to the optimised run',
  { skip: (!existsSync(ORT) && 'onnxruntime-node not installed') || pythonMissing() }, () => {
    const dir = tempDir('optimised-times');
    const model = join(dir, 'cnn.onnx');
    runPython([join(HERE, 'make_model.py'), model]);
    const names = readModelNodes(model).map((n) => n.name);
    assert.deepEqual(names, ['conv1', 'relu1', 'pool1', 'conv2', 'relu2', 'gap', 'flatten', 'fc', 'softmax']);
    const out = join(dir, 'times.json');
    const r = spawnSync(process.execPath, [join(HERE, '..', 'measure.mjs'), model, '-o', out, '--runs', '3', '--warmup', '1'], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    const j = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(j.node_times_from, 'optimised');
    for (const n of Object.keys(j.node_us)) assert.ok(names.includes(n), `${n} is not a model node`);
    assert.ok(Math.abs(sum(j.node_us) - j.optimised.kernel_sum_us) < 1e-6 * j.optimised.kernel_sum_us + 1e-9);
    assert.deepEqual(Object.keys(j.node_us), Object.keys(j.node_us_unoptimised));
    const plain = spawnSync(process.execPath, [join(HERE, '..', 'measure.mjs'), model, '--unoptimised', '--runs', '2', '--warmup', '0'], { encoding: 'utf8', timeout: 60000 });
    assert.equal(plain.status, 0, plain.stderr);
    const p = JSON.parse(plain.stdout);
    assert.equal(p.node_times_from, 'unoptimised');
    assert.equal(p.optimised, null);
  });
