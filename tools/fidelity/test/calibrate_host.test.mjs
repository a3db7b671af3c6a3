// calibrate_host: the transfer fit and cut-edge count in-process; the whole
// calibration end to end (--quick) on the runner's fixture model split by the
// CLI. The end-to-end test needs the C++ CLI ($AUTOPAR_CLI, else
// build/tools/onnx-autopar), onnxruntime-node, Debian's Python with onnx and
// libonnx-testdata; it is skipped without them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chainStepUs, cutBytes, cutEdges, fitCutCosts, fitHops, fitTransfer, measureRunnerHops } from '../calibrate_host.mjs';
import { chainPlan } from '../chain_models.mjs';
import { REPO_ROOT } from '../lib.mjs';
import { loadPlan } from '../../runner/plan.mjs';
import { makeFixture, pythonMissing, tempDir, TESTDATA } from '../../runner/testing/helpers.mjs';

const SCRIPT = fileURLToPath(new URL('../calibrate_host.mjs', import.meta.url));
const CLI = process.env.AUTOPAR_CLI ?? join(REPO_ROOT, 'build/tools/onnx-autopar');
const missing = () => {
  if (!existsSync(CLI)) return `${CLI} not built (set AUTOPAR_CLI)`;
  if (!existsSync(join(REPO_ROOT, 'tools/runner/node_modules/onnxruntime-node'))) return 'onnxruntime-node not installed';
  if (!existsSync(TESTDATA)) return `${TESTDATA} not installed`;
  return pythonMissing();
};
const skip = missing();
const fx = skip ? null : makeFixture();

function run(args) {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', timeout: 120000, env: { ...process.env, AUTOPAR_CLI: CLI } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('fitTransfer: latency of the smallest size, bytes/s from the slope; no slope, no bandwidth', () => {
  const line = fitTransfer([256, 1 << 20, 4 << 20].map((bytes) => ({ bytes, median_us: 10 + bytes / 1000 })));
  assert.equal(line.latency_us, 10 + 0.256);
  assert.ok(Math.abs(line.bytes_per_s - 1e9) < 1e3, `${line.bytes_per_s}`);
  const flat = fitTransfer([{ bytes: 256, median_us: 12 }, { bytes: 1 << 20, median_us: 11 }]);
  assert.deepEqual([flat.latency_us, flat.bytes_per_s], [12, null]);
});

test('fitCutCosts: recovers a per-edge and a per-byte cost; neither goes negative', () => {
  const cost = (edges, bytes) => ({ edges, bytes, extra_us: edges * 5 + bytes / 2e3 }); // 5 µs + 2 GB/s
  const fit = fitCutCosts([cost(2, 800000), cost(27, 1e7), cost(61, 5.8e6), cost(3, 16384)]);
  assert.ok(Math.abs(fit.cut_us - 5) < 1e-6, `${fit.cut_us}`);
  assert.ok(Math.abs(fit.cut_bytes_per_s - 2e9) < 1, `${fit.cut_bytes_per_s}`);
  // Time that falls with size: no size term, the per-edge cost alone.
  const noSize = fitCutCosts([{ edges: 1, bytes: 1e6, extra_us: 100 }, { edges: 2, bytes: 1e3, extra_us: 200 }]);
  assert.equal(noSize.cut_bytes_per_s, null);
  assert.ok(Math.abs(noSize.cut_us - 100) < 1e-9);
  // Pure size: no per-edge cost below 0.
  const bytesOnly = fitCutCosts([{ edges: 10, bytes: 1e6, extra_us: 100 }, { edges: 1, bytes: 4e6, extra_us: 400 }]);
  assert.ok(bytesOnly.cut_us >= 0);
  assert.equal(fitCutCosts([]), null);
});

test('chainStepUs: one device runs every task back to back; alternating, a hop waits and works', () => {
  const one = { stages: 4, devices: 1, microbatches: 3, stageUs: 10, hopUs: 100, hopBusyUs: 7 };
  assert.equal(chainStepUs(one), 4 * 3 * 10, 'no hops on one device');
  const two = { stages: 3, devices: 2, microbatches: 1, stageUs: 10, hopUs: 20, hopBusyUs: 5 };
  // s0 0-10, s1 30-45, s2 65-80.
  assert.equal(chainStepUs(two), 80);
  // Two micro-batches: dev 0 runs (m0,s0) 0-10, (m1,s0) 10-20; dev 1 (m0,s1)
  // 30-45, (m1,s1) 45-60; dev 0 (m0,s2) 65-80, (m1,s2) 80-95.
  assert.equal(chainStepUs({ ...two, microbatches: 2 }), 95);
});

test('fitHops recovers how a hop splits into waiting and work', () => {
  const truth = { hopUs: 40, hopBusyUs: 60 };
  const single = { stages: 24, stage_us: 15, step_us: chainStepUs({ stages: 24, devices: 2, microbatches: 1, stageUs: 15, ...truth }) };
  const pipelined = { stages: 24, microbatches: 8, stage_us: 14, step_us: chainStepUs({ stages: 24, devices: 2, microbatches: 8, stageUs: 14, ...truth }) };
  const fit = fitHops(single, pipelined);
  assert.ok(Math.abs(fit.hop_us - 40) < 1e-9 && Math.abs(fit.hop_busy_us - 60) < 1e-9, JSON.stringify(fit));
  assert.ok(fit.err < 1e-9);
});

