#!/usr/bin/env node
// pipeline_training_bench: does a split training step run as fast as the plan
// says, and which placement wins? For each model: write its training step on
// one device and measure the step models' node times on this host
// (NODE_TIMES_TOOL below); then, for each placement algorithm, split the step
// over `--cluster` (default cpu:2x1) with those times under 1F1B at M
// micro-batches, and train it with tools/runner/train.mjs. The best measured
// split is also written and run under GPipe. Reports per model:
//   - predicted against measured step, per plan (|pred/meas − 1|);
//   - TGA's measured step against the fastest measured plan;
//   - the fastest split against one device (speed-up);
//   - 1F1B against GPipe on the fastest split's placement: both measured
//     steps, predicted peak memory, and
//     whether both trained the unsplit step's weights (--check).
// Algorithms that return the same placement are measured once, together.
// Runs are interleaved: K rounds, each training every plan once (W warm-up
// steps + R timed ones, in its own process) in an order rotated each round;
// a plan's measured step is the median over rounds of its rounds' medians.
// R is at least --steps and enough steps to last --min-timed-ms by the plan's
// prediction: three steps of a 150 ms plan are too short a sample on a host
// whose speed moves within seconds.
// TGA against the fastest plan is judged paired: the median over rounds of
// TGA's step over the fastest plan's step in the same round, so that a slow
// minute does not rank two plans whose rounds it fell on differently (the
// ratio of the two medians is printed beside it).
// The first round runs --check against the unsplit step.
// This host's speed, and how much its two cores slow each other (Note
// [Co-run slowdown] in tools/fidelity/measure_step.mjs), move by tens of
// percent within minutes. So each round first measures the step's node times
// again and predicts every plan's placement anew from them (the main command
// with --placement), and a plan's error is the median over rounds of its
// rounds' pred/meas − 1: each prediction is set against the measurements
// taken right after it.
// Run by scripts/bench_training.sh --pipeline, which exports the models.
//
//   node tools/bench/pipeline_training_bench.mjs MODEL.onnx... --work DIR
//        [--results DIR] [--cli PATH] [--cluster cpu:2x1] [--microbatches 8]
//        [--algos tga,sgp,m-etf,m-sct,m-topo,pipeline-dp,single]
//        [--rounds 4] [--steps 3] [--min-timed-ms 2000] [--warmup 1]
//        [--tga-generations 50]
//        [--host-calibration FILE]
//
// Prints a Markdown report; writes pipeline_training.{md,csv} under --results
// (default: --work). Exit 0 whatever the numbers (a benchmark, not a test);
// 2 bad input; 4 when a tool fails.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT, RunnerError, badInput, internal } from '../runner/errors.mjs';
import { REPO_ROOT, resolveCli } from '../fidelity/lib.mjs';
import { median } from '../fidelity/measure.mjs';

const TRAIN = join(REPO_ROOT, 'tools/runner/train.mjs');
// Measures the node times of a one-device training step's models
// (OUT/step/gradient.onnx and update.onnx) into a node-times file the main
// command's --node-times reads.
const NODE_TIMES_TOOL = join(REPO_ROOT, 'tools/fidelity/measure_step.mjs');
const ALL_ALGOS = ['tga', 'sgp', 'm-etf', 'm-sct', 'm-topo', 'pipeline-dp', 'single'];
const PYTHON = '/usr/bin/python3';

