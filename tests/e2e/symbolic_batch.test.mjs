// A split serves any batch: models exported with a symbolic "batch" dim
// (tools/export_models.py, the *_dynbatch models: a CNN, a transformer
// encoder with a padding mask, a seq2seq transformer) are planned at
// --dim batch=2 over 3 devices, by SGP and by a seeded random placement, and
// the stage models are run at batch 1, 3 and 8 and checked against the
// unsplit model at the same batch. The stage models keep "batch" as the
// name of dim 0 of every graph input and output and of every cross-stage
// tensor that is batch-sized; plan.json's "symbolic_dims" says the same.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, MODELS_DIR, autopar, randomPlacementFile, readPlan, runReport, tempDir } from './helpers.mjs';

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
