// Control flow that splits (an If inlined, non-tensor values kept in a stage), on the models of
// control_flow_models.py:
//  - a voice-activity detector whose whole network sits inside If(sr == 16000),
//    bound with --input-value sr=16000: the If becomes its taken branch, whose
//    Conv/LSTM nodes are placed and split over 2 and 4 devices (SGP and a
//    seeded random placement) and match ONNX Runtime on stored sr = 16000
//    inputs and on random ones with the runner's --input-value sr=16000;
//    without the value the If stays one unit and the model still plans;
//  - a sequence chain under seeded random placements: every sequence and its
//    readers share a device and a stage, and the split matches ONNX Runtime;
//  - a Scan RNN whose body reshapes with a shape computed from the outer
//    input: `info` gives it static shapes from --dim alone, and a split over
//    2 devices matches ONNX Runtime.
import test from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CLI, autopar, randomPlacementFile, readPlan, runReport, tempDir } from './helpers.mjs';
import { pythonMissing, runPython } from '../../tools/runner/testing/helpers.mjs';

const skip = !CLI ? 'AUTOPAR_CLI not set (run through ctest)' : pythonMissing();
const SCRIPT = join(import.meta.dirname, 'control_flow_models.py');

let models;
function modelsDir() {
  if (!models) {
    models = tempDir('e2e-control-flow');
    runPython([SCRIPT, models]);
  }
  return models;
}

function split(model, out, args) {
  const r = autopar([model, '-o', out, '--stages', '--force', '--quiet', ...args]);
  assert.equal(r.code, 0, `onnx-autopar ${args.join(' ')}: ${r.stderr}`);
  return readPlan(out);
}

const devicesUsed = (plan) => new Set(Object.values(plan.node_to_device)).size;

test('an If decided by --input-value is inlined, split over 2 and 4 devices, and matches ORT', { skip, timeout: 600000 }, () => {
  const dir = modelsDir();
  const model = join(dir, 'vad_if.onnx');
  const inputs = join(dir, 'vad_if_inputs');
  const bound = ['--input-value', 'sr=16000', '--dim', 'batch=2'];
  // The same flags make the runner's random inputs take the inlined branch
  // in the unsplit model too (sr is read by no stage of the split).
  const randomInputs = (seed) => ['--check', model, ...bound, '--seed', String(seed)];
  for (const devices of [2, 4]) {
    const out = join(dir, `sgp_${devices}`);
    const plan = split(model, out, ['--devices', String(devices), ...bound]);
    const nodes = Object.keys(plan.node_to_device);
    // The taken branch's nodes are placed one by one; the If, the other
    // branch and the condition are gone.
    assert.ok(nodes.includes('sr16k_lstm') && nodes.includes('sr16k_conv1'), nodes.join(' '));
    assert.ok(!nodes.includes('by_rate') && !nodes.includes('is_16k'), nodes.join(' '));
    assert.ok(!nodes.some((n) => n.startsWith('sr8k_')), nodes.join(' '));
    const report = runReport(out, ['--check', model, '--inputs', inputs]);
    assert.equal(report.check.ok, true, JSON.stringify(report.check));
    const random = runReport(out, randomInputs(devices));
    assert.equal(random.check.ok, true, JSON.stringify(random.check));
    assert.deepEqual(random.inputs.values, { sr: ['16000'] });

    // The same nodes on a seeded random placement, so that the branch really
    // is cut into pieces on every device.
    const placement = randomPlacementFile(plan, devices, 31, dir);
    const rout = join(dir, `random_${devices}`);
    const rplan = split(model, rout, ['--devices', String(devices), '--placement', placement, ...bound]);
    assert.equal(devicesUsed(rplan), devices);
    const rreport = runReport(rout, ['--check', model, '--inputs', inputs]);
    assert.equal(rreport.check.ok, true, JSON.stringify(rreport.check));
    const rrandom = runReport(rout, randomInputs(devices + 1));
    assert.equal(rrandom.check.ok, true, JSON.stringify(rrandom.check));
    // Another rate takes the other branch in the unsplit model: no match.
    assert.throws(() => runReport(rout, ['--check', model, '--input-value', 'sr=8000', '--dim', 'batch=2']), /exit 3/);
  }
});

test('without --input-value the If stays one unit, its shapes inferred from the bound outer shapes', { skip, timeout: 120000 }, () => {
  const dir = modelsDir();
  const out = join(dir, 'unbound');
  const plan = split(join(dir, 'vad_if.onnx'), out, ['--devices', '2', '--dim', 'batch=2']);
  assert.deepEqual(Object.keys(plan.node_to_device).sort(), ['by_rate', 'is_16k']);
  // The branches' shapes (a Reshape to a shape computed from the outer x)
  // come from the outer graph's bound batch: nothing is estimated.
  assert.deepEqual(plan.estimates, []);
});

test('sequences and their readers share a stage under random placements, and match ORT', { skip, timeout: 300000 }, () => {
  const dir = modelsDir();
  const model = join(dir, 'sequence_chain.onnx');
  const first = split(model, join(dir, 'seq_sgp'), ['--devices', '3']);
  const sequenceNodes = ['construct', 'insert', 'at', 'concat'];
  for (const seed of [1, 2, 3, 4, 5]) {
    const placement = randomPlacementFile(first, 3, seed, dir);
    const out = join(dir, `seq_random_${seed}`);
    const plan = split(model, out, ['--devices', '3', '--placement', placement]);
    const devices = new Set(sequenceNodes.map((n) => plan.node_to_device[n]));
    assert.equal(devices.size, 1, `seed ${seed}: ${JSON.stringify(plan.node_to_device)}`);
    // A stage fed a sequence fails in ORT's Node binding ("Non tensor type is
    // temporarily not supported"), so a passing check shows none is.
    const report = runReport(out, ['--check', model, '--seed', String(seed)]);
    assert.equal(report.check.ok, true, `seed ${seed}: ${JSON.stringify(report.check)}`);
  }
});

test('a Scan whose body reads a bound outer shape gets static shapes, splits and matches ORT', { skip, timeout: 120000 }, () => {
  const dir = modelsDir();
  const model = join(dir, 'scan_rnn.onnx');
  const info = autopar(['info', model, '--dim', 'batch=2', '--format', 'json']);
  assert.equal(info.code, 0, info.stderr);
  const summary = JSON.parse(info.stdout);
  assert.deepEqual(summary.outputs.map((o) => [o.name, o.shape]), [['y', [2, 6, 16]], ['h_proj', [2, 8]]]);
  // The Scan's own outputs (the stacked [2,6,4,4] grids and the final
  // state) included: nothing is left without a static shape.
  assert.equal(summary.values_without_static_shape, 0);

  const out = join(dir, 'scan_split');
  const plan = split(model, out, ['--devices', '2', '--dim', 'batch=2']);
  assert.deepEqual(plan.estimates, []);
  assert.ok('rnn' in plan.node_to_device, Object.keys(plan.node_to_device).join(' '));
  // A seeded random placement, so that the Scan's inputs and outputs cross
  // devices.
  const placement = randomPlacementFile(plan, 2, 11, dir);
  const rout = join(dir, 'scan_random');
  const rplan = split(model, rout, ['--devices', '2', '--placement', placement, '--dim', 'batch=2']);
  assert.equal(devicesUsed(rplan), 2);
  const report = runReport(rout, ['--check', model, '--seed', '3']);
  assert.equal(report.check.ok, true, JSON.stringify(report.check));
});
