// Triton model repositories: the text-format parser, the config reader, and
// running a hand-made repository of the fixture's stage models
// (make_fixture.py) through its ensemble — from the configs alone, with the
// ensemble's tensors named unlike the models' so that only the maps wire
// them. Wiring mistakes are either refused as Triton would refuse them
// (exit 2) or caught by --check (exit 3).
import test from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeFixture, pythonMissing, runCli, runPython, tempDir } from '../testing/helpers.mjs';
import { checkRepository, loadTritonRepository, parseTextProto, readModelConfig, stepOrder } from '../triton_repository.mjs';

// ---------------------------------------------------------------------------
// Parser and reader
// ---------------------------------------------------------------------------

const config = (text) => readModelConfig(parseTextProto(text));

test('text format: fields, nested messages, lists, comments and separators', () => {
  const c = config(`
    # a comment
    name: "m" platform: "onnxruntime_onnx"; max_batch_size: 0,
    input [ { name: "a" data_type: TYPE_FP32 dims: [ -1, 3 ] }, { name: "b", data_type: TYPE_INT64, dims: 4 dims: 5 } ]
    output < name: "y" data_type: 11 dims: [ 1 ] reshape: { shape: [ ] } >
    instance_group [ { kind: KIND_GPU count: 2 gpus: [ 0, 3 ] } ]`);
  assert.equal(c.name, 'm');
  assert.equal(c.platform, 'onnxruntime_onnx');
  assert.equal(c.maxBatchSize, 0);
  assert.deepEqual(c.inputs.map((i) => [i.name, i.dataType, i.dims]), [['a', 'TYPE_FP32', [-1, 3]], ['b', 'TYPE_INT64', [4, 5]]]);
  assert.deepEqual(c.outputs[0], { name: 'y', dataType: 'TYPE_FP32', dims: [1], reshape: [], optional: false });
  assert.deepEqual(c.instanceGroups, [{ kind: 'KIND_GPU', count: 2, gpus: [0, 3] }]);
  assert.equal(c.ensemble, null);
});

test('text format: string escapes, UTF-8 and adjacent literals', () => {
  const names = config(String.raw`
    input { name: "q\"uo'te\\" }
    input { name: 'single "quoted"' }
    input { name: "caf\303\251 \xe2\x86\x92 \u65e5" }
    input { name: "日本" "語" }
    input { name: "\303" "\251" }
    input { name: "tab\there\n" }`).inputs.map((i) => i.name);
  assert.deepEqual(names, [`q"uo'te\\`, 'single "quoted"', 'café → 日', '日本語', 'é', 'tab\there\n']);
});

test('text format: ensemble steps and their maps', () => {
  const c = config(`
    name: "e" platform: "ensemble"
    ensemble_scheduling {
      step [
        { model_name: "m_s0" model_version: -1
          input_map { key: "x" value: "in" } input_map { key: "w" value: "in" }
          output_map { key: "y" value: "mid" } },
        { model_name: "m_s1" model_version: 2 input_map: [ { key: "a", value: "mid" } ] }
      ]
    }`);
  const [s0, s1] = c.ensemble.steps;
  assert.equal(s0.modelName, 'm_s0');
  assert.equal(s0.modelVersion, -1);
  assert.deepEqual([...s0.inputMap], [['x', 'in'], ['w', 'in']]);
  assert.deepEqual([...s0.outputMap], [['y', 'mid']]);
  assert.equal(s1.modelVersion, 2);
  assert.deepEqual([...s1.inputMap], [['a', 'mid']]);
  assert.equal(s1.outputMap.size, 0);
});

