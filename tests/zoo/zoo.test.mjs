// The model zoo end to end: every model exported by tests/zoo/export_zoo.py
// is inspected (info), costed (cost), split on 4 devices by SGP and by a
// seeded random node placement (both with --stages --triton), and each
// deployment run in ONNX Runtime against the unsplit model (atol/rtol 1e-4):
// the stage models as plan.json wires them, and the Triton repository as its
// ensemble config wires them.
//
// A split serves any batch: for a model exported with a symbolic "batch"
// (the manifest's symbolic_dims), both splits are planned at --dim batch=2
// and their stage models also run at other batches, every output leading
// with that batch: the SGP split's at 1, 3 and 8, the random split's at 8. A Triton repository whose configs batch (max_batch_size
// > 0) runs at batch 1 and 5 from its configs alone; one that does not is
// unbatched for a reason the split summary names (the stage tensor whose dim
// 0 is not the batch), and the table records it.
//
// The table of results (model, source, nodes, estimates used, split ok,
// batch sizes run, Triton ok and form, max abs error over all runs) is
// printed as a diagnostic and written to ZOO_DIR/zoo_table.md.
import test from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, randomPlacementFile, runReport, splitAndRun, tempDir } from '../e2e/helpers.mjs';
import { loadTritonRepository } from '../../tools/runner/triton_repository.mjs';
import { ZOO_DIR, manifest, manifestPath, missing, models } from './zoo_manifest.mjs';

const DEVICES = 4;
const RANDOM_SEED = 7;
// The batches the stage models of a dynamic-batch model run at besides the
// planned 2 (the random split's at the largest only, to spare CI time; the
// SGP split covers the small ones), and those a batching Triton repository
// runs at.
const STAGE_BATCHES = [1, 3, 8];
const RANDOM_STAGE_BATCHES = [8];
const TRITON_BATCHES = [1, 5];
const rows = [];

test('the zoo holds at least 30 models', { skip: missing }, () => {
  assert.ok(manifest.models.length >= 30, `only ${manifest.models.length} models in ${manifestPath}`);
});

test('most of the zoo has a symbolic batch, and some of it stays static', { skip: missing }, () => {
  const dynamic = manifest.models.filter((m) => m.symbolic_dims?.[0] === 'batch');
  assert.ok(dynamic.length >= 20, `only ${dynamic.length} models with a symbolic batch`);
  assert.ok(manifest.models.length - dynamic.length >= 5, 'the static path needs models too');
  for (const m of dynamic) assert.ok(m.autopar.join(' ').includes('--dim batch=2'), `${m.name} is not planned at batch 2`);
});

/** `args` with --dim batch=2 changed to batch=`batch`. */
const atBatch = (args, batch) => args.map((a) => (a === 'batch=2' ? `batch=${batch}` : a));

