// measure_step.mjs end to end on the small generated CNN's training step:
// the file names every node of the gradient and update models once, with
// run costs and plan.json's origin maps, and the main command planned with it
// predicts M × (gradient nodes + run) + update nodes + run. Needs the C++ CLI,
// onnxruntime-node and Debian's /usr/bin/python3 with onnx; skipped without.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from '../lib.mjs';
import { readModelNodes } from '../onnx_nodes.mjs';
import { pythonMissing, runPython, tempDir } from '../../runner/testing/helpers.mjs';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const MEASURE_STEP = join(HERE, '..', 'measure_step.mjs');
const CLI = process.env.AUTOPAR_CLI ?? join(REPO_ROOT, 'build/tools/onnx-autopar');
const ORT = join(REPO_ROOT, 'tools/runner/node_modules/onnxruntime-node');

const missing = () => {
  if (!existsSync(CLI)) return `${CLI} not built (set AUTOPAR_CLI)`;
  if (!existsSync(ORT)) return 'onnxruntime-node not installed';
  return pythonMissing();
};

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const TRAIN = ['--cluster', 'cpu:1x1', '--mode', 'training', '--loss', 'mse:y', '--optimizer', 'adam', '--microbatches', '2', '--no-report', '--force'];
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

test('measure_step: both models in one file, and the step it predicts', { skip: missing() }, () => {
  const dir = tempDir('measure-step');
  const model = join(dir, 'cnn.onnx');
  runPython([join(HERE, 'make_model.py'), model]);
  const out = join(dir, 'out');
  run(CLI, [model, '-o', out, ...TRAIN]);
  const times = join(dir, 'step_times.json');
  run(process.execPath, [MEASURE_STEP, out, '--runs', '3', '--warmup', '1', '--step-ms', '100', '--co-run-ms', '50', '-o', times]);
  const f = JSON.parse(readFileSync(times, 'utf8'));
  const plan = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).training;
  assert.deepEqual(f.node_origin, plan.node_origin);
  assert.deepEqual(f.update_origin, plan.update_origin);
  assert.ok(f.run_us.gradient >= 0 && f.run_us.update >= 0);
  // Note [Gradient sums]: the runner's adds and means, timed.
  assert.ok(Number.isFinite(f.run_us.gradient_sum) && f.run_us.gradient_sum >= 0, `sum ${f.run_us.gradient_sum}`);
  assert.ok(Number.isFinite(f.run_us.gradient_mean) && f.run_us.gradient_mean >= 0, `mean ${f.run_us.gradient_mean}`);
  // Note [Co-run slowdown]: at least 1, the mean of the chunks' ratios.
  assert.ok(f.co_run_slowdown >= 1, `co_run_slowdown ${f.co_run_slowdown}`);
  assert.equal(f.co_run.ratios.length, 8);
  for (const r of f.co_run.ratios) assert.ok(Number.isFinite(r) && r > 0, `ratio ${r}`);
  assert.ok(Math.abs(f.co_run_slowdown - Math.max(1, sum(f.co_run.ratios) / 8)) < 1e-9);
  // Note [Profiler cost], Note [Noisy neighbours]: the step loop ran its
  // steps and at least --step-ms of them; node time is the back-to-back
  // runs' median times the nodes' profiled share, run cost the rest of the
  // step runs' median.
  for (const k of ['gradient', 'update']) {
    const m = f.models[k];
    assert.ok(m.step_runs >= 3, `${k}: ${m.step_runs} step runs`);
    assert.ok(m.node_share > 0 && m.node_share <= 1, `${k}: node share ${m.node_share}`);
    const step = m.step_wall_us.median;
    assert.ok(Math.abs(m.nodes_us - Math.min(m.node_share * m.back_to_back_us.median, step)) < 1e-6 * step, k);
    assert.ok(Math.abs(f.run_us[k] - (step - m.nodes_us)) < 1e-6 * step, k);
  }
  const timed = f.models.gradient.step_runs * (f.models.gradient.step_wall_us.mean + f.models.update.step_wall_us.mean);
  assert.ok(timed >= 100e3, `the step loop timed ${timed} us`);

  // Every node that runs (Constants become initialisers) is named once.
  const gradient = readModelNodes(join(out, 'step/gradient.onnx')).map((n) => n.name);
  const update = readModelNodes(join(out, 'step/update.onnx')).map((n) => n.name);
  assert.equal(gradient.filter((n) => update.includes(n)).length, 0, 'the models share a node name');
  for (const n of Object.keys(f.node_us)) assert.ok(gradient.includes(n) !== update.includes(n), n);
  for (const n of update) assert.ok(n in f.update_origin, `update node ${n} has no origin`);
  assert.equal(f.models.gradient.nodes + f.models.update.nodes, Object.keys(f.node_us).length);

  const again = join(dir, 'again');
  const summary = run(CLI, [model, '-o', again, ...TRAIN, '--node-times', times]);
  assert.match(summary, /predicted .* us per step: 2 x \(gradient model/);
  const predicted = JSON.parse(readFileSync(join(again, 'plan.json'), 'utf8')).predicted;
  const g = sum(Object.entries(f.node_us).filter(([n]) => !(n in f.update_origin)).map(([, us]) => us));
  const u = sum(Object.entries(f.node_us).filter(([n]) => n in f.update_origin).map(([, us]) => us));
  const want = 2 * (g + f.run_us.gradient + f.run_us.gradient_sum) + f.run_us.gradient_mean + u + f.run_us.update;
  assert.ok(Math.abs(predicted.step_time_us - want) < 1e-6 * want, `${predicted.step_time_us} vs ${want}`);
  assert.equal(predicted.measured_step.microbatches, 2);

  // Over two devices of this host the cluster carries the measured slowdown,
  // and a pipelined step predicted with it is no faster than without it.
  const split = (co, gradientSum = f.run_us.gradient_sum) => {
    const file = join(dir, `times_${co}_${gradientSum}.json`);
    writeFileSync(file, JSON.stringify({ ...f, co_run_slowdown: co, run_us: { ...f.run_us, gradient_sum: gradientSum } }));
    const o = join(dir, `split_${co}_${gradientSum}`);
    run(CLI, [model, '-o', o, ...TRAIN, '--cluster', 'cpu:2x1', '--algo', 'round-robin', '--allow-slower-split', '--node-times', file]);
    return JSON.parse(readFileSync(join(o, 'plan.json'), 'utf8'));
  };
  const alone = split(1);
  const shared = split(2);
  assert.equal(shared.cluster.execution.co_run_slowdown, 2);
  assert.ok(shared.training.pipeline.predicted.step_us > alone.training.pipeline.predicted.step_us,
    `${shared.training.pipeline.predicted.step_us} vs ${alone.training.pipeline.predicted.step_us}`);
  // The gradient sums are charged to the split's runs: 10 ms of them per
  // micro-batch, spread over the devices by their weights, lengthen the step.
  const free = split(1, 0).training.pipeline.predicted.step_us;
  const summing = split(1, 10000).training.pipeline.predicted.step_us;
  assert.ok(summing > free + 1000, `${summing} vs ${free}`);
});