test('chainPlan writes stage models the runner loads, one device or alternating', { skip: existsSync(join(REPO_ROOT, 'tools/runner/node_modules/onnxruntime-node')) ? false : 'onnxruntime-node not installed' }, async () => {
  const dir = tempDir('chain');
  const plan = chainPlan(dir, { stages: 3, devices: [0, 1], floats: 8 });
  assert.deepEqual(plan.stages.map((s) => s.device), [0, 1, 0]);
  assert.deepEqual(plan.stages[2].inputs, ['t2']);
  const r = await measureRunnerHops({ dir, stages: 4, microbatches: 2, warmup: 1, repeat: 2 });
  // Timings, so only their form is checked: on a loaded machine the fit may
  // put a hop's whole cost at 0 (it did, with two devices faster than one).
  assert.ok(r.stage_run_us > 0, JSON.stringify(r));
  assert.ok(Number.isFinite(r.hop_us) && r.hop_us >= 0 && Number.isFinite(r.hop_busy_us) && r.hop_busy_us >= 0, JSON.stringify(r));
  assert.ok(r.steps_us.two_devices > 0 && r.steps_us.one_device > 0);
});

test('cutEdges counts (tensor, reading stage) pairs fed by another stage', { skip }, () => {
  // pipeline/: s1 reads r, t from s0; s2 reads y, s from s1.
  assert.equal(cutEdges(loadPlan(join(fx, 'pipeline'))), 4);
  // deploy/: s1 reads r; s2 reads t; s3 reads y and s.
  assert.equal(cutEdges(loadPlan(join(fx, 'deploy'))), 4);
  // cutBytes sizes each of those edges from the reading stage's input metadata.
  const plan = loadPlan(join(fx, 'pipeline'));
  const meta = new Map(plan.stages.map((s) => [s.id, { inputs: s.inputs.map((name) => ({ name, type: 'float32', shape: [2, 3] })) }]));
  assert.equal(cutBytes(plan, meta), 4 * 2 * 3 * 4);
  meta.get(plan.stages[1].id).inputs[0].shape = ['batch', 3];
  assert.equal(cutBytes(plan, meta), 3 * 2 * 3 * 4, 'an input of unknown size counts 0');
});

test('calibrate_host --quick writes every field the CLI reads, with sane values', { skip }, () => {
  const out = join(tempDir('calibrate-host'), 'host.json');
  const r = run([join(fx, 'model.onnx'), '-o', out, '--quick', '--algos', 'round-robin', '--microbatches', '4']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^stage run: [\d.]+ us {3}cut: [\d.]+ us per cut edge \+ ([\d.]+ GB\/s|no size dependence) {3}2 threads: [\d.]+x$/m);
  const c = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(c.version, 1);
  assert.ok(!Number.isNaN(Date.parse(c.measured_at)));
  assert.ok(c.load_avg_1m >= 0 && c.cores >= 1);
  assert.ok(c.cpu_share > 0 && c.cpu_share <= 1, `cpu_share ${c.cpu_share}`);
  for (const t of [c.transfer, c.transfer_copy]) {
    assert.ok(t.latency_us > 0);
    assert.ok(t.bytes_per_s === undefined || t.bytes_per_s > 0, 'a bandwidth, or none (never null)');
    assert.equal(t.points.length, 3);
  }
  assert.ok(c.stage_run_us > 0);
  assert.ok(c.hop_us >= 0 && c.hop_busy_us >= 0 && c.hop_us + c.hop_busy_us > 0, `${c.hop_us} ${c.hop_busy_us}`);
  assert.equal(c.runner.stage_run_us, c.stage_run_us);
  assert.match(r.stdout, /^hand-over through the runner: [\d.]+ us waiting \+ [\d.]+ us of the receiving device/m);
  assert.ok(c.cut_us >= 0, `cut_us ${c.cut_us}`);
  assert.equal(c.thread_speedup[1], 1);
  assert.ok(c.thread_speedup[2] > 0);
  const [m] = c.models;
  assert.equal(m.model, 'model');
  assert.equal(m.splits[0].algo, 'round-robin');
  assert.ok(m.splits[0].stages >= 2 && m.splits[0].cut_edges >= 1, JSON.stringify(m.splits[0]));
  assert.ok(m.splits[0].cut_bytes > 0, JSON.stringify(m.splits[0]));
});

test('bad arguments: one line, exit 2', { skip }, () => {
  for (const [args, re] of [
    [[join(fx, 'model.onnx')], /-o OUT\.json is required/],
    [['/nonexistent.onnx', '-o', '/tmp/x.json'], /\/nonexistent\.onnx: no such model/],
    [[join(fx, 'model.onnx'), '-o', '/tmp/x.json', '--repeat', '0'], /--repeat: bad value '0'/],
  ]) {
    const r = run(args);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`^calibrate_host: error: .*${re.source}.*\\n$`));
  }
});