function run(cmd, args, what, { allowExit = [] } = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.error) throw internal(`${what}: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0 && !allowExit.includes(r.status)) {
    const msg = (r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' | ');
    throw internal(`${what} failed (exit ${r.status}): ${msg}`);
  }
  return r;
}

const json = (r, what) => {
  try {
    return JSON.parse(r.stdout);
  } catch (e) {
    throw internal(`${what}: not JSON (${e.message})`);
  }
};

/** The model's first output (the bench's loss is MSE on it). */
function firstOutput(model) {
  const r = run(PYTHON, ['-c', 'import onnx,sys;print(onnx.load(sys.argv[1], load_external_data=False).graph.output[0].name)', model], 'reading the model');
  return r.stdout.trim();
}

/** Writes a training step of `model` into `out`; returns its plan.json. */
function writeStep(o, model, out, flags) {
  run(o.cli, [model, '-o', out, '--mode', 'training', '--loss', `mse:${o.loss.get(model)}`,
    '--optimizer', 'sgd', '--learning-rate', '0.001', '--force', '--quiet', ...flags], `onnx-autopar ${basename(model)} ${flags.join(' ')}`);
  return JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8'));
}

/** Trains `out` once: W + R steps; the timed steps' median, the CPU share, and --check's verdict. */
function trainOnce(o, out, steps, check) {
  const args = [TRAIN, out, '--steps', String(o.warmup + steps), '--seed', '3', '--json'];
  if (check) args.push('--check');
  const r = run(process.execPath, args, `train.mjs ${out}`, { allowExit: [EXIT.MISMATCH] });
  const report = json(r, `train.mjs ${out}`);
  return {
    step_ms: median(report.step_ms.slice(o.warmup)),
    cpu_share: report.cpu_share,
    check: check ? (report.check?.ok ? 'pass' : `FAIL (max abs ${report.check?.max_abs ?? '?'})`) : null,
    max_stashes: report.pipeline?.max_stashes ?? null,
  };
}

/** Timed steps of `plan`: at least o.steps, and o.minTimedMs long by its prediction. */
function timedSteps(o, plan) {
  const predictedMs = plan.predicted_us / 1000;
  if (!(predictedMs > 0)) return o.steps;
  return Math.max(o.steps, Math.ceil(o.minTimedMs / predictedMs));
}

function benchModel(o, model) {
  const name = basename(model, '.onnx');
  const dir = join(o.work, name);
  mkdirSync(dir, { recursive: true });
  o.loss.set(model, firstOutput(model));
  // Node times of the step's own models, measured once on one device.
  writeStep(o, model, join(dir, 'one'), ['--devices', '1']);
  const times = join(dir, 'node_times.json');
  run(process.execPath, [NODE_TIMES_TOOL, join(dir, 'one'), '-o', times], `measuring ${name}'s step models`);

  const common = ['--cluster', o.cluster, ...o.calibration, '--microbatches', String(o.microbatches)];
  const searchFlags = [...common, '--node-times', times];
  const plans = [];
  for (const algo of o.algos) {
    const flags = [...searchFlags, '--algo', algo, '--schedule', '1f1b'];
    if (algo === 'tga') flags.push('--max-generations', String(o.tgaGenerations), '--seed', '1');
    // Each algorithm's own split, even one predicted slower than one device.
    if (algo !== 'single') flags.push('--allow-slower-split');
    const out = join(dir, algo);
    const plan = writeStep(o, model, out, flags);
    const p = plan.training.pipeline;
    plans.push({ name: algo, algo, schedule: '1f1b', out, devices: p ? p.devices.length : 1,
      stages: p ? p.stages.filter((s) => s.kind !== 'update').length : 2,
      predicted_us: p ? p.predicted.step_us : NaN, peak: p ? p.predicted.peak_memory_bytes : [], rounds: [] });
  }
  // The placement of `plan` predicted from the node times in `file`.
  const predict = (plan, file, r) => {
    const out = join(dir, `predict_r${r}`);
    const again = writeStep(o, model, out, [...common, '--node-times', file, '--placement', join(plan.out, 'plan.json'),
      '--schedule', plan.schedule]);
    return again.training.pipeline?.predicted.step_us ?? NaN;
  };
  // Rounds, interleaved; each measures the node times and predicts first;
  // the first checks against the unsplit step.
  const measureAll = (list, rounds) => {
    for (let r = 0; r < rounds; r++) {
      const roundTimes = join(dir, `node_times_r${r}.json`);
      run(process.execPath, [NODE_TIMES_TOOL, join(dir, 'one'), '-o', roundTimes], `measuring ${name}'s step models (round ${r + 1})`);
      const slowdown = JSON.parse(readFileSync(roundTimes, 'utf8')).co_run_slowdown;
      process.stderr.write(`  ${name} round ${r + 1}: co-run slowdown ${slowdown?.toFixed(2)}\n`);
      for (const plan of list) plan.predictions = [...(plan.predictions ?? []), predict(plan, roundTimes, r)];
      for (let k = 0; k < list.length; k++) {
        const plan = list[(k + r) % list.length];
        const once = trainOnce(o, plan.out, timedSteps(o, plan), r === 0);
        once.predicted_us = plan.predictions[r];
        once.co_run_slowdown = slowdown;
        if (r === 0) {
          plan.check = once.check;
          plan.max_stashes = once.max_stashes;
        }
        plan.rounds.push(once);
        process.stderr.write(`  ${name} ${plan.name}: ${once.step_ms.toFixed(1)} ms (cpu share ${once.cpu_share?.toFixed(2)})\n`);
      }
    }
    for (const plan of list) {
      plan.measured_ms = median(plan.rounds.map((x) => x.step_ms));
      plan.cpu_share = median(plan.rounds.map((x) => x.cpu_share ?? NaN));
      plan.predicted_us = median(plan.rounds.map((x) => x.predicted_us));
      plan.err = median(plan.rounds.map((x) => x.predicted_us / 1000 / x.step_ms - 1));
    }
  };
  // Algorithms that return the same placement share one measurement: on a
  // shared host two runs of one plan differ by 5-15%, which would otherwise
  // rank identical plans apart.
  const distinct = new Map();
  for (const plan of plans) {
    const key = readFileSync(join(plan.out, 'plan.json'), 'utf8').match(/"node_to_device":[\s\S]*$/)?.[0] ?? plan.out;
    if (!distinct.has(key)) distinct.set(key, plan);
    plan.same_as = distinct.get(key);
  }
  measureAll([...distinct.values()], o.rounds);
  for (const plan of plans) {
    if (plan.same_as === plan) continue;
    for (const k of ['measured_ms', 'cpu_share', 'check', 'max_stashes', 'rounds', 'predicted_us', 'err']) plan[k] = plan.same_as[k];
    plan.name = `${plan.algo} (= ${plan.same_as.algo})`;
  }

  // The fastest measured split, again under GPipe.
  const splits = plans.filter((p) => p.algo !== 'single' && p.devices > 1);
  const best = splits.reduce((a, b) => (a && a.measured_ms <= b.measured_ms ? a : b), null);
  let gpipe = null;
  if (best) {
    // The same placement (its plan.json's node_to_device), so that only the
    // schedule differs.
    const out = join(dir, `${best.algo}_gpipe`);
    const flags = [...searchFlags, '--placement', join(best.out, 'plan.json'), '--schedule', 'gpipe'];
    const plan = writeStep(o, model, out, flags);
    const p = plan.training.pipeline;
    gpipe = { name: `${best.algo} (gpipe)`, algo: best.algo, schedule: 'gpipe', out, devices: p.devices.length,
      stages: p.stages.filter((s) => s.kind !== 'update').length, predicted_us: p.predicted.step_us,
      peak: p.predicted.peak_memory_bytes, rounds: [] };
    measureAll([gpipe], o.rounds);
  }
  return { name, plans, best, gpipe };
}

