// The runner against ONNX's backend test data (libonnx-testdata): .pb decoding
// checked against what ORT reports for each model, single models run through
// the CLI with --inputs/--expected, and a sweep over every model.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TESTDATA, runCli, testdata } from '../testing/helpers.mjs';
import { createSession, sessionMeta, runSession } from '../ort_session.mjs';
import { readTensorDir } from '../inputs.mjs';
import { compareOutputs } from '../compare.mjs';

const noData = existsSync(TESTDATA) ? false : `${TESTDATA} not installed (apt-get install libonnx-testdata)`;

/** Runs the CLI on a test-data model with its stored inputs and outputs. */
function runStored(name, extra = []) {
  const d = testdata(name);
  const set = join(d, 'test_data_set_0');
  return runCli([join(d, 'model.onnx'), '--inputs', set, '--expected', set, ...extra]);
}

test('CLI: stored inputs/outputs of single test-data models match', { skip: noData }, () => {
  for (const name of ['node/test_matmul_2d', 'pytorch-converted/test_Conv2d', 'node/test_argmax_default_axis_example', 'simple/test_expand_shape_model1']) {
    const r = runStored(name, ['--check', join(testdata(name), 'model.onnx')]);
    assert.equal(r.code, 0, `${name}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /PASS vs original model/);
    assert.match(r.stdout, /PASS vs expected outputs/);
    assert.equal(r.stderr, '');
  }
});

test('CLI: outputs of another model are a mismatch (exit 3)', { skip: noData }, () => {
  const d = testdata('node/test_relu');
  const r = runCli([join(d, 'model.onnx'), '--inputs', join(d, 'test_data_set_0'), '--expected', testdata('node/test_sigmoid/test_data_set_0')]);
  assert.equal(r.code, 3, r.stdout + r.stderr);
  assert.match(r.stdout, /FAIL vs expected outputs: 1 of 1 outputs mismatch/);
});

// Stored outputs that ORT 1.30 does not reproduce within 1e-4 + 1e-4*|b|:
// random ops, float->string formatting, DFT precision, ORT/spec differences.
const KNOWN_DIFFERENT = new Set([
  'node/test_bernoulli', 'node/test_bernoulli_double', 'node/test_bernoulli_double_expanded',
  'node/test_bernoulli_expanded', 'node/test_bernoulli_seed', 'node/test_bernoulli_seed_expanded',
  'node/test_cast_FLOAT_to_STRING', 'node/test_castlike_FLOAT_to_STRING', 'node/test_castlike_FLOAT_to_STRING_expanded',
  'node/test_dft', 'node/test_dft_axis', 'node/test_maxunpool_export_with_output_shape',
  'node/test_resize_downsample_scales_cubic_align_corners', 'node/test_resize_downsample_scales_linear_align_corners',
  'node/test_training_dropout', 'node/test_training_dropout_default', 'node/test_training_dropout_default_mask',
  'node/test_training_dropout_mask',
]);

test('sweep: every test-data model ORT loads decodes and reproduces its stored outputs', { skip: noData, timeout: 600000 }, async (t) => {
  const n = { models: 0, ortCannotLoad: 0, notTensors: 0, passed: 0, knownDifferent: 0 };
  const problems = [];
  for (const cat of readdirSync(TESTDATA).sort()) {
    for (const name of readdirSync(join(TESTDATA, cat)).sort()) {
      const dir = join(TESTDATA, cat, name);
      const set = join(dir, 'test_data_set_0');
      if (!existsSync(join(dir, 'model.onnx')) || !existsSync(set)) continue;
      n.models++;
      let session;
      try {
        session = await createSession(join(dir, 'model.onnx'), { threads: 1 });
      } catch {
        n.ortCannotLoad++;
        continue;
      }
      const meta = sessionMeta(session);
      let inputs, expected;
      try {
        inputs = readTensorDir(set, 'input', session.inputNames);
        expected = readTensorDir(set, 'output', session.outputNames);
      } catch (e) {
        assert.match(e.message, /not a TensorProto|segmented/, `${cat}/${name}`);
        n.notTensors++;
        await session.release();
        continue;
      }
      for (const m of meta.inputs) {
        const x = inputs[m.name];
        const same = x && x.type === m.type && x.dims.length === m.shape.length && m.shape.every((d, i) => typeof d !== 'number' || d === x.dims[i]);
        if (!same) problems.push(`${cat}/${name}: input ${m.name} decoded ${x?.type}[${x?.dims}], ORT says ${m.type}[${m.shape}]`);
      }
      const out = await runSession(session, inputs, null, name);
      const cmp = compareOutputs(out, expected, session.outputNames.filter((o) => o in expected), { atol: 1e-4, rtol: 1e-4 });
      await session.release();
      if (cmp.ok) n.passed++;
      else if (KNOWN_DIFFERENT.has(`${cat}/${name}`)) n.knownDifferent++;
      else problems.push(`${cat}/${name}: ${cmp.results.filter((r) => !r.ok).map((r) => `${r.name} ${r.reason}`).join('; ')}`);
    }
  }
  t.diagnostic(`test-data sweep: ${JSON.stringify(n)}`);
  assert.deepEqual(problems, []);
  assert.ok(n.passed > 900, `only ${n.passed} models passed`);
});