test('text format: unknown fields are skipped, mistakes name their line and column', () => {
  assert.equal(config('dynamic_batching { max_queue_delay_microseconds: 100 } name: "m"').name, 'm');
  assert.throws(() => parseTextProto('name: "m"\ninput { name "x" }'), /line 2 column 14: expected ':' after 'name'/);
  assert.throws(() => parseTextProto('name: "unterminated'), /line 1 column 7: unterminated string/);
  assert.throws(() => parseTextProto('input { name: "x"'), /missing '}'/);
  assert.throws(() => parseTextProto('name: "\\q"'), /unknown escape/);
  assert.throws(() => parseTextProto('name: @'), /unexpected character '@'/);
  assert.throws(() => config('name: "a" name: "b"'), /name: given more than once/);
  assert.throws(() => config('input { data_type: TYPE_NOPE }'), /input\[0\]\.data_type: 'TYPE_NOPE' is not one of/);
  assert.throws(() => config('input { dims: "3" }'), /input\[0\]\.dims: expected a number/);
});

// ---------------------------------------------------------------------------
// A hand-made repository of the fixture's stages
// ---------------------------------------------------------------------------

const skip = pythonMissing();
const fx = skip ? null : makeFixture();
const corruptFx = skip ? null : makeFixture({ corrupt: true });
const model = () => join(fx, 'model.onnx');

const io = (kind, name, type, dims) => `${kind} { name: "${name}" data_type: ${type} dims: [ ${dims.join(', ')} ] }`;
const F = 'TYPE_FP32';
const I64 = 'TYPE_INT64';
// The fixture's stages (make_fixture.py): their tensors as the models name them.
const STAGES = [
  { inputs: [['ids', I64, [2, 3]], ['x', F, [2, 8]]], outputs: [['r', F, [2, 16]], ['t', F, [2, 8]]], gpu: 0 },
  { inputs: [['r', F, [2, 16]]], outputs: [['y', F, [2, 4]]], gpu: 1 },
  { inputs: [['t', F, [2, 8]]], outputs: [['s', F, [2, 4]]], gpu: 0 },
  { inputs: [['y', F, [2, 4]], ['s', F, [2, 4]]], outputs: [['z', F, [2, 4]], ['idx', I64, [2]]], gpu: 0 },
];
// Ensemble tensor of each model tensor: internal ones renamed, graph inputs
// and outputs under their own names.
const ENSEMBLE_NAME = { ids: 'ids', x: 'x', r: 'relu/out 0', t: 'tanh "t"', y: 'y', s: 'branch→s', z: 'z', idx: 'idx' };
const q = (s) => JSON.stringify(s);

/** Steps of the ensemble: [stage, inputMap {model: ensemble}, outputMap]. */
function defaultSteps() {
  return STAGES.map((s, k) => ({
    stage: k,
    inputMap: Object.fromEntries(s.inputs.map(([n]) => [n, ENSEMBLE_NAME[n]])),
    outputMap: Object.fromEntries(s.outputs.map(([n]) => [n, ENSEMBLE_NAME[n]])),
  }));
}

/** Writes a repository into a fresh folder; `change` may edit the pieces first. Returns its path. */
function writeRepository({ steps = defaultSteps(), stageConfig = (k, text) => text, fixture = fx, extra = () => {} } = {}) {
  const repo = join(tempDir('triton'), 'triton');
  STAGES.forEach((s, k) => {
    const dir = join(repo, `fx_s${k}`);
    mkdirSync(join(dir, '1'), { recursive: true });
    cpSync(join(fixture, 'deploy', 'stages', `s${k}.onnx`), join(dir, '1', 'model.onnx'));
    const text = [`name: "fx_s${k}"`, 'platform: "onnxruntime_onnx"', 'max_batch_size: 0',
      ...s.inputs.map(([n, t, d]) => io('input', n, t, d)), ...s.outputs.map(([n, t, d]) => io('output', n, t, d)),
      `instance_group [ { kind: KIND_GPU count: 1 gpus: [ ${s.gpu} ] } ]`].join('\n');
    writeFileSync(join(dir, 'config.pbtxt'), stageConfig(k, text));
  });
  mkdirSync(join(repo, 'fx', '1'), { recursive: true });
  const map = (field, m) => Object.entries(m).map(([k, v]) => `${field} { key: ${q(k)} value: ${q(v)} }`).join(' ');
  writeFileSync(join(repo, 'fx', 'config.pbtxt'), [
    'name: "fx"', 'platform: "ensemble"', 'max_batch_size: 0',
    io('input', 'ids', I64, [2, 3]), io('input', 'x', F, [2, 8]),
    io('output', 'y', F, [2, 4]), io('output', 'z', F, [2, 4]), io('output', 'idx', I64, [2]),
    'ensemble_scheduling {',
    ...steps.map((s) => `  step { model_name: "fx_s${s.stage}" model_version: -1 ${map('input_map', s.inputMap)} ${map('output_map', s.outputMap)} }`),
    '}'].join('\n'));
  extra(repo);
  return repo;
}