const pct = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)}%` : '–');
const ms = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const mib = (b) => (b / (1 << 20)).toFixed(1);

function markdown(results, o, host) {
  const lines = [`# Pipeline training on ${o.cluster}, M = ${o.microbatches}, 1F1B`, '',
    `${host}; ${o.rounds} rounds of ${o.warmup} warm-up + at least ${o.steps} timed steps (and ${o.minTimedMs} ms by the prediction) per plan; node times measured on this host ` +
    'before the search and again before each round; predicted = median of the rounds\' predictions, measured = median of the ' +
    'rounds\' medians, pred/meas − 1 = median over rounds; co-run = the slowdown of two devices at once measured in each round.', '',
    '| model | plan | devices | stages | predicted ms | measured ms | pred/meas − 1 | co-run | cpu share | check |',
    '|---|---|---|---|---|---|---|---|---|---|'];
  const errs = [];
  for (const r of results) {
    for (const p of [...r.plans, ...(r.gpipe ? [r.gpipe] : [])]) {
      if (p.schedule === '1f1b') errs.push(Math.abs(p.err));
      const coRun = p.rounds.map((x) => x.co_run_slowdown?.toFixed(2)).join(', ');
      lines.push(`| ${r.name} | ${p.name} | ${p.devices} | ${p.stages} | ${ms(p.predicted_us / 1000)} | ${ms(p.measured_ms)} | ${pct(p.err)} | ${coRun} | ${p.cpu_share?.toFixed(2)} | ${p.check} |`);
    }
  }
  lines.push('', `Prediction: median |pred/meas − 1| ${pct(median(errs))}, worst ${pct(Math.max(...errs))} over ${errs.length} 1F1B plans.`, '',
    '| model | fastest measured | TGA | TGA / fastest (paired) | TGA / fastest (medians) | one device | fastest split | speed-up | 1F1B ms | GPipe ms | 1F1B peak MiB | GPipe peak MiB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const fastest = r.plans.reduce((a, b) => (a.measured_ms <= b.measured_ms ? a : b));
    const tga = r.plans.find((p) => p.algo === 'tga');
    const single = r.plans.find((p) => p.algo === 'single');
    const peak = (p) => (p ? p.peak.map(mib).join(' / ') : '–');
    const paired = tga ? median(tga.rounds.map((x, k) => x.step_ms / fastest.rounds[k].step_ms)) : NaN;
    lines.push(`| ${r.name} | ${fastest.name} ${ms(fastest.measured_ms)} | ${ms(tga?.measured_ms)} | ${tga ? paired.toFixed(3) : '–'} | ` +
      `${tga ? (tga.measured_ms / fastest.measured_ms).toFixed(3) : '–'} | ` +
      `${ms(single?.measured_ms)} | ${r.best ? `${r.best.name} ${ms(r.best.measured_ms)}` : '–'} | ${single && r.best ? (single.measured_ms / r.best.measured_ms).toFixed(2) + '×' : '–'} | ` +
      `${ms(r.best?.measured_ms)} | ${ms(r.gpipe?.measured_ms)} | ${peak(r.best)} | ${peak(r.gpipe)} |`);
  }
  return lines.join('\n') + '\n';
}

