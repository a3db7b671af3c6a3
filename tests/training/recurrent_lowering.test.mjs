// The recurrent lowering (training/recurrent_lowering.h) computes what the
// node it replaces computes: for each LSTM, GRU and RNN variant of
// rule_cases_recurrent.py (directions, linear_before_reset, layouts, optional
// inputs and outputs, peepholes, activations), the main command writes the
// training step, whose gradient model holds the unrolled node under the
// node's own output names; with those outputs exposed, ONNX Runtime must give
// the same Y, Y_h and Y_c as the fused node (float32, within 1e-5), and the
// step must hold no recurrent node any more. A recurrent node off the
// gradient path stays as it is, and what the lowering refuses is one clear
// error.
//
//   AUTOPAR_CLI=build/tools/onnx-autopar node --test tests/training/recurrent_lowering.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, tempDir } from '../e2e/helpers.mjs';
import { runPython } from '../../tools/runner/testing/helpers.mjs';
import { createSession, runSession } from '../../tools/runner/ort_session.mjs';
import { readTensorFile } from '../../tools/runner/tensor_pb.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const SCRIPT = join(HERE, 'rule_cases_recurrent.py');
const TOLERANCE = 1e-5;
const casesDir = tempDir('recurrent-cases');
runPython([SCRIPT, 'forward', casesDir]);
const cases = readdirSync(casesDir).sort();

/** The training step of `model` with the loss output:loss; returns { code, out, output }. */
function writeStep(model) {
  const out = join(tempDir('recurrent-out'), 'out');
  const r = autopar([model, '-o', out, '--devices', '1', '--mode', 'training', '--loss', 'output:loss',
    '--optimizer', 'sgd', '--no-report', '--quiet']);
  return { code: r.code, out, output: `${r.stdout}${r.stderr}` };
}

test('there are cases', () => assert.ok(cases.length >= 15, `only ${cases.length} cases in ${casesDir}`));

for (const name of cases) {
  test(`${name}: the unrolled node computes the fused node's outputs`, async () => {
    const dir = join(casesDir, name);
    const meta = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8'));
    const step = writeStep(join(dir, 'model.onnx'));
    assert.equal(step.code, 0, `onnx-autopar failed: ${step.output}`);
    const plan = JSON.parse(readFileSync(join(step.out, 'plan.json'), 'utf8')).training;
    const exposed = join(tempDir('recurrent-exposed'), 'step.onnx');
    const ops = JSON.parse(runPython([SCRIPT, 'expose', join(step.out, plan.models.gradient),
      join(dir, 'model.onnx'), exposed]));
    for (const op of ['LSTM', 'GRU', 'RNN']) assert.ok(!ops.includes(op), `the step still holds ${op}: ${ops}`);

    const x = readTensorFile(join(dir, 'x.pb'));
    const feeds = { x };
    for (const w of plan.weights) feeds[w.name] = readTensorFile(join(dir, 'weights', meta.weights[w.name]));
    assert.deepEqual(plan.weights.map((w) => w.name).sort(), Object.keys(meta.weights).sort());
    const want = await runSession(await createSession(join(dir, 'reference.onnx')), { x }, meta.outputs, name);
    const got = await runSession(await createSession(exposed), feeds, meta.outputs, name);
    let maxAbs = 0;
    for (const o of meta.outputs) {
      assert.deepEqual(got[o].dims, want[o].dims, `${o}: shape`);
      for (let i = 0; i < want[o].data.length; i++) {
        const diff = Math.abs(got[o].data[i] - want[o].data[i]);
        maxAbs = Math.max(maxAbs, diff);
        assert.ok(diff <= TOLERANCE, `${name} ${o}[${i}] = ${got[o].data[i]}, the fused node gives ${want[o].data[i]}`);
      }
    }
    console.log(`# ${name}: ${meta.outputs.join(', ')} max |diff| ${maxAbs.toExponential(2)}`);
  });
}

/** Writes a small model with Python (onnx.helper) from `body`, a snippet defining `nodes`, `inits`, `inputs`. */
function pythonModel(body) {
  const path = join(tempDir('recurrent-model'), 'model.onnx');
  const script = `
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
r = np.random.default_rng(0)
f = lambda *s: numpy_helper.from_array(r.uniform(-1, 1, s).astype(np.float32))
def init(name, *s):
    t = f(*s); t.name = name; return t
${body}
g = helper.make_graph(nodes, "m", inputs, [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]); m.ir_version = 8
onnx.checker.check_model(m, full_check=True)
onnx.save(m, ${JSON.stringify(path)})
`;
  const file = join(tempDir('recurrent-script'), 'make.py');
  writeFileSync(file, script);
  runPython([file]);
  return path;
}

test('an LSTM off the gradient path (constant weights, a data input) stays fused', () => {
  const model = pythonModel(`
nodes = [helper.make_node("Constant", [], ["w"], value=f(1, 16, 3)),
         helper.make_node("Constant", [], ["r"], value=f(1, 16, 4)),
         helper.make_node("LSTM", ["x", "w", "r"], ["", "h"], hidden_size=4),
         helper.make_node("Reshape", ["h", "shape"], ["h2"]),
         helper.make_node("MatMul", ["h2", "head"], ["y"]),
         helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)]
inits = [init("head", 4, 2), numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "shape")]
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2, 3])]`);
  const step = writeStep(model);
  assert.equal(step.code, 0, `onnx-autopar failed: ${step.output}`);
  const plan = JSON.parse(readFileSync(join(step.out, 'plan.json'), 'utf8')).training;
  assert.deepEqual(plan.weights.map((w) => w.name), ['head']);
  const ops = JSON.parse(runPython([SCRIPT, 'expose', join(step.out, plan.models.gradient), model,
    join(tempDir('recurrent-exposed'), 'step.onnx')]));
  assert.ok(ops.includes('LSTM'), `the LSTM was lowered: ${ops}`);
});

for (const [what, attrs, extra, message] of [
  ['varying sequence lengths', '', 'numpy_helper.from_array(np.array([3, 2], dtype=np.int32), "lens")',
    /varying sequence lengths/],
  ['an activation without a lowering', ', activations=["HardSigmoid", "Tanh", "Tanh"]', '', /activation 'HardSigmoid' has no lowering/],
  ['clip', ', clip=3.0', '', /the clip attribute is not supported/],
]) {
  test(`an LSTM with ${what} on the gradient path is one clear error`, () => {
    const lens = extra ? '"lens"' : '""';
    const model = pythonModel(`
nodes = [helper.make_node("LSTM", ["x", "w", "r", "", ${lens}], ["y"], hidden_size=4${attrs}),
         helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)]
inits = [init("w", 1, 16, 3), init("r", 1, 16, 4)]
${extra ? `inits.append(${extra})` : ''}
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2, 3])]`);
    const step = writeStep(model);
    assert.notEqual(step.code, 0, 'onnx-autopar accepted it');
    assert.match(step.output, /node '.*' \(LSTM\) cannot be unrolled for training: /);
    assert.match(step.output, message);
  });
}
