// End to end on ONNX's backend test data (libonnx-testdata): every model that
// `onnx-autopar place` accepts on 2 devices is split twice with --stages —
// by SGP (with --allow-slower-split, so that SGP's own 2-device cut is
// written even where the cost model prefers one device for these tiny
// models) and by a seeded random node placement — and both deployments run
// on the stored inputs and are compared with the stored outputs.
//
// "place accepts" is `onnx-autopar place MODEL --devices 2` exiting 0. The
// split command loads, costs and places the model as `place` does before it
// writes anything, so a model it splits is one place accepts; `place` itself
// runs only when the SGP split fails, to tell a refused model (counted, not a
// failure) from a split that fails on a model place accepts (a failure). The
// full run also runs `place` on every model and fails if a model splits that
// place refuses, so the count stays that of `place`.
//
// A model whose splits do not match is compared once more unsplit: when ONNX
// Runtime does not reproduce the stored outputs of the model itself either
// (random ops, float-to-string, DFT precision, models ORT cannot load), it is
// counted as skipped, not failed. Any other mismatch fails the test.
//
// CI runs a fixed sample: every model of the small categories and every other
// one of `node` (932 one-operator tests, of which the multi-node ones are
// mostly the `_expanded` function bodies); models of one node are split (that
// is the place check) but not run, as the split is the model itself on one
// device. AUTOPAR_E2E_FULL=1 runs every model and runs the one-node splits
// too (SGP only: a random placement of one node is the same deployment).
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, CLI, randomPlacementFile, readPlan, runner, tempDir } from './helpers.mjs';
import { TESTDATA } from '../../tools/runner/testing/helpers.mjs';

const FULL = process.env.AUTOPAR_E2E_FULL === '1';
// The stride through a category's sorted models in the sampled run.
const strideOf = (category) => (FULL || category !== 'node' ? 1 : 2);

const missing = !CLI ? 'AUTOPAR_CLI not set (run through ctest)' : !existsSync(TESTDATA) ? `${TESTDATA} not installed` : false;

/** Runs a deployment folder or model on the stored inputs against the stored outputs. */
function runStored(target, data) {
  const r = runner([target, '--inputs', data, '--expected', data]);
  let report = null;
  try {
    report = JSON.parse(r.stdout);
  } catch {}
  const ok = r.code === 0 && report?.expected?.ok === true;
  return { ok, code: r.code, report, why: ok ? '' : `runner exit ${r.code}: ${(r.stdout + r.stderr).slice(0, 400)}` };
}

// The first line of an error, cut to a length a diagnostic line can hold.
const firstLine = (s) => (s.trim().split('\n')[0] ?? '').replace(/^onnx-autopar: error: '[^']*': /, '').slice(0, 160);

