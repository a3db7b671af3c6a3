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
import { cutEdges, fitTransfer } from '../calibrate_host.mjs';
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

test('cutEdges counts (tensor, reading stage) pairs fed by another stage', { skip }, () => {
  // pipeline/: s1 reads r, t from s0; s2 reads y, s from s1.
  assert.equal(cutEdges(loadPlan(join(fx, 'pipeline'))), 4);
  // deploy/: s1 reads r; s2 reads t; s3 reads y and s.
  assert.equal(cutEdges(loadPlan(join(fx, 'deploy'))), 4);
});

test('calibrate_host --quick writes every field the CLI reads, with sane values', { skip }, () => {
  const out = join(tempDir('calibrate-host'), 'host.json');
  const r = run([join(fx, 'model.onnx'), '-o', out, '--quick', '--algos', 'round-robin', '--microbatches', '4']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^stage run: [\d.]+ us {3}cut: [\d.]+ us per cut edge {3}2 threads: [\d.]+x$/m);
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
  assert.ok(c.cut_us >= 0, `cut_us ${c.cut_us}`);
  assert.equal(c.thread_speedup[1], 1);
  assert.ok(c.thread_speedup[2] > 0);
  const [m] = c.models;
  assert.equal(m.model, 'model');
  assert.equal(m.splits[0].algo, 'round-robin');
  assert.ok(m.splits[0].stages >= 2 && m.splits[0].cut_edges >= 1, JSON.stringify(m.splits[0]));
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
