// Tests of the fidelity check and the calibration: the statistics, profile
// parsing, join and fit in-process; fidelity.mjs and calibrate.mjs end to
// end on a small generated CNN and a libonnx-testdata model (unnamed nodes).
// The end-to-end tests need the C++ CLI ($AUTOPAR_CLI, else
// build/tools/onnx-autopar), onnxruntime-node (tools/runner/node_modules) and,
// for the CNN, Debian's /usr/bin/python3 with onnx; they are skipped without.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseProfile } from '../measure.mjs';
import { joinNodes, ranks, spearman, REPO_ROOT } from '../lib.mjs';
import { fitRoofline, predict } from '../fit.mjs';
import { pythonMissing, runPython, tempDir, TESTDATA } from '../../runner/testing/helpers.mjs';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const FIDELITY = join(HERE, '..', 'fidelity.mjs');
const CALIBRATE = join(HERE, '..', 'calibrate.mjs');
const CLI = process.env.AUTOPAR_CLI ?? join(REPO_ROOT, 'build/tools/onnx-autopar');
const ORT = join(REPO_ROOT, 'tools/runner/node_modules/onnxruntime-node');

const e2eMissing = () => {
  if (!existsSync(CLI)) return `${CLI} not built (set AUTOPAR_CLI)`;
  if (!existsSync(ORT)) return 'onnxruntime-node not installed (cd tools/runner && npm ci --onnxruntime-node-install=skip)';
  return false;
};

function node(script, args) {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', timeout: 60000, env: { ...process.env, AUTOPAR_CLI: CLI } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let cnn = null;
function cnnModel() {
  if (!cnn) {
    cnn = join(tempDir('fidelity'), 'cnn.onnx');
    runPython([join(HERE, 'make_model.py'), cnn]);
  }
  return cnn;
}

test('spearman: ranks with ties, perfect and reversed order, undefined cases', () => {
  assert.deepEqual(ranks([10, 20, 20, 5]), [2, 3.5, 3.5, 1]);
  assert.equal(spearman([1, 2, 3, 4], [10, 20, 35, 1000]), 1);
  assert.equal(spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1);
  assert.ok(Math.abs(spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) - 0.8) < 1e-12);
  assert.equal(spearman([1], [1]), null);
  assert.equal(spearman([1, 2, 3], [7, 7, 7]), null);
});

test('parseProfile: skips warm-up runs by model_run window, sums repeats, keys unnamed nodes', () => {
  const run = (ts, dur) => ({ cat: 'Session', name: 'model_run', ts, dur });
  const k = (name, ts, dur, idx = 0, op = 'Conv') => ({ cat: 'Node', name: `${name}_kernel_time`, ts, dur, args: { op_name: op, node_index: String(idx) } });
  const events = [
    { cat: 'Session', name: 'session_initialization', ts: 0, dur: 50 },
    run(100, 100), k('a', 110, 50), k('', 170, 9, 3, 'Relu'),
    run(300, 100), k('a', 310, 10), k('', 370, 3, 3, 'Relu'),
    run(500, 100), k('a', 510, 20), k('a', 540, 5), k('', 570, 5, 3, 'Relu'),
    run(700, 100), k('a', 710, 40), k('', 770, 7, 3, 'Relu'),
  ];
  const p = parseProfile(events, { warmup: 1 });
  assert.equal(p.runs, 3);
  assert.deepEqual(p.order, ['a', '#3']);
  assert.equal(p.nodes.a.mean_us, (10 + 25 + 40) / 3);
  assert.equal(p.nodes.a.median_us, 25);
  assert.equal(p.nodes.a.min_us, 10);
  assert.equal(p.nodes['#3'].op, 'Relu');
  assert.equal(p.nodes['#3'].median_us, 5);
  assert.deepEqual(p.run_durations_us, [100, 100, 100]);
});

test('joinNodes: by name; made-up names of unnamed nodes by op in order; leftovers reported', () => {
  const cost = [
    { name: 'conv', op: 'Conv', time_us: 5, op_class: 'conv', kernels: 1 },
    { name: 'Constant_1', op: 'Constant', time_us: 0, kernels: 0 },
    { name: 'Relu_2', op: 'Relu', time_us: 1 },
    { name: 'Relu_3', op: 'Relu', time_us: 2 },
    { name: 'Gemm_4', op: 'Gemm', time_us: 9 },
  ];
  // ORT numbers unnamed nodes without the folded Constant: Relu_1, Relu_2.
  const meas = {
    conv: { op: 'Conv', node_index: 0, median_us: 7 },
    Relu_2: { op: 'Relu', node_index: 2, median_us: 4 },
    Relu_1: { op: 'Relu', node_index: 1, median_us: 3 },
    Gemm_4: { op: 'Gemm', node_index: 3, median_us: 8 }, // a real name that looks made up
    extra: { op: 'Add', node_index: 9, median_us: 1 },
  };
  const j = joinNodes(cost, meas, 'median');
  const got = j.joined.map((r) => [r.name, r.predicted_us, r.measured_us]).sort();
  assert.deepEqual(got, [['Gemm_4', 9, 8], ['Relu_2', 1, 3], ['Relu_3', 2, 4], ['conv', 5, 7]]);
  assert.deepEqual(j.predictedOnly.map((n) => n.name), ['Constant_1']);
  assert.deepEqual(j.measuredOnly.map((n) => n.name), ['extra']);
});

