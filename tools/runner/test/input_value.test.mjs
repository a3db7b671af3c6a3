// --input-value NAME=V[,V...]: one input gets exactly the given contents and
// every other input keeps its seeded random values. Parsing and the tensor
// made for each element type in-process; then the hand-made deployment of
// make_if_fixture.py (an If on `rate` inlined for rate <= 16000, 2 stages
// that do not read `rate`) checked against the unsplit model, whose If the
// value decides, and the fixture deployment (make_fixture.py) fed exact
// contents; bad values are one error line (exit 2).
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeFixture, pythonMissing, runCli, runPython, RUNNER_DIR, tempDir } from '../testing/helpers.mjs';
import { parseInputValues, randomInputs, seededInputs, valueTensor } from '../inputs.mjs';
import { writeTensorFile } from '../tensor_pb.mjs';

test('parseInputValues: NAME=V[,V...], each name once', () => {
  assert.deepEqual(parseInputValues(['rate=8000', 'm=true,false', 'x=1.5,-2e3']), { rate: ['8000'], m: ['true', 'false'], x: ['1.5', '-2e3'] });
  assert.deepEqual(parseInputValues(undefined), {});
  for (const bad of ['rate', '=3', 'rate=', 'rate=1,,2']) assert.throws(() => parseInputValues([bad]), /--input-value: expected NAME=V\[,V\.\.\.\]/, bad);
  assert.throws(() => parseInputValues(['a=1', 'a=2']), /'a' given twice/);
});