const runJson = (args) => {
  const r = runCli([...args, '--json']);
  let rep = null;
  try {
    rep = JSON.parse(r.stdout);
  } catch {
    // reported below
  }
  return { ...r, rep };
};

test('a repository runs through its ensemble, wired by the maps alone, and matches the model', { skip }, () => {
  const repo = writeRepository();
  const r = runJson([repo, '--check', model()]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.rep.mode, 'triton');
  assert.equal(r.rep.ensemble, 'fx');
  assert.equal(r.rep.steps, 4);
  assert.deepEqual(r.rep.order, [0, 1, 2, 3]);
  assert.deepEqual(r.rep.outputs.map((o) => [o.name, o.type, o.shape]), [['y', 'float32', [2, 4]], ['z', 'float32', [2, 4]], ['idx', 'int64', [2]]]);
  assert.equal(r.rep.check.ok, true);
  assert.ok(r.rep.check.max_abs <= 1e-6);
  assert.deepEqual(r.rep.models[1].instance_groups, [{ kind: 'KIND_GPU', count: 1, gpus: [1] }]);

  const human = runCli([repo, '--check', model()]);
  assert.equal(human.code, 0);
  assert.match(human.stdout, /^ran Triton ensemble 'fx': 4 steps wired from config\.pbtxt alone/m);
  assert.match(human.stdout, /KIND_GPU \[0\]: 3 models, KIND_GPU \[1\]: 1 model/);
  assert.match(human.stdout, /^PASS vs original model: 3 outputs/m);
});

test('steps run when their inputs exist, whatever order the config lists them in', { skip }, () => {
  const steps = defaultSteps().reverse();
  const repo = writeRepository({ steps });
  const loaded = loadTritonRepository(repo);
  assert.deepEqual(stepOrder(loaded).order, [3, 1, 2, 0]); // step indices: s0 is listed last
  const r = runJson([repo, '--check', model(), '--microbatches', '2']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.rep.check.microbatches_checked, 2);
});

test('crossed wiring with consistent configs is caught by --check (exit 3)', { skip }, () => {
  // Step 1 writes its y into the ensemble tensor meant for s, and step 2 its
  // s into 'y': both float32 [2,4], so Triton would accept it, but the
  // ensemble's output y is now s (z = y + s is unchanged).
  const steps = defaultSteps();
  steps[1].outputMap = { y: 'branch→s' };
  steps[2].outputMap = { s: 'y' };
  const r = runJson([writeRepository({ steps }), '--check', model()]);
  assert.equal(r.code, 3, r.stdout + r.stderr);
  assert.equal(r.rep.check.ok, false);
  assert.equal(r.rep.check.outputs.find((o) => o.name === 'y').ok, false);
});

test('wrong weights in a stage are caught by --check (exit 3)', { skip }, () => {
  const r = runJson([writeRepository({ fixture: corruptFx }), '--check', model()]);
  assert.equal(r.code, 3, r.stdout + r.stderr);
});

