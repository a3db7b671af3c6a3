// Training against PyTorch, end to end: for each model of torch_models.py the
// main command writes the training step of torch's ONNX export, train.mjs
// trains it on the same data (--data) and saves it (--save), and every saved
// weight must equal torch's own after 1 SGD step and after 3 Adam steps
// (2 micro-batches a step) within atol 1e-5 + rtol 1e-4; the losses torch saw
// must be the ones train.mjs printed. On a small learnable task (four
// Gaussian blobs), 50 Adam steps follow torch's loss curve within 1e-4.
//
//   AUTOPAR_CLI=build/tools/onnx-autopar node --test tests/training/torch_parity.test.mjs
//   AUTOPAR_TORCH_FILTER=mlp,cnn ...   only these models
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, tempDir } from '../e2e/helpers.mjs';
import { PYTHON, RUNNER_DIR } from '../../tools/runner/testing/helpers.mjs';
import { readInitializers } from '../../tools/runner/model_weights.mjs';
import { readTensorFile } from '../../tools/runner/tensor_pb.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const ATOL = 1e-5;
const RTOL = 1e-4;
const LOSS_TOL = 1e-4;

const filter = (process.env.AUTOPAR_TORCH_FILTER ?? '').split(',').filter(Boolean);
const probe = spawnSync(PYTHON, ['-c', 'import onnx, torch, torchvision'], { encoding: 'utf8' });
const torchMissing = probe.status === 0 ? false : `${PYTHON} lacks onnx, torch or torchvision`;
const casesDir = tempDir('torch-cases');
if (!torchMissing) {
  const made = spawnSync(PYTHON, [join(HERE, 'torch_models.py'), casesDir, ...filter], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`torch_models.py failed: ${made.stderr}`);
}
const cases = readdirSync(casesDir).sort();

/** The training step of a case's model for `run`'s optimizer; returns the output folder. */
function writeStep(dir, c, run) {
  const out = join(tempDir('torch-out'), 'out');
  const flags = ['--optimizer', run.optimizer, '--learning-rate', String(run.lr)];
  if (run.betas) flags.push('--betas', run.betas.join(','), '--eps', String(run.eps));
  const r = autopar([join(dir, 'model.onnx'), '-o', out, '--devices', '1', '--mode', 'training',
    '--loss', c.loss, ...flags, '--no-report', '--quiet']);
  assert.equal(r.code, 0, `onnx-autopar failed: ${r.stdout}${r.stderr}`);
  return out;
}

/** Runs train.mjs on a step folder with the case's data; returns its JSON report and the saved model's weights. */
function trainStep(out, dir, c, run) {
  const saved = join(tempDir('torch-saved'), 'trained.onnx');
  const r = spawnSync(process.execPath, [join(RUNNER_DIR, 'train.mjs'), out, '--steps', String(run.steps),
    '--microbatches', String(c.microbatches), '--data', join(dir, 'data'), '--save', saved, '--json'],
  { encoding: 'utf8', timeout: 300000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `train.mjs failed: ${r.stderr}`);
  return { report: JSON.parse(r.stdout), weights: readInitializers(readFileSync(saved)) };
}

/** Largest |got − want| over all elements; throws naming the first element out of atol + rtol·|want|. */
function compareWeight(name, got, want) {
  assert.deepEqual(got.dims, want.dims, `${name}: shape`);
  let maxAbs = 0;
  for (let i = 0; i < want.data.length; i++) {
    const [g, w] = [got.data[i], want.data[i]];
    const diff = Math.abs(g - w);
    maxAbs = Math.max(maxAbs, diff);
    assert.ok(diff <= ATOL + RTOL * Math.abs(w), `${name}[${i}] = ${g}, torch has ${w} (|diff| ${diff})`);
  }
  return maxAbs;
}

function compareLosses(got, want, what) {
  assert.equal(got.length, want.length, `${what}: one loss per step`);
  let max = 0;
  got.forEach((l, s) => {
    max = Math.max(max, Math.abs(l - want[s]));
    assert.ok(Math.abs(l - want[s]) <= LOSS_TOL, `${what}: step ${s + 1} loss ${l}, torch's ${want[s]}`);
  });
  return max;
}

test('torch_models.py wrote the cases', { skip: torchMissing }, () => assert.ok(cases.length > 0));

for (const name of cases.filter((n) => n !== 'blobs')) {
  test(`${name}: weights after 1 SGD step and 3 Adam steps equal torch's`, () => {
    const dir = join(casesDir, name);
    const c = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8'));
    const summary = [];
    for (const run of c.runs) {
      const out = writeStep(dir, c, run);
      const plan = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).training;
      assert.deepEqual(plan.weights.map((w) => w.name).sort(), [...c.trained].sort(), 'trains exactly torch\'s parameters');
      const { report, weights } = trainStep(out, dir, c, run);
      const lossDiff = compareLosses(report.loss, run.losses, `${name} ${run.name}`);
      let maxAbs = 0;
      for (const [weight, file] of Object.entries(run.weights)) {
        maxAbs = Math.max(maxAbs, compareWeight(`${name} ${run.name} ${weight}`, weights.get(weight), readTensorFile(join(dir, run.dir, file))));
      }
      summary.push(`${run.name}-${run.steps} max |diff| ${maxAbs.toExponential(2)} (loss ${lossDiff.toExponential(2)})`);
    }
    console.log(`# ${name}: ${summary.join(', ')}`);
  });
}

test('blobs: 50 Adam steps follow torch\'s loss curve within 1e-4', { skip: torchMissing || (!cases.includes('blobs') && 'filtered out') }, () => {
  const dir = join(casesDir, 'blobs');
  const c = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8'));
  const [run] = c.runs;
  const { report } = trainStep(writeStep(dir, c, run), dir, c, run);
  const maxDiff = compareLosses(report.loss, run.losses, 'blobs');
  assert.ok(run.losses.at(-1) < 0.5 * run.losses[0], `torch learns the task (loss ${run.losses[0]} -> ${run.losses.at(-1)})`);
  console.log(`# blobs: loss ${run.losses[0].toFixed(4)} -> ${run.losses.at(-1).toFixed(4)} in ${run.steps} steps, max |diff| ${maxDiff.toExponential(2)}`);
});
