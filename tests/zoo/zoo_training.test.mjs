// The zoo trains: for every model exported by tests/zoo/export_zoo.py, the
// training step is written (`--mode training --loss mse:<its first floating
// output> --optimizer adam`) and run for 2 steps in ONNX Runtime by
// tools/runner/train.mjs, whose losses must be finite. This pins the gradient
// rules' coverage of the zoo's CNNs, transformers and recurrent models: a
// model either trains or is refused with the one error line listed in
// REFUSED below, and a rule added or removed shows up here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { autopar, tempDir } from '../e2e/helpers.mjs';
import { ZOO_DIR, missing, models } from './zoo_manifest.mjs';

const TRAIN = fileURLToPath(new URL('../../tools/runner/train.mjs', import.meta.url));

// The zoo models that cannot train, and why: control flow, integer-only or
// constant-only paths, and the operators the gradient pass has no rule for.
// (if_on_rate_bound trains: --input-value decides its If, which is inlined.)
const REFUSED = {
  unet_tiny: /\(Resize\) is on the gradient path and its operator has no gradient rule/,
  greedy_decode_loop: /nothing to train: no floating-point initializer/,
  if_on_rate: /\(If\) is on the gradient path, and control flow has no gradient rule/,
  if_on_data: /\(If\) is on the gradient path, and control flow has no gradient rule/,
  unsorted_if: /\(If\) is on the gradient path, and control flow has no gradient rule/,
  detection_head: /\(TopK\) is on the gradient path and its operator has no gradient rule/,
  constant_weights_cnn: /nothing to train: no floating-point initializer/,
  constant_weights_encoder: /nothing to train: no floating-point initializer/,
  qlinear_cnn: /\(DequantizeLinear\) is on the gradient path and its operator has no gradient rule/,
};

const FLOATS = new Set(['float32', 'float16', 'float64']);
const rows = [];

for (const m of models) {
  test(`${m.name}: ${REFUSED[m.name] ? 'refused with its one error line' : 'trains 2 steps in ORT'}`, { skip: missing, timeout: 300000 }, () => {
    const model = join(ZOO_DIR, m.file);
    const info = autopar(['info', model, '--format', 'json', ...m.autopar]);
    assert.equal(info.code, 0, `info: ${info.stderr}`);
    const output = JSON.parse(info.stdout).outputs.find((o) => FLOATS.has(o.dtype));
    assert.ok(output, 'the zoo model has a floating-point output');
    const out = join(tempDir(`zoo-train-${m.name}`), 'out');
    const write = autopar([model, '-o', out, '--devices', '1', '--mode', 'training', '--loss', `mse:${output.name}`,
      '--optimizer', 'adam', '--quiet', ...m.autopar]);
    if (REFUSED[m.name]) {
      assert.equal(write.code, 2, `expected a refusal, got exit ${write.code}: ${write.stderr}`);
      const lines = write.stderr.trim().split('\n');
      assert.equal(lines.length, 1, `one error line: ${write.stderr}`);
      assert.match(lines[0], REFUSED[m.name]);
      assert.ok(!existsSync(out), 'no output folder after a refusal');
      rows.push(`| ${m.name} | refused | ${lines[0].replace(/^onnx-autopar: error: /, '')} |`);
      return;
    }
    assert.equal(write.code, 0, `training step: ${write.stderr}`);
    const run = spawnSync(process.execPath, [TRAIN, out, '--steps', '2', '--microbatches', '1', '--json'],
      { encoding: 'utf8', timeout: 240000, maxBuffer: 64 << 20 });
    assert.equal(run.status, 0, `train.mjs: ${run.stdout}${run.stderr}`);
    const report = JSON.parse(run.stdout);
    assert.equal(report.loss.length, 2);
    for (const loss of report.loss) assert.ok(Number.isFinite(loss), `loss ${loss}`);
    const plan = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).training;
    rows.push(`| ${m.name} | trains (${plan.weights.length} weights) | loss ${report.loss.map((l) => l.toPrecision(4)).join(' → ')} |`);
  });
}

// Runs last (top-level tests run in order): the table of the runs above.
test('the zoo training table', { skip: missing }, (t) => {
  for (const row of ['| model | training step | result |', '|---|---|---|', ...rows]) t.diagnostic(row);
});