test('valueTensor: the declared shape and type, row-major; bools, halves, int64 exact', () => {
  assert.deepEqual(valueTensor({ name: 'rate', type: 'int64', shape: [] }, ['8000']), { name: 'rate', type: 'int64', dims: [], data: BigInt64Array.from([8000n]) });
  assert.deepEqual(valueTensor({ name: 'big', type: 'int64', shape: [1] }, ['9007199254740993']).data, BigInt64Array.from([9007199254740993n]));
  assert.deepEqual(valueTensor({ name: 'x', type: 'float32', shape: [2, 2] }, ['1', '-2.5', '3e2', '.5']).data, Float32Array.from([1, -2.5, 300, 0.5]));
  assert.deepEqual(valueTensor({ name: 'm', type: 'bool', shape: [3] }, ['true', 'false', '1']).data, Uint8Array.from([1, 0, 1]));
  assert.deepEqual(valueTensor({ name: 'h', type: 'float16', shape: [2] }, ['1', '-2']).data, Uint16Array.from([0x3c00, 0xc000]));
  assert.deepEqual(valueTensor({ name: 'u', type: 'uint8', shape: [] }, ['255']).data, Uint8Array.from([255]));
  // A symbolic dim: from --dim, else read off the element count.
  assert.deepEqual(valueTensor({ name: 'x', type: 'float32', shape: ['n', 2] }, ['1', '2', '3', '4', '5', '6']).dims, [3, 2]);
  assert.deepEqual(valueTensor({ name: 'x', type: 'float32', shape: ['n', 2] }, ['1', '2'], { dimValues: { n: 1 } }).dims, [1, 2]);
  const err = (spec, values, re) => assert.throws(() => valueTensor(spec, values), (e) => e.code === 2 && re.test(e.message), `${values}`);
  err({ name: 'x', type: 'float32', shape: [2, 2] }, ['1', '2', '3'], /^--input-value x: 3 values for shape \[2,2\] \(4 elements, row-major\)$/);
  err({ name: 'x', type: 'float32', shape: ['n', 2] }, ['1', '2'].concat(['3']), /3 values for shape \[1,2\]/);
  err({ name: 'x', type: 'float32', shape: [] }, ['abc'], /^--input-value x: 'abc' is not a number$/);
  err({ name: 'x', type: 'float32', shape: [] }, ['1e999'], /'1e999' is not a finite number/);
  err({ name: 'r', type: 'int64', shape: [] }, ['1.5'], /'1.5' is not an integer \(input is int64\)/);
  err({ name: 'u', type: 'uint8', shape: [] }, ['256'], /'256' is out of uint8's range/);
  err({ name: 'm', type: 'bool', shape: [] }, ['2'], /'2' is not a bool \(true\/false or 1\/0\)/);
  err({ name: 's', type: 'string', shape: [] }, ['1'], /a string input takes no numbers/);
});

test('seededInputs: the named input replaced, every other input as the seed gives it without the flag', () => {
  const specs = [
    { name: 'x', type: 'float32', shape: [2, 3] },
    { name: 'rate', type: 'int64', shape: [] },
    { name: 'y', type: 'float32', shape: [4] },
  ];
  const plain = randomInputs(specs, 3);
  const fixed = seededInputs(specs, 3, { inputValues: { rate: ['16000'] } });
  assert.deepEqual(fixed.tensors.x, plain.tensors.x);
  assert.deepEqual(fixed.tensors.y, plain.tensors.y);
  assert.deepEqual(fixed.tensors.rate.data, BigInt64Array.from([16000n]));
  assert.throws(() => seededInputs(specs, 3, { inputValues: { sr: ['1'] }, what: 'm.onnx' }),
    (e) => e.code === 2 && e.message === "--input-value: 'sr' is not an input of m.onnx (its inputs: x, rate, y)");
  // A name no stage reads is accepted and needs no tensor.
  assert.deepEqual(Object.keys(seededInputs(specs.slice(0, 1), 3, { inputValues: { rate: ['1'] }, unread: ['rate'] }).tensors), ['x']);
});

const skip = pythonMissing();

let ifDir;
function ifFixture() {
  if (!ifDir) {
    ifDir = tempDir('if-fixture');
    runPython([join(RUNNER_DIR, 'test', 'make_if_fixture.py'), ifDir]);
  }
  return ifDir;
}

test('an If inlined for one rate: the split checks against the unsplit model fed that rate, other inputs random', { skip }, () => {
  const dir = ifFixture();
  const deploy = join(dir, 'inlined');
  const model = join(dir, 'model.onnx');
  for (const seed of ['0', '1', '2']) {
    const r = runCli([deploy, '--check', model, '--input-value', 'rate=8000', '--seed', seed, '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const rep = JSON.parse(r.stdout);
    assert.equal(rep.check.ok, true);
    assert.deepEqual(rep.inputs.values, { rate: ['8000'] });
  }
  // A rate the split was not made for takes the other branch in the model.
  const other = runCli([deploy, '--check', model, '--input-value', 'rate=20000']);
  assert.equal(other.code, 3, other.stdout + other.stderr);
  assert.match(other.stdout, /MISMATCH: shape \[2,4\], expected \[2,8\]/);
  // Without --check no stage reads rate: the value is accepted, not needed,
  // and without it the split runs too.
  const alone = runCli([deploy, '--input-value', 'rate=8000', '--seed', '1', '--json']);
  assert.equal(alone.code, 0, alone.stdout + alone.stderr);
  const bare = runCli([deploy, '--seed', '1', '--json']);
  assert.equal(bare.code, 0, bare.stdout + bare.stderr);
  // The unsplit model alone takes either branch.
  const high = runCli([model, '--input-value', 'rate=20000', '--json']);
  assert.equal(high.code, 0, high.stderr);
  assert.deepEqual(JSON.parse(high.stdout).outputs[0].shape, [2, 8]);
});

test('exact contents reach the stages: the same run from input_N.pb files gives the same outputs', { skip }, () => {
  const dir = ifFixture();
  const tmp = tempDir('input-value');
  const deploy = join(dir, 'inlined');
  const flags = ['--input-value', 'x=1,-2,3,-4,5,-6,7,-8', '--input-value', 'mask=true,false,1,0,0,0,0,1', '--input-value', 'rate=8000'];
  const r = runCli([deploy, '--check', join(dir, 'model.onnx'), ...flags, '--save-outputs', join(tmp, 'out')]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  // y = Where(mask, Relu(x) * 2, x)
  const inputs = join(tmp, 'in');
  mkdirSync(inputs);
  writeTensorFile(join(inputs, 'input_0.pb'), { name: 'x', type: 'float32', dims: [2, 4], data: Float32Array.from([1, -2, 3, -4, 5, -6, 7, -8]) });
  writeTensorFile(join(inputs, 'input_1.pb'), { name: 'rate', type: 'int64', dims: [], data: BigInt64Array.from([8000n]) });
  writeTensorFile(join(inputs, 'input_2.pb'), { name: 'mask', type: 'bool', dims: [2, 4], data: Uint8Array.from([1, 0, 1, 0, 0, 0, 0, 1]) });
  const y = join(tmp, 'y');
  mkdirSync(y);
  writeTensorFile(join(y, 'output_0.pb'), { name: 'y', type: 'float32', dims: [2, 4], data: Float32Array.from([2, -2, 6, -4, 5, -6, 7, 0]) });
  for (const args of [['--inputs', inputs], flags]) {
    const e = runCli([deploy, '--check', join(dir, 'model.onnx'), ...args, '--expected', y]);
    assert.equal(e.code, 0, `${args}: ${e.stdout}${e.stderr}`);
  }
  assert.deepEqual(readFileSync(join(tmp, 'out', 'output_0.pb')).length > 0, true);
});

test('--input-value on the fixture deployment: every micro-batch gets the value, the rest stays seeded', { skip }, () => {
  const fx = makeFixture();
  const tmp = tempDir('input-value-mb');
  const ids = ['--input-value', 'ids=0,1,2,3,4,5'];
  const r = runCli([join(fx, 'deploy'), '--check', join(fx, 'model.onnx'), ...ids, '--microbatches', '3', '--seed', '2', '--save-outputs', tmp, '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(JSON.parse(r.stdout).check.microbatches_checked, 3);
  // Same seed, same value: same outputs; another value: different ones.
  assert.equal(runCli([join(fx, 'deploy'), ...ids, '--microbatches', '3', '--seed', '2', '--expected', tmp]).code, 0);
  assert.equal(runCli([join(fx, 'deploy'), '--input-value', 'ids=0,1,2,3,4,6', '--microbatches', '3', '--seed', '2', '--expected', tmp]).code, 3);
});

test('bad --input-value is one error line and exit 2', { skip }, () => {
  const dir = ifFixture();
  const deploy = join(dir, 'inlined');
  const model = join(dir, 'model.onnx');
  const cases = [
    [['--check', model, '--input-value', 'sr=8000'], "--input-value: 'sr' is not an input of " + model + ' (its inputs: x, rate, mask)'],
    [['--input-value', 'sr=8000'], "--input-value: 'sr' is not an input of the deployment (its inputs: x, rate, mask)"],
    [['--check', model, '--input-value', 'rate=8000,16000'], '--input-value rate: 2 values for shape [] (1 element, row-major)'],
    [['--check', model, '--input-value', 'x=1,2,3'], '--input-value x: 3 values for shape [2,4] (8 elements, row-major)'],
    [['--check', model, '--input-value', 'rate=fast'], "--input-value rate: 'fast' is not a number"],
    [['--check', model, '--input-value', 'mask=1,0,1,0,1,0,1,yes'], "--input-value mask: 'yes' is not a number (bool input: true/false or 1/0)"],
    [['--input-value', 'rate'], "--input-value: expected NAME=V[,V...], got 'rate'"],
    [['--inputs', dir, '--input-value', 'rate=1'], '--inputs and --input-value are exclusive (put the value in the input_N.pb file)'],
  ];
  for (const [args, message] of cases) {
    const r = runCli([deploy, ...args]);
    assert.equal(r.code, 2, `${args}: ${r.stdout}${r.stderr}`);
    assert.equal(r.stderr, `run_deployment: error: ${message}\n`, args.join(' '));
  }
});
