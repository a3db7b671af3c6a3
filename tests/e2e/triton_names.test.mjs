// A Triton repository of a model whose tensor names hold quotes, slashes,
// backslashes, spaces and non-ASCII text (graph input, outputs, every tensor
// that crosses devices), in a file whose name is no valid Triton model name:
// split over 3 devices with --stages --triton, its configs parse back in the
// runner's text-format reader with every name intact, no two models share a
// name, and the ensemble run from the configs alone matches the unsplit
// model in ONNX Runtime.
import test from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, autopar, runReport, tempDir } from './helpers.mjs';
import { pythonMissing, runPython } from '../../tools/runner/testing/helpers.mjs';
import { loadTritonRepository } from '../../tools/runner/triton_repository.mjs';

const NAMES = {
  input: 'in "quoted" \'x\' / ü',
  // One per node's output, in order; the last two are the graph outputs.
  tensors: ['layer/0 "relu"', 'a\\b c\'d', '日本 語/→', 'tab\there', 'sum "ü" /out', 'käse / "mask"'],
};
const DEVICES = 3;

// The graph: a chain with skips, so that most tensors cross devices when
// node i runs on device i % 3. Weights have odd names too.
const MAKE_MODEL = String.raw`
import json, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
path, names = sys.argv[1], json.loads(sys.argv[2])
x, (t0, t1, t2, t3, t4, t5) = names["input"], names["tensors"]
rng = np.random.default_rng(19)
w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), 'w "weight"/ß')
nodes = [
    helper.make_node("Relu", [x], [t0], name='relu "0"/ä'),
    helper.make_node("MatMul", [t0, w.name], [t1], name="matmul 1"),
    helper.make_node("Tanh", [t1], [t2], name="tanh/2"),
    helper.make_node("Add", [t0, t2], [t3], name="add 3 é"),
    helper.make_node("Mul", [t3, t1], [t4], name="mul/4"),
    helper.make_node("Sigmoid", [t2], [t5], name='sigmoid "5"'),
]
graph = helper.make_graph(nodes, "names",
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info(t4, TensorProto.FLOAT, [2, 8]),
                           helper.make_tensor_value_info(t5, TensorProto.FLOAT, [2, 8])], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, path)
print(json.dumps([n.name for n in nodes]))
`;

const skip = !CLI ? 'AUTOPAR_CLI not set (run through ctest)' : pythonMissing();

test('names with quotes, slashes, spaces and non-ASCII survive a Triton repository over 3 devices', { skip, timeout: 120000 }, () => {
  const work = tempDir('e2e-triton-names');
  const model = join(work, 'mödel "v2" #1.onnx');
  const nodes = JSON.parse(runPython(['-c', MAKE_MODEL, model, JSON.stringify(NAMES)]));
  const placement = join(work, 'placement.json');
  writeFileSync(placement, JSON.stringify(Object.fromEntries(nodes.map((n, i) => [n, i % DEVICES]))));

  const out = join(work, 'out');
  const split = autopar([model, '-o', out, '--devices', String(DEVICES), '--placement', placement, '--stages', '--triton', '--quiet']);
  assert.equal(split.code, 0, split.stderr);

  // The configs as the runner reads them (a config that did not parse, or
  // whose name is not its folder's, fails here).
  const repo = loadTritonRepository(join(out, 'triton'));
  assert.match(repo.ensemble.name, /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/);
  const names = [...repo.models.keys()];
  assert.equal(new Set(names).size, names.length);
  assert.ok(repo.steps.length >= DEVICES, `${repo.steps.length} stages`);
  assert.equal(new Set(repo.steps.map((s) => s.modelName)).size, repo.steps.length, 'two steps run the same model');
  const ecfg = repo.ensemble.config;
  assert.deepEqual(ecfg.inputs.map((io) => io.name), [NAMES.input]);
  assert.deepEqual(ecfg.outputs.map((io) => io.name).sort(), [NAMES.tensors[4], NAMES.tensors[5]].sort());
  // Every tensor is wired under its own name, each produced by one step.
  const produced = repo.steps.flatMap((s) => [...s.outputMap]);
  for (const [key, tensor] of produced) assert.equal(key, tensor);
  assert.deepEqual(produced.map(([, t]) => t).sort(), [...NAMES.tensors].sort());
  const read = new Set(repo.steps.flatMap((s) => [...s.inputMap.values()]));
  for (const name of [NAMES.input, ...NAMES.tensors.slice(0, 4)]) assert.ok(read.has(name), `no step reads '${name}'`);
  for (const m of repo.models.values()) {
    for (const io of [...m.config.inputs, ...m.config.outputs]) {
      assert.ok(io.dims.every((d) => d > 0), `${m.name}: '${io.name}' has dims [${io.dims}]`);
    }
  }

  const report = runReport(join(out, 'triton'), ['--check', model]);
  assert.equal(report.check.ok, true, JSON.stringify(report.check));
  assert.equal(report.steps, repo.steps.length);
});
