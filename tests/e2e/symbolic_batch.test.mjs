// A split serves any batch: models exported with a symbolic "batch" dim
// (tools/export_models.py, the *_dynbatch models: a CNN, a transformer
// encoder with a padding mask, a seq2seq transformer) are planned at
// --dim batch=2 over 3 devices, by SGP and by a seeded random placement, and
// the stage models are run at batch 1, 3 and 8 and checked against the
// unsplit model at the same batch. The stage models keep "batch" as the
// name of dim 0 of every graph input and output and of every cross-stage
// tensor that is batch-sized; plan.json's "symbolic_dims" says the same.
//
// Triton (--triton): the CNN's stages all lead with "batch", so its
// repository batches (max_batch_size 8, dims without the batch,
// dynamic_batching on every stage) and runs at batch 1 and 5, and refuses
// 9; with --triton-max-batch 0 it is the unbatched form, which runs too. The
// transformer's stages pass [seq, batch, hidden] tensors, so its repository
// stays unbatched and the summary names the tensor.
//
// An If decided by the batch alone (symbolic_if_model.py) is not inlined at
// the planned batch: it stays whole and takes its branch at run time.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, MODELS_DIR, autopar, randomPlacementFile, readPlan, runReport, runner, tempDir } from './helpers.mjs';
import { parseTextProto, readModelConfig } from '../../tools/runner/triton_repository.mjs';
import { pythonMissing, runPython } from '../../tools/runner/testing/helpers.mjs';

const MODELS = ['resnet18_dynbatch', 'transformer_encoder_masked_dynbatch', 'transformer_seq2seq_dynbatch'];
const skip = !CLI || !MODELS_DIR ? 'AUTOPAR_CLI or AUTOPAR_MODELS_DIR not set (run through ctest)' : false;

function split(model, out, args) {
  const r = autopar([model, '-o', out, '--stages', '--force', '--quiet', '--dim', 'batch=2', ...args]);
  assert.equal(r.code, 0, `onnx-autopar ${args.join(' ')}: ${r.stderr}`);
  return readPlan(out);
}

function checkAtBatches(out, model) {
  for (const batch of [1, 3, 8]) {
    const report = runReport(out, ['--check', model, '--dim', `batch=${batch}`]);
    assert.equal(report.check.ok, true, `batch ${batch}: ${JSON.stringify(report.check)}`);
    for (const o of report.outputs) assert.equal(o.shape[0], batch, `${o.name} at batch ${batch}: [${o.shape}]`);
  }
}

for (const name of MODELS) {
  test(`${name}: planned at batch 2, runs and matches the unsplit model at batch 1, 3 and 8`, { skip, timeout: 900000 }, () => {
    const model = join(MODELS_DIR, `${name}.onnx`);
    assert.ok(existsSync(model), `${model} is missing (the export_models fixture writes it)`);
    const dir = tempDir(`e2e-symbolic-${name}`);
    const sgp = join(dir, 'sgp');
    const plan = split(model, sgp, ['--devices', '3']);
    assert.ok(plan.stages.length > 1, 'one stage only: nothing crosses');
    const sym = plan.symbolic_dims;
    assert.ok(sym, 'plan.json has no symbolic_dims');
    assert.deepEqual(sym.symbols, { batch: 2 });
    // Every graph output and every batch-sized cross-stage tensor is named.
    assert.ok(sym.named_boundary_tensors > 0, JSON.stringify(sym));
    // What stays unnamed is batch × heads (2 × 4 at the plan) inside
    // attention, never the batch itself; the CNN has nothing unnamed.
    if (name.startsWith('resnet')) assert.deepEqual(sym.unnamed, []);
    for (const u of sym.unnamed) assert.equal(u.planned, 8, JSON.stringify(u));
    checkAtBatches(sgp, model);

    const random = join(dir, 'random');
    const placement = randomPlacementFile(plan, 3, 17, dir);
    split(model, random, ['--devices', '3', '--placement', placement]);
    checkAtBatches(random, model);
  });
}

/** Every config.pbtxt of the repository `dir`, read: {model name: config}. */
function configs(dir) {
  const out = {};
  for (const name of readdirSync(dir)) {
    const path = join(dir, name, 'config.pbtxt');
    if (existsSync(path)) out[name] = readModelConfig(parseTextProto(readFileSync(path, 'utf8')));
  }
  return out;
}

