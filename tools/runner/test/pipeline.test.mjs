// Pipelined runs of the fixture's 3-stage, 2-device split (make_fixture.py,
// pipeline/): every micro-batch matches the unsplit model, the measured
// timeline respects every dependency and never overlaps two tasks on one
// device, --repeat statistics are well-formed, bad flags are one-line errors.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { makeFixture, pythonMissing, runCli, tempDir } from '../testing/helpers.mjs';
import { writeTensorFile } from '../tensor_pb.mjs';

const skip = pythonMissing();
const fx = skip ? null : makeFixture();
const pipeline = () => join(fx, 'pipeline');
const model = () => join(fx, 'model.onnx');
const planOf = (dir) => JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8'));

/** Asserts the dependency and one-task-per-device rules on a runner timeline. */
function assertTimelineRespectsPlan(timeline, plan, M) {
  const at = new Map(timeline.map((t) => [`${t.stage}/${t.microbatch}`, t]));
  assert.equal(at.size, plan.stages.length * M, 'each (stage, micro-batch) ran exactly once');
  assert.equal(timeline.length, plan.stages.length * M);
  const producer = new Map(plan.stages.flatMap((s) => s.outputs.map((o) => [o, s.id])));
  for (const s of plan.stages) {
    const deps = new Set([...(s.after ?? []), ...s.inputs.filter((i) => producer.has(i)).map((i) => producer.get(i))]);
    for (let m = 0; m < M; m++) {
      const task = at.get(`${s.id}/${m}`);
      assert.ok(task.start_us <= task.end_us);
      for (const d of deps) {
        const p = at.get(`${d}/${m}`);
        assert.ok(p.end_us <= task.start_us, `stage ${s.id} mb ${m} started at ${task.start_us} before stage ${d} ended at ${p.end_us}`);
      }
    }
  }
  for (const dev of new Set(plan.stages.map((s) => s.device))) {
    const mine = timeline.filter((t) => t.device === dev).sort((a, b) => a.start_us - b.start_us);
    for (let i = 1; i < mine.length; i++) assert.ok(mine[i - 1].end_us <= mine[i].start_us, `device ${dev}: two tasks overlap`);
  }
}

