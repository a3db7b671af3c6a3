// Pipeline training, end to end: the models of torch_models.py, each node
// put on one of two devices by a seeded random placement (which cuts the
// step into many forward and backward stages), split by the main command
// under GPipe and 1F1B, and trained by train.mjs with one worker thread per
// device. The trained weights must equal the unsplit step's (--check: atol
// 1e-5 + rtol 1e-4) and torch's own after one SGD step; no device may hold
// more micro-batches' stashes than the plan's schedule allows.
//
//   AUTOPAR_CLI=build/tools/onnx-autopar node --test tests/training/pipeline_training.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, randomPlacementFile, readPlan, tempDir } from '../e2e/helpers.mjs';
import { PYTHON, RUNNER_DIR } from '../../tools/runner/testing/helpers.mjs';
import { readInitializers } from '../../tools/runner/model_weights.mjs';
import { readTensorFile } from '../../tools/runner/tensor_pb.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const ATOL = 1e-5;
const RTOL = 1e-4;
// A CNN, a transformer encoder layer, a decoder block whose tied embedding
// is read on both devices, an LSTM (unrolled before the gradient pass).
const MODELS = ['cnn', 'transformer', 'gpt2_block', 'lstm'];

const probe = spawnSync(PYTHON, ['-c', 'import onnx, torch, torchvision'], { encoding: 'utf8' });
const torchMissing = probe.status === 0 ? false : `${PYTHON} lacks onnx, torch or torchvision`;
const casesDir = tempDir('pipeline-cases');
if (!torchMissing) {
  const made = spawnSync(PYTHON, [join(HERE, 'torch_models.py'), casesDir, ...MODELS], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`torch_models.py failed: ${made.stderr}`);
}

/** Writes the case's SGD step over `devices` with `flags`; returns the output folder. */
function writeStep(dir, c, run, flags) {
  const out = join(tempDir('pipeline-out'), 'out');
  const r = autopar([join(dir, 'model.onnx'), '-o', out, '--mode', 'training', '--loss', c.loss,
    '--optimizer', run.optimizer, '--learning-rate', String(run.lr),
    '--microbatches', String(c.microbatches), '--no-report', '--quiet', ...flags]);
  assert.equal(r.code, 0, `onnx-autopar failed: ${r.stdout}${r.stderr}`);
  return out;
}

for (const name of MODELS) {
  for (const schedule of ['gpipe', '1f1b']) {
    test(`${name}, random placement, ${schedule}: the split step trains the unsplit step's and torch's weights`,
      { skip: torchMissing }, () => {
        const dir = join(casesDir, name);
        const c = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8'));
        const run = c.runs.find((r) => r.optimizer === 'sgd');
        // The nodes' names come from a one-device plan of the same step.
        const names = readPlan(writeStep(dir, c, run, ['--devices', '1']));
        const placement = randomPlacementFile(names, 2, 7, tempDir('pipeline-placement'));
        const out = writeStep(dir, c, run, ['--devices', '2', '--placement', placement, '--schedule', schedule]);
        const pipeline = readPlan(out).training.pipeline;
        assert.equal(pipeline.schedule, schedule);
        assert.deepEqual(pipeline.devices, [0, 1], 'the random placement uses both devices');

        const saved = join(tempDir('pipeline-saved'), 'trained.onnx');
        const r = spawnSync(process.execPath, [join(RUNNER_DIR, 'train.mjs'), out, '--steps', String(run.steps),
          '--data', join(dir, 'data'), '--check', '--save', saved, '--json'],
        { encoding: 'utf8', timeout: 300000, maxBuffer: 64 << 20 });
        assert.equal(r.status, 0, `train.mjs failed (${r.status}): ${r.stdout.slice(0, 2000)}${r.stderr}`);
        const report = JSON.parse(r.stdout);

        // torch's weights after the same step.
        const weights = readInitializers(readFileSync(saved));
        let maxAbs = 0;
        for (const [weight, file] of Object.entries(run.weights)) {
          const want = readTensorFile(join(dir, run.dir, file));
          const got = weights.get(weight);
          assert.deepEqual(got.dims, want.dims, `${weight}: shape`);
          for (let i = 0; i < want.data.length; i++) {
            const diff = Math.abs(got.data[i] - want.data[i]);
            maxAbs = Math.max(maxAbs, diff);
            assert.ok(diff <= ATOL + RTOL * Math.abs(want.data[i]), `${weight}[${i}] = ${got.data[i]}, torch has ${want.data[i]}`);
          }
        }
        // The schedule's stash bound, as measured.
        const m = c.microbatches;
        const measured = report.pipeline.max_stashes;
        const caps = pipeline.devices.map((_, rank) => (schedule === 'gpipe' ? m : Math.min(m, pipeline.devices.length - rank)));
        measured.forEach((held, k) => assert.ok(held <= caps[k], `device ${pipeline.devices[k]} held ${held} stashes, cap ${caps[k]}`));
        const stages = pipeline.stages.filter((s) => s.kind !== 'update').length;
        console.log(`# ${name} ${schedule}: ${stages} stages, max |diff| vs torch ${maxAbs.toExponential(2)}, stashes ${JSON.stringify(measured)}`);
      });
  }
}