function csv(results) {
  const rows = ['model,plan,schedule,devices,stages,predicted_ms,measured_ms,err,cpu_share,check,rounds_ms,rounds_predicted_ms'];
  for (const r of results) {
    for (const p of [...r.plans, ...(r.gpipe ? [r.gpipe] : [])]) {
      rows.push([r.name, p.name, p.schedule, p.devices, p.stages, (p.predicted_us / 1000).toFixed(3), p.measured_ms.toFixed(3),
        p.err.toFixed(4), p.cpu_share?.toFixed(3), p.check, p.rounds.map((x) => x.step_ms.toFixed(1)).join(';'),
        p.rounds.map((x) => (x.predicted_us / 1000).toFixed(1)).join(';')].join(','));
    }
  }
  return rows.join('\n') + '\n';
}

function parse(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: {
      work: { type: 'string' }, results: { type: 'string' }, cli: { type: 'string' }, cluster: { type: 'string' },
      microbatches: { type: 'string' }, algos: { type: 'string' }, rounds: { type: 'string' }, steps: { type: 'string' },
      warmup: { type: 'string' }, 'tga-generations': { type: 'string' }, 'host-calibration': { type: 'string' },
      'min-timed-ms': { type: 'string' },
    } });
  } catch (e) {
    throw badInput(e.message);
  }
  const v = parsed.values;
  const int = (x, d, flag, min = 1) => {
    if (x === undefined) return d;
    const n = Number(x);
    if (!Number.isInteger(n) || n < min) throw badInput(`--${flag}: bad value '${x}'`);
    return n;
  };
  if (!parsed.positionals.length || !v.work) throw badInput('usage: pipeline_training_bench.mjs MODEL.onnx... --work DIR (see the file comment)');
  for (const m of parsed.positionals) if (!existsSync(m)) throw badInput(`${m}: no such model`);
  const algos = v.algos ? v.algos.split(',') : ALL_ALGOS;
  for (const a of algos) if (!ALL_ALGOS.includes(a)) throw badInput(`--algos: unknown '${a}'`);
  return {
    models: parsed.positionals.map((m) => resolve(m)), work: resolve(v.work), results: resolve(v.results ?? v.work),
    cli: resolveCli(v.cli), cluster: v.cluster ?? 'cpu:2x1', microbatches: int(v.microbatches, 8, 'microbatches'), algos,
    rounds: int(v.rounds, 4, 'rounds'), steps: int(v.steps, 3, 'steps'), warmup: int(v.warmup, 1, 'warmup', 0),
    minTimedMs: int(v['min-timed-ms'], 2000, 'min-timed-ms', 0),
    tgaGenerations: int(v['tga-generations'], 50, 'tga-generations'),
    calibration: v['host-calibration'] ? ['--host-calibration', resolve(v['host-calibration'])] : [],
    loss: new Map(),
  };
}

async function main(argv) {
  const o = parse(argv);
  mkdirSync(o.work, { recursive: true });
  mkdirSync(o.results, { recursive: true });
  const before = spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();
  const results = o.models.map((m) => benchModel(o, m));
  const host = `load: before "${before}", after "${spawnSync('uptime', { encoding: 'utf8' }).stdout.trim()}"`;
  const md = markdown(results, o, host);
  writeFileSync(join(o.results, 'pipeline_training.md'), md);
  writeFileSync(join(o.results, 'pipeline_training.csv'), csv(results));
  process.stdout.write(md);
  return 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
  process.stderr.write(`pipeline_training_bench: ${e.message}\n`);
  process.exit(e instanceof RunnerError ? e.code : EXIT.INTERNAL);
});
