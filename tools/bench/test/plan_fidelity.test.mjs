// The plan fidelity benchmark's arithmetic, in-process: per-model Spearman
// over distinct placements, prediction errors over all runs, the TGA and ORT
// ratios, and the CSV / Markdown it writes. (The benchmark itself runs as the
// ctest bench_plan_fidelity_quick.)
import test from 'node:test';
import assert from 'node:assert/strict';
import { csv, markdown, roundStats, summarize } from '../plan_fidelity.mjs';

const row = (algo, M, placement, predicted_us, measured_us, source = 'model') => ({
  model: 'net', source, microbatches: M, algo, stages: algo === 'single' ? 1 : 2, devices_used: algo === 'single' ? 1 : 2,
  placement, predicted_us, measured_us, measured_min_us: measured_us, measured_max_us: measured_us, cpu_share: 0.95, check_ok: true, max_abs_err: 0,
});

const rows = [
  row('sgp', 8, 'A', 50, 60),
  row('pipeline-dp', 8, 'A', 50, 60), // same placement as sgp: one point of the ranking
  row('tga', 8, 'B', 55, 50),
  row('round-robin', 8, 'C', 90, 100),
  row('single', 8, 'D', 100, 80),
  row('single', 1, 'D', 12, 10),
];
const ort = [{ model: 'net', microbatches: 8, measured_us: 40, measured_min_us: 39, measured_max_us: 41, cpu_share: 0.9 }];

test('summarize: Spearman over distinct placements at the largest M, errors over every run, TGA and ORT ratios', () => {
  const [s] = summarize(rows, ort);
  assert.equal(s.microbatches, 8);
  assert.equal(s.placements, 4);
  // predicted ranks A<B<C<D = 1,2,3,4; measured B<A<D<C = 2,1,4,3
  assert.ok(Math.abs(s.spearman - 0.6) < 1e-12, `${s.spearman}`);
  const errs = [50 / 60, 50 / 60, 55 / 50, 90 / 100, 100 / 80, 12 / 10].map((r) => Math.abs(r - 1)).sort((a, b) => a - b);
  assert.ok(Math.abs(s.median_abs_err - (errs[2] + errs[3]) / 2) < 1e-12);
  assert.ok(Math.abs(s.max_abs_err - 0.25) < 1e-12);
  assert.equal(s.tga_vs_best, 1, 'TGA measured the fastest');
  assert.ok(Math.abs(s.tga_vs_sgp - 50 / 60) < 1e-12);
  assert.equal(s.tga_speedup, 80 / 50);
  assert.equal(s.tga_predicted_speedup, 100 / 55);
  assert.equal(s.ort2_speedup, 80 / 40);
});

test('summarize keeps cost sources apart and leaves missing algorithms empty', () => {
  const two = [...rows, row('sgp', 8, 'A', 70, 60, 'measured'), row('single', 8, 'D', 75, 80, 'measured')];
  const s = summarize(two, ort);
  assert.deepEqual(s.map((x) => x.source), ['model', 'measured']);
  assert.equal(s[1].placements, 2);
  assert.equal(s[1].tga_vs_best, null);
  assert.equal(s[1].tga_speedup, null);
  assert.equal(s[1].spearman, 1);
});

test('csv has a header and one line per run plus the ORT rows; markdown has both tables', () => {
  const text = csv(rows, ort).trim().split('\n');
  assert.equal(text.length, 1 + rows.length + ort.length);
  assert.match(text[0], /^model,source,microbatches,algo,stages,devices_used,placement,predicted_us,measured_us,/);
  assert.match(text.at(-1), /^net,ort-2-threads,8,unsplit,1,1,,,40,/);
  const md = markdown(summarize(rows, ort), rows, ort, { cluster: 'cpu:2x1', when: 'now', cores: 2, load_before: 0.1, load_after: 0.2, rounds: 3, repeat: 5, warmup: 2, checked_ok: true, max_abs_err: 1e-6 });
  assert.match(md, /^\| net \| model \| 8 \| 4 \| 0\.60 \| /m);
  assert.match(md, /^\| net \| model \| 8 \| tga \| 2 \| 2 \| 0\.06 \| 0\.05 \(0\.05–0\.05\) \| – \| 1\.10 \| 0\.95 \|$/m);
  assert.match(md, /^\| net \| ORT 2 threads \| 8 \| unsplit \|/m);
});

test('roundStats: the median over rounds, the extreme steps of any round, the rounds\' spread', () => {
  const r = roundStats({ rounds: [110, 100, 130], steps: [105, 112, 98, 101, 125, 140], shares: [0.97, 0.9, 0.99] });
  assert.equal(r.measured_us, 110);
  assert.equal(r.measured_min_us, 98);
  assert.equal(r.measured_max_us, 140);
  assert.deepEqual(r.rounds_us, [110, 100, 130]);
  assert.ok(Math.abs(r.spread - 30 / 110) < 1e-12);
  assert.equal(r.cpu_share, 0.9);
  assert.equal(roundStats({ rounds: [50], steps: [50], shares: [1] }).spread, 0);
});

test('summarize reports the largest spread among the placements and TGA\'s', () => {
  const spread = rows.map((r) => ({ ...r, spread: r.algo === 'tga' ? 0.12 : r.algo === 'round-robin' ? 0.2 : 0.05 }));
  const [s] = summarize(spread, ort);
  assert.equal(s.max_spread, 0.2);
  assert.equal(s.tga_spread, 0.12);
});