function splitTriton(model, out, extra) {
  const r = autopar([model, '-o', out, '--stages', '--triton', '--force', '--dim', 'batch=2', '--devices', '3', ...extra]);
  assert.equal(r.code, 0, `onnx-autopar --triton ${extra.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test('a CNN whose stages all lead with the batch gets a batching Triton repository that runs at two batches', { skip, timeout: 600000 }, () => {
  const model = join(MODELS_DIR, 'resnet18_dynbatch.onnx');
  const dir = tempDir('e2e-symbolic-triton');
  const out = join(dir, 'batched');
  const summary = splitTriton(model, out, []);
  assert.match(summary, /triton {5}max_batch_size 8 over 'batch', dynamic batching on every stage model/);
  const all = configs(join(out, 'triton'));
  const ensemble = all.resnet18_dynbatch;
  assert.equal(ensemble.maxBatchSize, 8);
  assert.deepEqual(ensemble.inputs.map((i) => i.dims), [[3, 224, 224]]);
  assert.deepEqual(ensemble.outputs.map((o) => o.dims), [[1000]]);
  const stages = Object.values(all).filter((c) => c.platform === 'onnxruntime_onnx');
  assert.ok(stages.length > 1);
  for (const c of stages) {
    assert.equal(c.maxBatchSize, 8, c.name);
    assert.equal(c.batching, true, `${c.name} has no dynamic_batching`);
  }
  for (const batch of [1, 5]) {
    const report = runReport(join(out, 'triton'), ['--check', model, '--dim', `batch=${batch}`]);
    assert.equal(report.check.ok, true, `batch ${batch}: ${JSON.stringify(report.check)}`);
    assert.equal(report.outputs[0].shape[0], batch);
  }
  const over = runner([join(out, 'triton'), '--check', model, '--dim', 'batch=9']);
  assert.notEqual(over.code, 0);
  assert.match(over.stdout, /batch is not in 1\.\.8/);

  // --triton-max-batch 0: the unbatched form, full shapes with -1.
  const plain = join(dir, 'plain');
  assert.match(splitTriton(model, plain, ['--triton-max-batch', '0']), /max_batch_size 0 \(no batching\): --triton-max-batch 0/);
  const e = configs(join(plain, 'triton')).resnet18_dynbatch;
  assert.equal(e.maxBatchSize, 0);
  assert.deepEqual(e.inputs.map((i) => i.dims), [[-1, 3, 224, 224]]);
  const report = runReport(join(plain, 'triton'), ['--check', model, '--dim', 'batch=3']);
  assert.equal(report.check.ok, true, JSON.stringify(report.check));
});

test('a transformer passing [seq, batch, hidden] between stages keeps an unbatched repository and says why', { skip, timeout: 600000 }, () => {
  const model = join(MODELS_DIR, 'transformer_encoder_masked_dynbatch.onnx');
  const out = join(tempDir('e2e-symbolic-triton-tf'), 'tf');
  const summary = splitTriton(model, out, []);
  assert.match(summary, /triton {5}max_batch_size 0 \(no batching\): stage \d+ (input|output) '[^']+' is \[[^\]]*\]: its dim 0 is not/);
  assert.equal(configs(join(out, 'triton')).transformer_encoder_masked_dynbatch.maxBatchSize, 0);
  const report = runReport(join(out, 'triton'), ['--check', model, '--dim', 'batch=3']);
  assert.equal(report.check.ok, true, JSON.stringify(report.check));
});

test('an If decided by the batch alone stays whole and decides at run time', { skip: skip || pythonMissing(), timeout: 300000 }, () => {
  const dir = tempDir('e2e-symbolic-if');
  runPython([join(import.meta.dirname, 'symbolic_if_model.py'), dir]);
  const model = join(dir, 'if_on_batch.onnx');
  const out = join(dir, 'split');
  const plan = split(model, out, ['--devices', '2']);
  assert.ok('by_batch' in plan.node_to_device, Object.keys(plan.node_to_device).join(' '));
  // Batch 1 takes the other branch than the planned batch 2.
  for (const batch of [1, 3]) {
    const report = runReport(out, ['--check', model, '--dim', `batch=${batch}`]);
    assert.equal(report.check.ok, true, `batch ${batch}: ${JSON.stringify(report.check)}`);
  }
});