test('3 micro-batches through 3 stages on 2 devices: each matches the original, the timeline respects the plan', { skip }, () => {
  const r = runCli([pipeline(), '--microbatches', '3', '--repeat', '4', '--warmup', '2', '--check', model(), '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const rep = JSON.parse(r.stdout);
  assert.equal(rep.ok, true);
  assert.equal(rep.mode, 'workers');
  assert.deepEqual([rep.microbatches, rep.repeat, rep.warmup, rep.threads_per_device], [3, 4, 2, 1]);
  assert.deepEqual({ ok: rep.check.ok, n: rep.check.microbatches_checked, failed: rep.check.failed_microbatches }, { ok: true, n: 3, failed: [] });
  assert.ok(rep.check.max_abs_err <= 1e-6, `max_abs_err ${rep.check.max_abs_err}`);
  assertTimelineRespectsPlan(rep.timeline, planOf(pipeline()), 3);
  // Per micro-batch, r and t go to device 1, then s and y back to device 0.
  assert.deepEqual(rep.transfers.map((x) => [x.tensor, x.src, x.dst, x.bytes]), [['r', 0, 1, 128], ['t', 0, 1, 64], ['s', 1, 0, 32], ['y', 1, 0, 32]]);
});

test('--repeat: step statistics and throughput are well-formed', { skip }, () => {
  const r = runCli([pipeline(), '--microbatches', '4', '--repeat', '5', '--warmup', '1', '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const rep = JSON.parse(r.stdout);
  const { median, min, max, all } = rep.step_us;
  assert.equal(all.length, 5);
  assert.ok(all.every((v) => v > 0));
  assert.ok(min <= median && median <= max);
  assert.equal(min, Math.min(...all));
  assert.equal(max, Math.max(...all));
  const sorted = [...all].sort((a, b) => a - b);
  assert.equal(median, sorted[2]);
  assert.ok(Math.abs(rep.throughput_mb_per_s - 4 / (median / 1e6)) <= 0.1 + 1e-9 * rep.throughput_mb_per_s);
  assert.ok(rep.cpu_share === null || (rep.cpu_share > 0 && rep.cpu_share <= 1), `cpu_share ${rep.cpu_share}`);
  // The timeline is the last timed step, from its first start to its last end.
  assert.equal(Math.min(...rep.timeline.map((t) => t.start_us)), 0);
  assert.ok(Math.abs(Math.max(...rep.timeline.map((t) => t.end_us)) - all.at(-1)) <= 0.1);
  assertTimelineRespectsPlan(rep.timeline, planOf(pipeline()), 4);
});

test('micro-batch m takes seed + m: its saved outputs equal the original model run alone on that seed', { skip }, () => {
  const dir = tempDir('mb-outputs');
  const r = runCli([pipeline(), '--microbatches', '3', '--seed', '4', '--save-outputs', dir]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const first = readFileSync(join(dir, 'mb0', 'output_0.pb'));
  assert.notDeepEqual(readFileSync(join(dir, 'mb1', 'output_0.pb')), first, 'micro-batches differ');
  for (const m of [0, 1, 2]) {
    const one = runCli([model(), '--seed', String(4 + m), '--expected', join(dir, `mb${m}`)]);
    assert.equal(one.code, 0, `micro-batch ${m}: ${one.stdout}${one.stderr}`);
  }
});

test('--sequential runs the same schedule on the main thread', { skip }, () => {
  const r = runCli([pipeline(), '--microbatches', '3', '--sequential', '--check', model(), '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const rep = JSON.parse(r.stdout);
  assert.equal(rep.mode, 'sequential');
  assert.equal(rep.check.microbatches_checked, 3);
  const order = [...rep.timeline].sort((a, b) => a.start_us - b.start_us).map((t) => [t.microbatch, t.stage]);
  assert.deepEqual(order, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [2, 0], [2, 1], [2, 2]], 'one device: (micro-batch, stage) order');
});

test('--inputs DIR/mb<m>/ per micro-batch; human output names the step statistics', { skip }, () => {
  const dir = tempDir('mb-inputs');
  for (const m of [0, 1]) {
    mkdirSync(join(dir, `mb${m}`));
    writeTensorFile(join(dir, `mb${m}`, 'input_0.pb'), { name: 'ids', type: 'int64', dims: [2, 3], data: BigInt64Array.from([0n, 1n, 2n, 9n, 9n, BigInt(m)]) });
    writeTensorFile(join(dir, `mb${m}`, 'input_1.pb'), { name: 'x', type: 'float32', dims: [2, 8], data: new Float32Array(16).fill(m - 0.5) });
  }
  const r = runCli([pipeline(), '--microbatches', '2', '--repeat', '2', '--inputs', dir, '--check', model()]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^ran 3 stages on 2 devices \(one worker thread per device\): 2 micro-batches per step, 2 timed steps after 0 warm-up$/m);
  assert.match(r.stdout, /^step: median [\d.]+ ms {2}min [\d.]+ ms {2}max [\d.]+ ms {2}\([\d.]+ micro-batches\/s\)$/m);
  assert.match(r.stdout, /^check against .* on each of 2 micro-batches:$/m);
  assert.match(r.stdout, /^PASS vs original model: 3 outputs/m);
  // Without --microbatches, the mb<m> folders say how many.
  const counted = JSON.parse(runCli([pipeline(), '--inputs', dir, '--json']).stdout);
  assert.equal(counted.microbatches, 2);
  const missing = runCli([pipeline(), '--microbatches', '3', '--inputs', dir]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^run_deployment: error: .*mb2: no such directory\n$/);
});

test('wrong weights in one stage fail the check of every micro-batch (exit 3)', { skip }, () => {
  const bad = makeFixture({ corrupt: true });
  const r = runCli([join(bad, 'pipeline'), '--microbatches', '3', '--check', join(bad, 'model.onnx'), '--json']);
  assert.equal(r.code, 3, r.stdout + r.stderr);
  const rep = JSON.parse(r.stdout);
  assert.deepEqual(rep.check.failed_microbatches, [0, 1, 2]);
  assert.match(rep.check.outputs.find((o) => o.name === 'y').reason, /^micro-batch \d: 8 of 8 elements differ .* \(and 2 more micro-batches\)$/);
});

test('the plan\'s micro-batch count is the default; its predicted step is reported beside the measured one', { skip }, () => {
  const dir = join(tempDir('planned'), 'deploy');
  cpSync(pipeline(), dir, { recursive: true });
  const plan = planOf(dir);
  Object.assign(plan, { microbatches: 2, predicted: { step_time_us: 1000 } });
  writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan));
  const rep = JSON.parse(runCli([dir, '--json']).stdout);
  assert.equal(rep.microbatches, 2);
  assert.equal(rep.predicted_step_us, 1000);
  const flat = tempDir('flat-inputs');
  writeTensorFile(join(flat, 'input_0.pb'), { name: 'ids', type: 'int64', dims: [2, 3], data: new BigInt64Array(6) });
  writeTensorFile(join(flat, 'input_1.pb'), { name: 'x', type: 'float32', dims: [2, 8], data: new Float32Array(16) });
  assert.equal(JSON.parse(runCli([dir, '--inputs', flat, '--json']).stdout).microbatches, 1, 'one set of inputs is one micro-batch');
  const other = JSON.parse(runCli([dir, '--microbatches', '3', '--json']).stdout);
  assert.equal(other.predicted_step_us, null, 'a prediction for another M is not comparable');
  plan.microbatches = 0;
  writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan));
  const r = runCli([dir]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /plan\.json: "microbatches" must be a positive integer\n$/);
});

test('bad pipeline flags: one line, exit 2', { skip }, () => {
  for (const [args, re] of [
    [['--microbatches', '0'], /--microbatches: bad value '0'/],
    [['--microbatches', '2.5'], /--microbatches: bad value '2.5'/],
    [['--repeat', '0'], /--repeat: bad value '0'/],
    [['--warmup=-1'], /--warmup: bad value '-1'/],
    [['--threads-per-device', 'two'], /--threads-per-device: bad value 'two'/],
    [['--threads', '1', '--threads-per-device', '1'], /--threads and --threads-per-device are the same flag/],
  ]) {
    const r = runCli([pipeline(), ...args]);
    assert.equal(r.code, 2, `${args}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^run_deployment: error: .*${re.source}.*\\n$`));
    assert.equal(r.stderr.split('\n').length, 2);
  }
});
