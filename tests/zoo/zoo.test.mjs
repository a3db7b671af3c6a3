// The model zoo end to end: every model exported by tests/zoo/export_zoo.py
// is inspected (info), costed (cost), split on 4 devices by SGP and by a
// seeded random node placement (both with --stages --triton), and each
// deployment run in ONNX Runtime against the unsplit model (atol/rtol 1e-4):
// the stage models as plan.json wires them, and the Triton repository as its
// ensemble config wires them. The table of results (model, source, nodes,
// estimates used, split ok, Triton ok, max abs error over both) is printed as
// a diagnostic and written to ZOO_DIR/zoo_table.md.
import test from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { autopar, randomPlacementFile, runReport, splitAndRun, tempDir } from '../e2e/helpers.mjs';
import { ZOO_DIR, manifest, manifestPath, missing, models } from './zoo_manifest.mjs';

const DEVICES = 4;
const RANDOM_SEED = 7;
const rows = [];

test('the zoo holds at least 30 models', { skip: missing }, () => {
  assert.ok(manifest.models.length >= 30, `only ${manifest.models.length} models in ${manifestPath}`);
});

for (const m of models) {
  test(`${m.name}: info, cost, SGP and random splits and their Triton repositories match the unsplit model in ORT`, { skip: missing, timeout: 300000 }, () => {
    const model = join(ZOO_DIR, m.file);
    const row = { name: m.name, source: m.source, nodes: m.nodes, estimates: '', ok: false, tritonOk: false, maxAbs: NaN, tritonMaxAbs: NaN };
    rows.push(row);
    const info = autopar(['info', model, ...m.autopar]);
    assert.equal(info.code, 0, `info: ${info.stderr}`);
    const cost = autopar(['cost', model, ...m.autopar]);
    assert.equal(cost.code, 0, `cost: ${cost.stderr}`);
    assert.match(cost.stdout, /total/);

    const work = tempDir(`zoo-${m.name}`);
    const runnerArgs = ['--check', model, '--seed', '3', ...m.runner];
    // A split, run from plan.json, and its Triton repository, run from the
    // configs alone (its error kept, so the table tells the two apart).
    const split = (name, args) => {
      const dir = join(work, name);
      const run = splitAndRun(model, dir, ['--devices', String(DEVICES), '--triton', ...args, ...m.autopar], runnerArgs);
      assert.equal(run.report.check.ok, true, `${name} split differs: ${JSON.stringify(run.report.check).slice(0, 500)}`);
      try {
        return { ...run, triton: runReport(join(dir, 'triton'), runnerArgs) };
      } catch (e) {
        return { ...run, triton: { error: e.message } };
      }
    };
    const sgp = split('sgp', ['--quiet']);
    assert.equal(sgp.plan.devices.length, DEVICES);
    // Every estimate is listed once on stderr per kind and in plan.json.
    const kinds = [...new Set(sgp.plan.estimates.map((e) => e.kind))];
    row.estimates = kinds.map((k) => `${k} ×${sgp.plan.estimates.filter((e) => e.kind === k).length}`).join(', ');
    if (kinds.length > 0) assert.match(info.stderr, /estimated \d+ /);

    const placement = randomPlacementFile(sgp.plan, DEVICES, RANDOM_SEED, work);
    const random = split('random', ['--placement', placement]);
    assert.equal(random.plan.algorithm, 'given');
    row.maxAbs = Math.max(sgp.report.check.max_abs, random.report.check.max_abs);
    row.ok = true;
    for (const [name, { triton }] of [['SGP', sgp], ['random', random]]) {
      assert.ok(!triton.error, `${name} split's Triton repository: ${triton.error}`);
      assert.equal(triton.check.ok, true, `${name} split's Triton repository differs: ${JSON.stringify(triton.check).slice(0, 500)}`);
    }
    row.tritonMaxAbs = Math.max(sgp.triton.check.max_abs, random.triton.check.max_abs);
    row.maxAbs = Math.max(row.maxAbs, row.tritonMaxAbs);
    row.tritonOk = true;
  });
}

test.after(() => {
  if (missing || rows.length === 0) return;
  const lines = ['| model | source | nodes | estimates used | split ok | Triton ok | max abs error |', '|---|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.name} | ${r.source} | ${r.nodes} | ${r.estimates || '—'} | ${r.ok ? 'yes' : 'NO'} | ${r.tritonOk ? 'yes' : 'NO'} | ${Number.isNaN(r.maxAbs) ? '—' : r.maxAbs.toExponential(2)} |`);
  const triton = rows.filter((r) => r.tritonOk);
  const tritonMax = Math.max(...triton.map((r) => r.tritonMaxAbs));
  lines.push('', `Triton repositories: ${triton.length} of ${rows.length} models match (SGP and random splits), max abs error ${triton.length ? tritonMax.toExponential(2) : '—'}`);
  writeFileSync(join(ZOO_DIR, 'zoo_table.md'), `${lines.join('\n')}\n`);
  console.log(lines.map((l) => `# ${l}`).join('\n'));
});
