// Every gradient rule against central finite differences in ONNX Runtime.
// The cases (make_rule_cases.py, rule_cases_*.py) are small models whose
// float operands are the trained weights; for each, the main command writes
// the training step, and the gradient model's analytic gradients are
// compared with (L(w + h·e) − L(w − h·e)) / 2h at up to 8 elements of every
// weight, L being the same model's loss output. Float64 where ORT runs the
// operators in float64 (h = 1e-5), float32 otherwise (h = 1e-2).
//
//   AUTOPAR_CLI=build/tools/onnx-autopar node --test tests/training/gradient_rules.test.mjs
//   AUTOPAR_RULE_FILTER=conv ...   only the cases whose names contain "conv"
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, tempDir } from '../e2e/helpers.mjs';
import { runPython } from '../../tools/runner/testing/helpers.mjs';
import { createSession, runSession } from '../../tools/runner/ort_session.mjs';
import { readTensorFile } from '../../tools/runner/tensor_pb.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const casesDir = tempDir('rule-cases');
runPython([join(HERE, 'make_rule_cases.py'), casesDir, process.env.AUTOPAR_RULE_FILTER ?? '']);
const cases = readdirSync(casesDir).sort();

/** Up to `k` element indices of a tensor of `n` elements, spread over it. */
function sampleIndices(n, k = 8) {
  if (n <= k) return [...Array(n).keys()];
  return [...Array(k).keys()].map((i) => Math.floor((i * (n - 1)) / (k - 1)));
}

test('there are cases', () => assert.ok(cases.length > 0, `no case in ${casesDir}`));

for (const name of cases) {
  test(`gradient of ${name} matches finite differences`, async () => {
    const dir = join(casesDir, name);
    const meta = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8'));
    const out = join(tempDir('rule-out'), 'out');
    const r = autopar([join(dir, 'model.onnx'), '-o', out, '--devices', '1', '--mode', 'training',
      '--loss', 'output:loss', '--optimizer', 'sgd', '--no-report', '--quiet']);
    assert.equal(r.code, 0, `onnx-autopar failed: ${r.stdout}${r.stderr}`);
    const plan = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8'));
    const session = await createSession(join(out, plan.training.models.gradient));
    const feeds = {};
    for (const w of plan.training.weights) feeds[w.name] = readTensorFile(join(dir, 'weights', meta.weights[w.name]));
    const lossName = plan.training.loss.output;
    const analytic = await runSession(session, feeds, undefined, name);
    const h = meta.dtype === 'float64' ? 1e-5 : 1e-2;
    const lossAt = async (weight, index, delta) => {
      const t = feeds[weight];
      const data = t.data.slice();
      data[index] += delta;
      const result = await runSession(session, { ...feeds, [weight]: { ...t, data } }, [lossName], name);
      return Number(result[lossName].data[0]);
    };
    for (const w of plan.training.weights) {
      const g = analytic[w.gradient];
      assert.deepEqual(g.dims, feeds[w.name].dims, `gradient of ${w.name} has the weight's shape`);
      for (const i of sampleIndices(g.data.length)) {
        const numeric = ((await lossAt(w.name, i, h)) - (await lossAt(w.name, i, -h))) / (2 * h);
        const got = Number(g.data[i]);
        const scale = Math.max(1, Math.abs(numeric), Math.abs(got));
        assert.ok(Math.abs(numeric - got) <= meta.tolerance * scale,
          `${name}: d loss / d ${w.name}[${i}] = ${got}, finite differences give ${numeric}`);
      }
    }
  });
}