test('libonnx-testdata models place accepts split by SGP and by a random placement on 2 devices reproduce their stored outputs', { skip: missing, timeout: 1500000 }, (t) => {
  const work = tempDir('e2e-testdata');
  const n = { models: 0, refused: 0, accepted: 0, multiNode: 0, singleNode: 0, matched: 0, singleMatched: 0, sgpCut: 0, randomCut: 0, ortCannotReproduce: 0 };
  // Why ORT does not reproduce a skipped model unsplit, by the runner's exit
  // code: 4 ORT cannot load or run it, 3 its outputs differ, 2 the runner
  // cannot feed it (sequence or optional inputs in the .pb files).
  const why = { 4: 'ORT cannot load or run it', 3: 'ORT differs from the stored outputs', 2: 'inputs the runner cannot read' };
  const skippedBy = {};
  const refused = [];
  const skipped = [];
  const failures = [];
  let worst = { max_abs: 0, where: '' };
  const noteError = (report, where) => {
    if (report.expected.max_abs > worst.max_abs) worst = { max_abs: report.expected.max_abs, where };
  };
  for (const category of readdirSync(TESTDATA).sort()) {
    const names = readdirSync(join(TESTDATA, category)).sort();
    for (let i = 0; i < names.length; i += strideOf(category)) {
      const name = names[i];
      const where = `${category}/${name}`;
      const dir = join(TESTDATA, category, name);
      const model = join(dir, 'model.onnx');
      const data = join(dir, 'test_data_set_0');
      if (!existsSync(model) || !existsSync(data)) continue;
      n.models++;
      const sgpOut = join(work, 'sgp');
      const common = ['--devices', '2', '--stages', '--no-report', '--force', '--quiet'];
      const sgp = autopar([model, '-o', sgpOut, ...common, '--allow-slower-split']);
      const place = sgp.code !== 0 || FULL ? autopar(['place', model, '--devices', '2', '--quiet']) : { code: 0 };
      if (place.code !== 0) {
        n.refused++;
        refused.push(`${where} (${firstLine(place.stderr)})`);
        if (sgp.code === 0) failures.push(`${where}: split exit 0 but place refuses it: ${firstLine(place.stderr)}`);
        continue;
      }
      n.accepted++;
      if (sgp.code !== 0) {
        failures.push(`${where}: place accepts it, the SGP split exits ${sgp.code}: ${sgp.stderr.trim()}`);
        continue;
      }
      const plan = readPlan(sgpOut);
      const oneNode = plan.source.nodes < 2;
      if (oneNode) {
        n.singleNode++;
        if (!FULL) continue;
      } else {
        n.multiNode++;
      }
      const runs = [['SGP', sgpOut, plan]];
      if (!oneNode) {
        const placement = randomPlacementFile(plan, 2, n.multiNode, work);
        const randomOut = join(work, 'random');
        const split = autopar([model, '-o', randomOut, ...common, '--placement', placement]);
        if (split.code !== 0) {
          failures.push(`${where}: random split exit ${split.code}: ${split.stderr.trim()}`);
          continue;
        }
        runs.push(['random', randomOut, readPlan(randomOut)]);
      }
      const results = runs.map(([what, out]) => ({ what, ...runStored(out, data) }));
      if (results.every((r) => r.ok)) {
        if (oneNode) n.singleMatched++;
        else n.matched++;
        if (!oneNode && runs[0][2].transfers.length > 0) n.sgpCut++;
        if (!oneNode && runs[1][2].transfers.length > 0) n.randomCut++;
        results.forEach((r) => noteError(r.report, where));
        continue;
      }
      // The stored outputs must be reproducible by ORT on the unsplit model.
      const unsplit = runStored(model, data);
      if (!unsplit.ok) {
        n.ortCannotReproduce++;
        const key = why[unsplit.code] ?? `runner exit ${unsplit.code}`;
        skippedBy[key] = (skippedBy[key] ?? 0) + 1;
        skipped.push(where);
        continue;
      }
      for (const r of results) if (!r.ok) failures.push(`${where}: ${r.what} split: ${r.why}`);
    }
  }
  const matched = n.matched + n.singleMatched;
  t.diagnostic(`${n.models} models${FULL ? '' : ' (sampled)'}: place refuses ${n.refused}, accepts ${n.accepted} ` +
    `(${n.multiNode} with more than one node, ${n.singleNode} with one); ` +
    `${n.matched} multi-node models split by SGP (${n.sgpCut} with cross-device tensors) and by a random placement ` +
    `(${n.randomCut} with cross-device tensors) and both match their stored outputs` +
    (FULL ? `; ${n.singleMatched} one-node models split and match` : '; one-node models not run') +
    `; ${n.ortCannotReproduce} skipped because ORT does not reproduce them unsplit ` +
    `(${Object.entries(skippedBy).map(([k, v]) => `${v}: ${k}`).join(', ') || 'none'}); ${failures.length} failed; ` +
    `${matched} match in all; largest error ${worst.max_abs} (${worst.where})`);
  if (refused.length) t.diagnostic(`refused by place: ${refused.join('; ')}`);
  if (skipped.length) t.diagnostic(`ORT cannot reproduce unsplit: ${skipped.join(' ')}`);
  assert.deepEqual(failures, []);
  assert.ok(n.matched > (FULL ? 100 : 50), `only ${n.matched} multi-node models ran`);
});
