// train.mjs on a split training step: the hand-written fixture of
// make_pipeline_fixture.py (a 3-layer MLP whose forward stages sit A,B,A on
// 2 devices, with gpipe and 1f1b orders for M = 4). The split step trains
// the same weights as the unsplit one, its timeline keeps every dependency
// and follows the plan's order, 1f1b holds no more stashes than its cap,
// and bad input is one error line.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER_DIR, pythonMissing, runPython, tempDir } from '../testing/helpers.mjs';
import { readInitializers } from '../model_weights.mjs';
import { writeTensorFile } from '../tensor_pb.mjs';

const skip = pythonMissing();
const TRAIN = join(RUNNER_DIR, 'train.mjs');
const fx = skip ? null : tempDir('pipeline-fixture');
if (!skip) runPython([join(RUNNER_DIR, 'test', 'make_pipeline_fixture.py'), fx]);
const SCHEDULES = ['gpipe', '1f1b'];
const M = 4;

function train(args) {
  const r = spawnSync(process.execPath, [TRAIN, ...args], { encoding: 'utf8', timeout: 120000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const readPlan = (dir) => JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8'));

/** A copy of fixture folder `name` (beside the source model) whose plan.json is edit(plan)'s. */
function editedCopy(name, edit) {
  const dir = join(fx, `${name}-${Math.random().toString(36).slice(2, 8)}`);
  cpSync(join(fx, name), dir, { recursive: true });
  const plan = readPlan(dir);
  edit(plan);
  writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan));
  return dir;
}

/** Trains a schedule's split step for 2 steps with --check and --save; returns the report and saved weights. */
const runs = new Map();
function splitRun(schedule) {
  if (!runs.has(schedule)) {
    const saved = join(tempDir('saved'), `${schedule}.onnx`);
    const r = train([join(fx, schedule), '--steps', '2', '--check', '--save', saved, '--json']);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    runs.set(schedule, { report: JSON.parse(r.stdout), weights: readInitializers(readFileSync(saved)) });
  }
  return runs.get(schedule);
}

for (const schedule of SCHEDULES) {
  test(`${schedule}: the split step trains the same weights as the unsplit step (2 steps, M = 4)`, { skip }, () => {
    const { report, weights } = splitRun(schedule);
    assert.equal(report.microbatches, M, 'M defaults to the plan\'s');
    assert.equal(report.pipeline.schedule, schedule);
    assert.equal(report.check.ok, true);
    assert.equal(report.check.weights.length, 3);
    assert.ok(report.check.max_abs <= 1e-5, `max_abs ${report.check.max_abs}`);
    // The same numbers, trained here by the unsplit path on its own (no pipeline in plan.json).
    const unsplitDir = editedCopy(schedule, (p) => delete p.training.pipeline);
    const saved = join(tempDir('saved'), 'unsplit.onnx');
    const r = train([unsplitDir, '--steps', '2', '--microbatches', String(M), '--save', saved, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const unsplit = JSON.parse(r.stdout);
    report.loss.forEach((l, s) => assert.ok(Math.abs(l - unsplit.loss[s]) <= 1e-4 * (1 + Math.abs(unsplit.loss[s])), `step ${s + 1} loss`));
    assert.deepEqual(report.check.unsplit_loss, unsplit.loss);
    const reference = readInitializers(readFileSync(saved));
    const source = readInitializers(readFileSync(join(fx, 'model.onnx')));
    for (const name of ['W1', 'W2', 'W3']) {
      const a = weights.get(name).data;
      const b = reference.get(name).data;
      assert.deepEqual(weights.get(name).dims, reference.get(name).dims);
      for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= 1e-5 + 1e-4 * Math.abs(b[i]), `${name}[${i}]: ${a[i]} vs ${b[i]}`);
      assert.ok(a.some((v, i) => v !== source.get(name).data[i]), `${name} was trained`);
    }
  });

  test(`${schedule}: the timeline follows each device's order and every dependency`, { skip }, () => {
    const { report } = splitRun(schedule);
    const plan = readPlan(join(fx, schedule)).training;
    const { stages, order } = plan.pipeline;
    const producer = new Map(stages.flatMap((s) => (s.outputs ?? []).map((t) => [t, s.id])));
    const home = new Map(plan.weights.map((w) => [w.name, w.device]));
    assert.equal(report.timeline.length, 2);
    let previous = null;
    for (const step of report.timeline) {
      const at = new Map(step.runs.map((r) => [`${r.stage},${r.microbatch}`, r]));
      assert.equal(step.runs.length, stages.filter((s) => s.kind !== 'update').length * M + 2, 'every run and both updates, once');
      for (const { device, runs } of order) {
        const mine = step.runs.filter((r) => r.device === device).sort((a, b) => a.start_us - b.start_us);
        // The order, then the update stage.
        assert.deepEqual(mine.map((r) => [r.stage, r.microbatch]), [...runs, [stages.find((s) => s.kind === 'update' && s.device === device).id, null]]);
        mine.forEach((r, k) => {
          assert.ok(r.start_us <= r.end_us);
          if (k > 0) assert.ok(mine[k - 1].end_us <= r.start_us, `device ${device} overlaps ${JSON.stringify(mine[k - 1])} and ${JSON.stringify(r)}`);
          assert.equal(r.kind, stages[r.stage].kind);
        });
      }
      for (const r of step.runs) {
        const s = stages[r.stage];
        if (s.kind === 'update') {
          // After every gradient of its weights (its device's runs and all others' it waits on) is in.
          for (const x of step.runs) if (x.device === r.device && x !== r) assert.ok(x.end_us <= r.start_us);
          continue;
        }
        const needs = new Set([...s.after, ...s.inputs.filter((t) => producer.has(t)).map((t) => producer.get(t))]);
        for (const n of needs) {
          const dep = at.get(`${n},${r.microbatch}`);
          assert.ok(dep.end_us <= r.start_us, `run [${r.stage},${r.microbatch}] starts at ${r.start_us} before [${n},${r.microbatch}] ends at ${dep.end_us}`);
        }
        // A weight read on another device is the value its home device's last update wrote.
        for (const t of s.inputs.filter((x) => home.has(x) && home.get(x) !== r.device)) {
          if (!previous) continue;
          const upd = previous.runs.find((x) => x.kind === 'update' && x.device === home.get(t));
          assert.ok(upd.end_us <= r.start_us, `step ${step.step} reads ${t} before its update ended`);
        }
      }
      previous = step;
    }
  });
}

test('stashes: 1f1b holds at most min(M, S - rank) per device, gpipe holds M', { skip }, () => {
  // Ranks by first forward stage: device 0 (stage 0) is rank 0, device 1 (stage 1) rank 1; S = 2.
  const S = 2;
  const f = splitRun('1f1b').report;
  assert.deepEqual(f.pipeline.devices, [0, 1]);
  f.pipeline.devices.forEach((d, rank) => assert.ok(f.pipeline.max_stashes[rank] <= Math.min(M, S - rank), `device ${d}: ${f.pipeline.max_stashes[rank]}`));
  assert.deepEqual(f.pipeline.max_stashes, [2, 1]);
  for (const step of f.timeline) assert.deepEqual(step.max_stashes, [2, 1]);
  const g = splitRun('gpipe').report;
  assert.deepEqual(g.pipeline.max_stashes, [M, M]);
});

test('--check fails (exit 3, FAIL table) when a stage computes something else', { skip }, () => {
  const dir = editedCopy('gpipe', () => {});
  // Stage 3's dy = d * 2/8 becomes d * 3/8: W3's and the earlier weights' gradients change.
  runPython(['-c', `
import onnx, sys
from onnx import numpy_helper
import numpy as np
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    if n.op_type == "Constant" and n.output[0] == "b3_scale":
        n.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(3 / 8, dtype=np.float32), "b3_scale"))
onnx.save(m, sys.argv[1])
`, join(dir, 'stages', 's3.onnx')]);
  const r = train([dir, '--steps', '2', '--check']);
  assert.equal(r.code, 3, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /^ {2}W3 .* MISMATCH: /m);
  assert.match(r.stdout, /^FAIL vs unsplit step: 3 of 3 weights and 1 of 2 losses differ/m);
});

test('--data and --seed feed the split step and the unsplit check the same micro-batches', { skip }, () => {
  const data = tempDir('pipeline-data');
  for (let s = 0; s < 2; s++) {
    for (let m = 0; m < M; m++) {
      const dir = join(data, `step_${s}`, `mb_${m}`);
      mkdirSync(dir, { recursive: true });
      const x = Float32Array.from({ length: 16 }, (_, i) => Math.sin(1 + i + 16 * m + 64 * s));
      const target = Float32Array.from({ length: 8 }, (_, i) => Math.cos(i + 8 * m + 32 * s));
      writeTensorFile(join(dir, 'x.pb'), { name: 'x', type: 'float32', dims: [2, 8], data: x });
      writeTensorFile(join(dir, 'target.pb'), { name: 'target', type: 'float32', dims: [2, 4], data: target });
    }
  }
  const run = (...args) => {
    const r = train([join(fx, '1f1b'), '--steps', '2', '--check', '--json', ...args]);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const [fromFiles, seeded, again] = [run('--data', data), run('--seed', '7'), run('--seed', '7')];
  assert.equal(fromFiles.check.ok, true);
  assert.equal(fromFiles.data.source, data);
  assert.deepEqual(seeded.loss, again.loss);
  assert.notDeepEqual(seeded.loss, fromFiles.loss);
  assert.notDeepEqual(seeded.loss, splitRun('1f1b').report.loss, 'seed 7 is not seed 0');
});

/** Expects one error line naming `pattern`, exit code 2, and no saved model. */
function assertBadInput(args, pattern) {
  const saved = join(tempDir('saved'), 'never.onnx');
  const r = train([...args, '--save', saved]);
  assert.equal(r.code, 2, `exit code ${r.code}: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /^train: error: [^\n]*\n$/);
  assert.match(r.stderr, pattern);
  assert.equal(r.stdout, '');
  assert.ok(!existsSync(saved), 'no model saved');
}

test('bad input: one error line, exit 2, nothing written', { skip }, () => {
  const missing = editedCopy('1f1b', (p) => p.training.pipeline.order[1].runs.splice(3, 1));
  assertBadInput([missing], /plan\.json: training\.pipeline\.order \(device 1\) misses run \[4,1\]/);
  const unknown = editedCopy('gpipe', (p) => p.training.pipeline.stages[4].inputs.push('nowhere'));
  assertBadInput([unknown], /plan\.json: stage 4: input 'nowhere' is no data input, no trained weight and no earlier stage's output/);
  assertBadInput([join(fx, 'gpipe'), '--microbatches', '2'], /--microbatches 2: the split step's order is for 4 micro-batches/);
  const later = editedCopy('gpipe', (p) => p.training.pipeline.stages[1].inputs.push('dr1'));
  assertBadInput([later], /stage 1: input 'dr1' is an output of stage 4, which is not earlier/);
  const twice = editedCopy('gpipe', (p) => p.training.pipeline.order[0].runs.push([0, 1]));
  assertBadInput([twice], /run \[0,1\] is listed twice/);
  const wrongDevice = editedCopy('gpipe', (p) => (p.training.weights[1].device = 0));
  assertBadInput([wrongDevice], /weight 'W2': its gradient comes from stage 4 on device 1, not from the weight's device 0/);
  // Device 1 first waits for micro-batch 2, which device 0 runs only after micro-batch 0's backward.
  const deadlock = editedCopy('1f1b', (p) => {
    const runs = p.training.pipeline.order[1].runs;
    runs.splice(runs.findIndex(([s, m]) => s === 1 && m === 2), 1);
    runs.unshift([1, 2]);
  });
  assertBadInput([deadlock], /training\.pipeline\.order deadlocks: device 0 at run \[2,0\] waits for \[1,0\]; device 1 at run \[1,2\] waits for \[0,2\]/);
  const swapped = editedCopy('1f1b', () => {});
  cpSync(join(swapped, 'stages', 's1.onnx'), join(swapped, 'stages', 's0.onnx'));
  assertBadInput([swapped], /stage 0: stages\/s0\.onnx takes input 'r1' that plan\.json does not give it/);
  const zero = editedCopy('gpipe', (p) => (p.training.pipeline.microbatches = 0));
  assertBadInput([zero], /training\.pipeline\.microbatches must be an integer >= 1/);
  assertBadInput([join(fx, 'gpipe'), '--check', '--microbatches', 'x'], /--microbatches: bad value 'x'/);
});