test('fitRoofline recovers overhead, efficiency and memory efficiency from noiseless times', () => {
  const truth = { o: 3, e: { conv: 0.4, elementwise: 0.2 }, m: { conv: 2, elementwise: 5 } };
  const rows = [];
  for (let i = 0; i < 24; i++) {
    const size = 10 ** (i / 5); // 1 .. 4e4
    rows.push({ cls: 'conv', k: 1, C: size * (i % 2 ? 1 : 0.05), M: size * 0.3 });
    rows.push({ cls: 'elementwise', k: 1, C: size * 0.02 * (1 + (i % 3)), M: size * 0.5 });
  }
  for (const r of rows) r.y = predict(r, truth);
  const prior = { o: 2, e: { conv: 0.5, elementwise: 0.15 }, m: { conv: 1, elementwise: 1 } };
  const fit = fitRoofline(rows, prior, { sumMatch: false, lambda: 0 });
  const close = (a, b, tol, what) => assert.ok(Math.abs(a / b - 1) < tol, `${what}: ${a} vs ${b}`);
  close(fit.params.o, 3, 0.05, 'overhead');
  close(fit.params.e.conv, 0.4, 0.05, 'e conv');
  close(fit.params.m.conv, 2, 0.05, 'm conv');
  close(fit.params.m.elementwise, 5, 0.05, 'm elementwise');
  // Sum matching makes class totals equal to the measured ones.
  const scaled = rows.map((r) => ({ ...r, y: r.y * 1.5 }));
  const fit2 = fitRoofline(scaled, prior);
  for (const c of Object.values(fit2.classes)) close(c.predicted_us, c.measured_us, 0.01, 'class sum');
});

test('fidelity.mjs --json on a small CNN: joins every node, Spearman in [-1, 1]', { skip: e2eMissing() || pythonMissing() }, () => {
  const r = node(FIDELITY, [cnnModel(), '--runs', '5', '--warmup', '1', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const rep = JSON.parse(r.stdout);
  assert.equal(rep.ok, true);
  assert.equal(rep.nodes.predicted, 9);
  assert.equal(rep.nodes.joined, 9);
  assert.equal(typeof rep.spearman, 'number');
  assert.ok(rep.spearman >= -1 && rep.spearman <= 1);
  assert.ok(rep.whole_model.ratio > 0 && rep.whole_model.measured_kernel_us > 0);
  assert.ok(rep.whole_model.ratio_vs_wall > 0);
  assert.ok(rep.top_mispredicted_ops.length > 0 && rep.top_mispredicted_ops.every((o) => typeof o.op === 'string'));
  assert.equal(rep.device, 'cpu:1');
});

test('calibrate.mjs writes a device file that onnx-autopar and fidelity.mjs accept', { skip: e2eMissing() || pythonMissing() }, () => {
  const dir = tempDir('fidelity');
  const measured = join(dir, 'measured.json');
  const a = node(FIDELITY, [cnnModel(), '--runs', '5', '--warmup', '1', '--save-measured', measured]);
  assert.equal(a.code, 0, a.stderr);
  assert.match(a.stdout, /spearman/);
  const out = join(dir, 'cal.json');
  const c = node(CALIBRATE, [measured, '-o', out, '--json']);
  assert.equal(c.code, 0, c.stderr);
  const device = JSON.parse(readFileSync(out, 'utf8'));
  assert.equal(device.base, 'cpu:1');
  assert.ok(device.kernel_overhead_us > 0);
  assert.ok(device.efficiency.conv > 0);
  const fit = JSON.parse(c.stdout);
  // The fitting set's whole-model ratio after sum matching is ~1 (exactly 1
  // unless a class's scale hits its clamp or its overheads alone exceed it).
  assert.ok(Math.abs(fit.check[0].ratio_after - 1) < 0.25, JSON.stringify(fit.check));
  const b = node(FIDELITY, ['--measured', measured, '--device', out, '--json']);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(JSON.parse(b.stdout).device, 'cpu-calibrated');
});

test('fidelity.mjs joins unnamed nodes (libonnx-testdata layer_normalization expanded)', { skip: e2eMissing() || (!existsSync(TESTDATA) && 'no libonnx-testdata') }, () => {
  const model = join(TESTDATA, 'node/test_layer_normalization_2d_axis0_expanded/model.onnx');
  const r = node(FIDELITY, [model, '--runs', '3', '--warmup', '1', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const rep = JSON.parse(r.stdout);
  // Every node ORT runs is joined; the Constant nodes ORT folds are predicted only.
  assert.ok(rep.nodes.joined > 10);
  assert.equal(rep.nodes.joined, rep.nodes.measured);
  assert.deepEqual(Object.keys(rep.unjoined.predicted_only.ops), ['Constant']);
  assert.ok(rep.spearman === null || (rep.spearman >= -1 && rep.spearman <= 1));
});

test('errors: one line on stderr, exit 2 for a missing model or bad flag', { skip: e2eMissing() }, () => {
  const r = node(FIDELITY, ['/nonexistent.onnx']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^fidelity: error: .*\n$/);
  const s = node(FIDELITY, ['x.onnx', '--stat', 'max']);
  assert.equal(s.code, 2);
  const c = node(CALIBRATE, ['x.onnx']);
  assert.equal(c.code, 2);
  assert.match(c.stderr, /-o OUT.json is required/);
});