const refused = (options, pattern) => {
  const r = runCli([writeRepository(options), '--check', model()]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
  assert.match(r.stderr, pattern);
};

test('what Triton would refuse is a one-line error (exit 2)', { skip }, () => {
  let steps = defaultSteps();
  steps[1].inputMap = { r: ENSEMBLE_NAME.t }; // [2,8] into a [2,16] input
  refused({ steps }, /ensemble tensor 'tanh "t"' has dims \[2, 8\] in step 0 \(fx_s0\) but \[2, 16\] in step 1/);
  steps = defaultSteps();
  steps[3].inputMap = { y: 'y' };
  refused({ steps }, /input 's' of step 3 \(fx_s3\) is not mapped to any ensemble tensor/);
  steps = defaultSteps();
  steps[3].inputMap.bogus = 'y';
  refused({ steps }, /maps ensemble tensor 'y' to 'bogus', which is not an input of fx_s3/);
  steps = defaultSteps();
  steps[2].inputMap = { t: 'nobody' };
  refused({ steps }, /reads 'nobody', which is neither an ensemble input nor any step's output/);
  steps = defaultSteps();
  steps[2].outputMap = { s: 'y' };
  refused({ steps }, /ensemble tensor 'y' is produced by steps 1 and 2/);
  refused({ stageConfig: (k, text) => (k === 1 ? text.replace('data_type: TYPE_FP32 dims: [ 2, 16 ]', 'data_type: TYPE_FP64 dims: [ 2, 16 ]') : text) },
    /fx_s1: input 'r' is TYPE_FP64 in the config but float32 in the model/);
  refused({ stageConfig: (k, text) => (k === 2 ? text.replace('dims: [ 2, 4 ]', 'dims: [ 2, 5 ]') : text) },
    /fx_s2: output 's' has dims \[2, 5\] in the config but \[2, 4\] in the model/);
  refused({ stageConfig: (k, text) => (k === 0 ? text.replace('name: "fx_s0"', 'name: "other"') : text) },
    /name 'other' is not the folder's name 'fx_s0'/);
  refused({ extra: (repo) => rmSync(join(repo, 'fx', '1'), { recursive: true }) }, /fx: no version folder/);
  refused({ extra: (repo) => cpSync(join(repo, 'fx'), join(repo, 'fx2'), { recursive: true }) }, /name 'fx' is not the folder's name 'fx2'/);
  refused({
    extra: (repo) => {
      cpSync(join(repo, 'fx'), join(repo, 'fx2'), { recursive: true });
      writeFileSync(join(repo, 'fx2', 'config.pbtxt'), 'platform: "ensemble" ensemble_scheduling { }');
    },
  }, /2 ensemble models \(fx, fx2\)/);
  refused({ stageConfig: (k, text) => (k === 3 ? text.replace('onnxruntime_onnx', 'tensorrt_plan') : text) },
    /platform 'tensorrt_plan' is not one the runner executes/);
  refused({ stageConfig: (k, text) => (k === 1 ? `${text}\ninput { name: "r" ` : text) }, /fx_s1\/config\.pbtxt: .*missing '}'/);
});

test('checkRepository reports every problem it finds', { skip }, () => {
  const steps = defaultSteps();
  steps[3].inputMap = { y: 'y' };
  steps[2].inputMap = { t: 'nobody' };
  const repo = loadTritonRepository(writeRepository({ steps }));
  const meta = new Map(STAGES.map((s, k) => [k, {
    inputs: s.inputs.map(([name, , shape]) => ({ name, type: name === 'ids' ? 'int64' : 'float32', shape })),
    outputs: s.outputs.map(([name, , shape]) => ({ name, type: name === 'idx' ? 'int64' : 'float32', shape })),
  }]));
  const errors = checkRepository(repo, meta);
  assert.equal(errors.length, 2, errors.join('\n'));
});

test('steps that wait on each other are a cycle', () => {
  const tensor = (name) => ({ name, dataType: 'TYPE_FP32', dims: [2], reshape: null, optional: false });
  const stage = (name, input, output) => ({ name, config: { maxBatchSize: 0, inputs: [tensor(input)], outputs: [tensor(output)], instanceGroups: [] } });
  const a = stage('a', 'in', 'out');
  const b = stage('b', 'in', 'out');
  const repo = {
    ensemble: { name: 'e', config: { maxBatchSize: 0, inputs: [tensor('x')], outputs: [tensor('y')] } },
    steps: [
      { index: 0, modelName: 'a', model: a, inputMap: new Map([['in', 'x']]), outputMap: new Map([['out', 'p']]) },
      { index: 1, modelName: 'b', model: b, inputMap: new Map([['in', 'q']]), outputMap: new Map([['out', 'y']]) },
      { index: 2, modelName: 'b', model: b, inputMap: new Map([['in', 'y']]), outputMap: new Map([['out', 'q']]) },
    ],
  };
  const meta = new Map([0, 1, 2].map((k) => [k, { inputs: [{ name: 'in', type: 'float32', shape: [2] }], outputs: [{ name: 'out', type: 'float32', shape: [2] }] }]));
  assert.deepEqual(checkRepository(repo, meta), ['e: steps 1, 2 wait on each other (a cycle)']);
  assert.deepEqual(stepOrder(repo), { order: [0], stuck: [1, 2] });
});

test('a scalar crosses as dims [1] with reshape { shape: [] } and matches the scalar model', { skip }, () => {
  const dir = tempDir('scalar');
  // m.onnx: y = x * ReduceSum(x); s0: x -> s (scalar), s1: x, s -> y.
  runPython(['-c', `
import onnx, sys
from onnx import helper, TensorProto as T
d = sys.argv[1]
def save(name, nodes, ins, outs):
    g = helper.make_graph(nodes, name, ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]); m.ir_version = 8
    onnx.checker.check_model(m); onnx.save(m, f"{d}/{name}.onnx")
x = helper.make_tensor_value_info("x", T.FLOAT, [3])
s = helper.make_tensor_value_info("s", T.FLOAT, [])
y = helper.make_tensor_value_info("y", T.FLOAT, [3])
r = helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)
mul = helper.make_node("Mul", ["x", "s"], ["y"])
save("m", [r, mul], [x], [y]); save("s0", [r], [x], [s]); save("s1", [mul], [x, s], [y])
`, dir]);
  const repo = join(dir, 'triton');
  const stage = (k, body) => {
    mkdirSync(join(repo, `m_s${k}`, '1'), { recursive: true });
    cpSync(join(dir, `s${k}.onnx`), join(repo, `m_s${k}`, '1', 'model.onnx'));
    writeFileSync(join(repo, `m_s${k}`, 'config.pbtxt'), `platform: "onnxruntime_onnx" max_batch_size: 0 ${body}`);
  };
  stage(0, `${io('input', 'x', F, [3])} output { name: "s" data_type: TYPE_FP32 dims: [ 1 ] reshape { } }`);
  stage(1, `${io('input', 'x', F, [3])} input { name: "s" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } } ${io('output', 'y', F, [3])}`);
  mkdirSync(join(repo, 'm', '1'), { recursive: true });
  writeFileSync(join(repo, 'm', 'config.pbtxt'), `platform: "ensemble" max_batch_size: 0 ${io('input', 'x', F, [3])} ${io('output', 'y', F, [3])}
    ensemble_scheduling { step { model_name: "m_s0" model_version: -1 input_map { key: "x" value: "x" } output_map { key: "s" value: "sum" } }
                          step { model_name: "m_s1" model_version: -1 input_map { key: "x" value: "x" } input_map { key: "s" value: "sum" } output_map { key: "y" value: "y" } } }`);
  const r = runJson([repo, '--check', join(dir, 'm.onnx')]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.rep.check.ok, true);
  // Without the reshape the scalar model output does not fit dims [1].
  writeFileSync(join(repo, 'm_s0', 'config.pbtxt'), `platform: "onnxruntime_onnx" max_batch_size: 0 ${io('input', 'x', F, [3])} ${io('output', 's', F, [1])}`);
  const bad = runCli([repo, '--check', join(dir, 'm.onnx')]);
  assert.equal(bad.code, 2, bad.stdout + bad.stderr);
  assert.match(bad.stderr, /m_s0: output 's' has dims \[1\] in the config but \[\] in the model/);
});

test('--input-value feeds the ensemble and the --check model the same contents; other inputs stay seeded', { skip }, () => {
  const repo = writeRepository();
  const tmp = tempDir('triton-input-value');
  const ids = ['--input-value', 'ids=9,8,7,0,1,2'];
  const r = runJson([repo, '--check', model(), '--seed', '4', ...ids, '--save-outputs', join(tmp, 'triton')]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.rep.check.ok, true);
  assert.deepEqual(r.rep.inputs.values, { ids: ['9', '8', '7', '0', '1', '2'] });
  // The plan.json deployment of the same stages, same flags: the same outputs.
  const d = runCli([join(fx, 'deploy'), '--check', model(), '--seed', '4', ...ids, '--save-outputs', join(tmp, 'deploy')]);
  assert.equal(d.code, 0, d.stdout + d.stderr);
  for (const f of ['output_0.pb', 'output_1.pb', 'output_2.pb']) assert.deepEqual(readFileSync(join(tmp, 'triton', f)), readFileSync(join(tmp, 'deploy', f)), f);
  const other = runCli([repo, '--seed', '4', '--input-value', 'ids=9,8,7,0,1,3', '--expected', join(tmp, 'triton')]);
  assert.equal(other.code, 3, other.stdout + other.stderr);
  const unknown = runCli([repo, '--input-value', 'rate=8000']);
  assert.equal(unknown.code, 2);
  assert.equal(unknown.stderr, "run_deployment: error: --input-value: 'rate' is not an input of the ensemble 'fx' (its inputs: ids, x)\n");
});

test('options that time or profile steps are refused for a repository', { skip }, () => {
  const r = runCli([writeRepository(), '--repeat', '3']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--repeat is not available for a Triton repository/);
});

test('a batching config is read with its batch dim back, and a mixed or fixed-batch repository is refused', { skip }, () => {
  // The fixture's stages have a fixed dim 0 (2): written as a batching
  // repository (max_batch_size 4, dims without dim 0), the full shapes
  // [-1, ...] meet a fixed 2 in the models, which Triton's backend refuses.
  const batched = writeRepository({
    stageConfig: (k, text) => text.replace('max_batch_size: 0', 'max_batch_size: 4\ndynamic_batching { }').replace(/dims: \[ 2(, )?/g, 'dims: [ '),
    extra: (repo) => {
      const path = join(repo, 'fx', 'config.pbtxt');
      writeFileSync(path, readFileSync(path, 'utf8').replace('max_batch_size: 0', 'max_batch_size: 4').replace(/dims: \[ 2(, )?/g, 'dims: [ '));
    },
  });
  const r = runCli([batched]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /fx_s0: input '[^']+' has dims \[-1, [^\]]*\] in the config but \[2, [^\]]*\] in the model/);
  assert.doesNotMatch(r.stderr, /max_batch_size/);
  // A batching ensemble over steps that do not batch.
  const mixed = writeRepository({
    extra: (repo) => {
      const path = join(repo, 'fx', 'config.pbtxt');
      writeFileSync(path, readFileSync(path, 'utf8').replace('max_batch_size: 0', 'max_batch_size: 4'));
    },
  });
  const m = runCli([mixed]);
  assert.equal(m.code, 2);
  assert.match(m.stderr, /fx_s0: max_batch_size 0, less than the ensemble's 4/);
});
