// End to end on ONNX's backend test data (libonnx-testdata): every model with
// more than one node that ONNX Runtime runs unsplit is split on 2 devices by a
// random node placement, its stages run on the stored inputs and the outputs
// compared with the stored outputs.
//
// CI runs a fixed sample: every model of the small categories and every other
// one of `node` (932 one-operator tests, of which the multi-node ones are
// mostly the `_expanded` function bodies). AUTOPAR_E2E_FULL=1 runs every model.
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

test('libonnx-testdata models split on 2 devices reproduce their stored outputs', { skip: missing, timeout: 1500000 }, (t) => {
  const work = tempDir('e2e-testdata');
  const n = { multiNode: 0, ran: 0, cut: 0, notSplittable: 0, ortCannotRunOriginal: 0 };
  const failures = [];
  let worst = { max_abs: 0, where: '' };
  for (const category of readdirSync(TESTDATA).sort()) {
    const names = readdirSync(join(TESTDATA, category)).sort();
    for (let i = 0; i < names.length; i += strideOf(category)) {
      const name = names[i];
      const dir = join(TESTDATA, category, name);
      const model = join(dir, 'model.onnx');
      const data = join(dir, 'test_data_set_0');
      if (!existsSync(model) || !existsSync(data)) continue;
      const out = join(work, 'out');
      // First split (SGP) to learn the node names; models the tool refuses
      // (e.g. shapes that cannot be made static) are counted, not failed.
      const first = autopar([model, '-o', out, '--devices', '2', '--force']);
      if (first.code !== 0) {
        n.notSplittable++;
        continue;
      }
      const plan = readPlan(out);
      if (plan.source.nodes < 2) continue;
      n.multiNode++;
      // The stored outputs must be reproducible by ORT on the unsplit model.
      const original = runner([model, '--inputs', data, '--expected', data]);
      if (original.code !== 0) {
        n.ortCannotRunOriginal++;
        continue;
      }
      const placement = randomPlacementFile(plan, 2, n.multiNode, work);
      const split = autopar([model, '-o', out, '--devices', '2', '--placement', placement, '--stages', '--force']);
      if (split.code !== 0) {
        failures.push(`${category}/${name}: onnx-autopar exit ${split.code}: ${split.stderr.trim()}`);
        continue;
      }
      if (readPlan(out).transfers.length > 0) n.cut++;
      const r = runner([out, '--inputs', data, '--expected', data]);
      let report = null;
      try {
        report = JSON.parse(r.stdout);
      } catch {}
      if (r.code !== 0 || !report?.expected?.ok) {
        failures.push(`${category}/${name}: runner exit ${r.code}: ${(r.stdout + r.stderr).slice(0, 400)}`);
        continue;
      }
      n.ran++;
      if (report.expected.max_abs > worst.max_abs) worst = { max_abs: report.expected.max_abs, where: `${category}/${name}` };
    }
  }
  t.diagnostic(`${n.ran} of ${n.multiNode} multi-node models ran split on 2 devices and matched (${n.cut} with cross-device tensors); ` +
    `${n.ortCannotRunOriginal} skipped because ORT cannot reproduce them unsplit; ${n.notSplittable} models refused by onnx-autopar; ` +
    `largest error ${worst.max_abs} (${worst.where})`);
  assert.deepEqual(failures, []);
  assert.ok(n.ran > (FULL ? 100 : 50), `only ${n.ran} models ran`);
});