for (const m of models) {
  test(`${m.name}: info, cost, SGP and random splits and their Triton repositories match the unsplit model in ORT`, { skip: missing, timeout: 300000 }, () => {
    const model = join(ZOO_DIR, m.file);
    const dynamic = m.symbolic_dims?.[0] === 'batch';
    const row = { name: m.name, source: m.source, nodes: m.nodes, estimates: '', ok: false, tritonOk: false, maxAbs: NaN, tritonMaxAbs: NaN, batches: dynamic ? '' : 'static', tritonForm: '' };
    rows.push(row);
    const info = autopar(['info', model, ...m.autopar]);
    assert.equal(info.code, 0, `info: ${info.stderr}`);
    const cost = autopar(['cost', model, ...m.autopar]);
    assert.equal(cost.code, 0, `cost: ${cost.stderr}`);
    assert.match(cost.stdout, /total/);

    const work = tempDir(`zoo-${m.name}`);
    const runnerArgs = ['--check', model, '--seed', '3', ...m.runner];
    const checked = (report, what, batch) => {
      assert.equal(report.check.ok, true, `${what} differs: ${JSON.stringify(report.check).slice(0, 500)}`);
      if (batch !== undefined) {
        for (const o of report.outputs) assert.equal(o.shape[0], batch, `${what}: ${o.name} is [${o.shape}]`);
      }
      return report.check.max_abs;
    };
    // A split, run from plan.json (and at the other batches), and its Triton
    // repository, run from the configs alone (its error kept, so the table
    // tells the two apart).
    const split = (name, args, batches) => {
      const dir = join(work, name);
      const run = splitAndRun(model, dir, ['--devices', String(DEVICES), '--triton', ...args, ...m.autopar], runnerArgs);
      let maxAbs = checked(run.report, `${name} split`);
      if (dynamic) {
        for (const batch of batches) {
          maxAbs = Math.max(maxAbs, checked(runReport(dir, atBatch(runnerArgs, batch)), `${name} split at batch ${batch}`, batch));
        }
      }
      const triton = join(dir, 'triton');
      const form = loadTritonRepository(triton).ensemble.config.maxBatchSize;
      try {
        const reports = [runReport(triton, runnerArgs)];
        if (dynamic && form > 0) for (const batch of TRITON_BATCHES) reports.push(runReport(triton, atBatch(runnerArgs, batch)));
        return { ...run, maxAbs, form, triton: reports };
      } catch (e) {
        return { ...run, maxAbs, form, triton: { error: e.message } };
      }
    };
    const sgp = split('sgp', ['--quiet'], STAGE_BATCHES);
    assert.equal(sgp.plan.devices.length, DEVICES);
    // Every estimate is listed once on stderr per kind and in plan.json.
    const kinds = [...new Set(sgp.plan.estimates.map((e) => e.kind))];
    row.estimates = kinds.map((k) => `${k} ×${sgp.plan.estimates.filter((e) => e.kind === k).length}`).join(', ');
    if (kinds.length > 0) assert.match(info.stderr, /estimated \d+ /);

    const placement = randomPlacementFile(sgp.plan, DEVICES, RANDOM_SEED, work);
    const random = split('random', ['--placement', placement], RANDOM_STAGE_BATCHES);
    assert.equal(random.plan.algorithm, 'given');
    row.maxAbs = Math.max(sgp.maxAbs, random.maxAbs);
    row.ok = true;
    if (dynamic) {
      assert.deepEqual(sgp.plan.symbolic_dims?.symbols?.batch, 2, JSON.stringify(sgp.plan.symbolic_dims));
      row.batches = `2 (planned), ${STAGE_BATCHES.join(', ')}; random split ${RANDOM_STAGE_BATCHES.join(', ')}`;
    }
    // The Triton form: batched over "batch", or unbatched with the split
    // summary naming the stage tensor that keeps it so.
    const reasons = [];
    for (const [name, s] of [['SGP', sgp], ['random', random]]) {
      if (s.form > 0) {
        assert.ok(dynamic, `${name}: a static model's repository batches`);
        assert.match(s.summary, /triton {5}max_batch_size 8 over 'batch', dynamic batching on every stage model/);
      } else {
        const why = s.summary.match(/triton {5}max_batch_size 0 \(no batching\): (.*)/);
        assert.ok(why, `${name} split's summary says nothing of Triton batching:\n${s.summary}`);
        if (dynamic) assert.match(why[1], /^stage \d+ (input|output) '[^']+' is \[[^\]]*\]: its dim 0 is not/, why[1]);
        // For the table: the tensor's last name part and its dims.
        const [, tensor, dims] = why[1].match(/'([^']*)' is (\[[^\]]*\])/) ?? [, why[1], ''];
        reasons.push({ name, what: `${tensor.split('/').slice(-2).join('/')} ${dims}`.trim() });
      }
    }
    if (!dynamic) row.tritonForm = 'unbatched (static)';
    else if (reasons.length === 0) row.tritonForm = `batched ≤8, ran at ${TRITON_BATCHES.join(' and ')}`;
    else if (reasons.length === 1) row.tritonForm = `${reasons[0].name === 'SGP' ? 'random' : 'SGP'} batched ≤8, ran at ${TRITON_BATCHES.join(' and ')}; ${reasons[0].name} unbatched: ${reasons[0].what} crosses`;
    else if (reasons[0].what === reasons[1].what) row.tritonForm = `unbatched: ${reasons[0].what} crosses`;
    else row.tritonForm = `unbatched: ${reasons.map((r) => `${r.name} ${r.what}`).join('; ')} crosses`;

    for (const [name, { triton }] of [['SGP', sgp], ['random', random]]) {
      assert.ok(!triton.error, `${name} split's Triton repository: ${triton.error}`);
      for (const report of triton) checked(report, `${name} split's Triton repository`);
    }
    row.tritonMaxAbs = Math.max(...[...sgp.triton, ...random.triton].map((r) => r.check.max_abs));
    row.maxAbs = Math.max(row.maxAbs, row.tritonMaxAbs);
    row.tritonOk = true;
  });
}

test.after(() => {
  if (missing || rows.length === 0) return;
  const lines = ['| model | source | nodes | estimates used | split ok | batch sizes run | Triton ok | Triton form | max abs error |', '|---|---|---|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.name} | ${r.source} | ${r.nodes} | ${r.estimates || '—'} | ${r.ok ? 'yes' : 'NO'} | ${r.batches || '—'} | ${r.tritonOk ? 'yes' : 'NO'} | ${r.tritonForm || '—'} | ${Number.isNaN(r.maxAbs) ? '—' : r.maxAbs.toExponential(2)} |`);
  const triton = rows.filter((r) => r.tritonOk);
  const tritonMax = Math.max(...triton.map((r) => r.tritonMaxAbs));
  const dynamic = rows.filter((r) => r.batches !== 'static');
  const batchedOk = dynamic.filter((r) => r.ok && r.batches);
  const batchedTriton = rows.filter((r) => r.tritonOk && r.tritonForm.startsWith('batched'));
  const halfBatched = rows.filter((r) => r.tritonOk && /^(SGP|random) batched/.test(r.tritonForm));
  lines.push('', `Triton repositories: ${triton.length} of ${rows.length} models match (SGP and random splits), max abs error ${triton.length ? tritonMax.toExponential(2) : '—'}`);
  lines.push(`Symbolic batch: ${batchedOk.length} of ${dynamic.length} dynamic-batch models run at batch ${STAGE_BATCHES.join(', ')} (planned at 2); Triton repositories batched for both splits of ${batchedTriton.length} of them, for one split of ${halfBatched.length}, each run at batch ${TRITON_BATCHES.join(' and ')}`);
  writeFileSync(join(ZOO_DIR, 'zoo_table.md'), `${lines.join('\n')}\n`);
  console.log(lines.map((l) => `# ${l}`).join('\n'));
});
