// End to end on real exported models (tools/export_models.py): each model is
// split by SGP and by random node placements (many interleaved cuts, the
// hardest case for the rewriter) on 2, 3, 4 and 8 devices, its stages run in
// ONNX Runtime and every output compared with the unsplit model's.
//
// CI runs a fixed third of the 144 deployments: each model on 2 devices and on
// one of 3, 4 and 8 (in turn), with one of the two random seeds (in turn).
// AUTOPAR_E2E_FULL=1 runs every model on every count with both seeds.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, MODELS_DIR, randomPlacementFile, splitAndRun, tempDir } from './helpers.mjs';

// A CNN family, attention (encoder, BERT-like, causal GPT-like), recurrent
// cells, and both control-flow operators.
const MODELS = process.env.E2E_MODELS?.split(',') ?? [
  'squeezenet1_1', 'resnet18', 'mobilenet_v2', 'googlenet', 'transformer_encoder', 'bert_tiny_like',
  'gpt2_tiny_like', 'lstm', 'lstm_bidirectional', 'gru', 'control_flow_if', 'control_flow_loop',
];
const DEVICE_COUNTS = [2, 3, 4, 8];
const RANDOM_SEEDS = [1, 2];
const FULL = process.env.AUTOPAR_E2E_FULL === '1';
const deviceCountsOf = (i) => (FULL ? DEVICE_COUNTS : [2, DEVICE_COUNTS[1 + (i % 3)]]);
const randomSeedsOf = (i) => (FULL ? RANDOM_SEEDS : [RANDOM_SEEDS[i % 2]]);

const missing = !CLI ? 'AUTOPAR_CLI not set (run through ctest)' : !MODELS_DIR ? 'AUTOPAR_MODELS_DIR not set' : false;

test('exported models split by SGP and random placements compute what the original computes', { skip: missing, timeout: 1500000 }, (t) => {
  const work = tempDir('e2e-models');
  let runs = 0;
  let randomRuns = 0;
  let randomCuts = 0;
  let worst = { max_abs: 0, max_rel: 0, where: '' };
  for (const [i, name] of MODELS.entries()) {
    const model = join(MODELS_DIR, `${name}.onnx`);
    if (!existsSync(model)) assert.fail(`${model} missing: the exported_models fixture should have written it`);
    for (const devices of deviceCountsOf(i)) {
      const out = join(work, `${name}_${devices}`);
      const configs = [{ label: 'sgp', args: [] }];
      for (const seed of randomSeedsOf(i)) configs.push({ label: `random seed ${seed}`, seed });
      let sgpPlan;
      for (const config of configs) {
        const args = ['--devices', String(devices)];
        if (config.seed !== undefined) args.push('--placement', randomPlacementFile(sgpPlan, devices, config.seed * 100 + devices, work));
        const { report, plan } = splitAndRun(model, out, args, ['--check', model, '--seed', String(devices)]);
        if (config.seed === undefined) sgpPlan = plan;
        const where = `${name} on ${devices} devices, ${config.label}`;
        assert.equal(report.check.ok, true, where);
        assert.equal(plan.devices.length, devices, where);
        if (config.seed !== undefined) {
          assert.equal(plan.algorithm, 'given', where);
          randomRuns++;
          if (plan.transfers.length > 0) randomCuts++;
        }
        if (report.check.max_abs > worst.max_abs) worst = { max_abs: report.check.max_abs, max_rel: report.check.max_rel, where };
        runs++;
      }
    }
  }
  // A random placement of a tiny model (the control-flow ones have 5-7
  // non-Constant nodes; Constants never cross) may keep it on one device.
  assert.ok(randomCuts >= 0.75 * randomRuns, `only ${randomCuts} of ${randomRuns} random placements cut an edge`);
  t.diagnostic(`${runs} deployments of ${MODELS.length} models matched in ORT (${randomCuts} of ${randomRuns} random ones cut); largest error ${worst.max_abs} abs (${worst.where})`);
});
