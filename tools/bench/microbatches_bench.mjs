#!/usr/bin/env node
// microbatches_bench: does `--microbatches auto` choose a good M on a real
// host? For each model, node times are measured here (tools/fidelity/measure.mjs),
// then the model is planned for `--cluster cpu:2x1` from them with each fixed
// M of --microbatches (default 1,2,4,8,16) and with `--microbatches auto
// --max-microbatches` the largest of them, every split is run with
// tools/runner, and auto's measured time per sample (step ÷ M) is set beside
// the best measured one among the fixed counts. The runs of a model are
// interleaved as plan_fidelity.mjs does: K rounds, each running every
// distinct placement once in an order rotated each round; a run's measured
// step is the median of its rounds' medians. The first round checks every
// micro-batch against the unsplit model.
// Run by scripts/bench_microbatches.sh, which exports the models.
//
//   node tools/bench/microbatches_bench.mjs MODEL.onnx... --work DIR [--results DIR]
//        [--cli PATH] [--cluster cpu:2x1] [--microbatches 1,2,4,8,16]
//        [--rounds 3] [--repeat 3] [--warmup 1] [--host-calibration F]
//
// Prints a Markdown report on stdout and writes it to microbatches.md under
// --results (default: --work). Exit 0 whatever the numbers (a benchmark, not
// a test); 2 bad input; 4 when a tool fails; 3 when a split's outputs differ
// from the unsplit model's.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT, badInput, internal } from '../runner/errors.mjs';
import { median, number, parseCli, runMain } from '../fidelity/measure.mjs';
import { REPO_ROOT, resolveCli } from '../fidelity/lib.mjs';
import { MIN_CPU_SHARE, roundStats, runJson } from './plan_fidelity.mjs';

const RUNNER = join(REPO_ROOT, 'tools/runner/run_deployment.mjs');
const MEASURE = join(REPO_ROOT, 'tools/fidelity/measure.mjs');

/** Plans and splits with `--microbatches M` (a count or 'auto'). */
function plan(o, model, M, times, dir) {
  const args = [model, '-o', dir, '--cluster', o.cluster, '--node-times', times, '--microbatches', String(M), '--stages',
    '--quiet', '--no-report', '--force', '--json'];
  if (M === 'auto') args.push('--max-microbatches', String(Math.max(...o.microbatches)));
  if (o.hostCalibration) args.push('--host-calibration', o.hostCalibration);
  runJson(o.cli, args, `onnx-autopar ${basename(model)} --microbatches ${M}`, { mismatchIsResult: true });
  const p = JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8'));
  const placement = createHash('sha256').update(JSON.stringify(p.node_to_device)).digest('hex').slice(0, 16);
  return {
    dir, microbatches: p.microbatches, predicted_us: p.predicted.step_time_us, stages: p.stages.length,
    devices_used: new Set(p.stages.map((s) => s.device)).size, placement,
    tried: p.microbatches_search?.tried?.map((t) => t.m).sort((a, b) => a - b) ?? null,
  };
}

export async function benchmark(o) {
  const load = () => JSON.parse(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  const meta = { cluster: o.cluster, when: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC', cores: availableParallelism(), load_before: load(), rounds: o.rounds, repeat: o.repeat, warmup: o.warmup };
  const models = [];
  let checkedOk = true;
  for (const model of o.models) {
    const name = basename(model, '.onnx');
    const work = join(o.work, name);
    mkdirSync(work, { recursive: true });
    const times = join(work, 'node_times.json');
    o.log(`${name}: measuring node times`);
    const m = spawnSync(process.execPath, [MEASURE, model, '-o', times, '--runs', '10', '--warmup', '2', '--threads', '1'], { encoding: 'utf8' });
    if (m.status !== 0) throw internal(`measure.mjs ${model} failed: ${(m.stderr || '').trim()}`);
    // Each distinct (M, placement) is one run; auto's plan usually is one of the fixed ones.
    const runs = new Map();
    const plans = [];
    for (const M of [...o.microbatches, 'auto']) {
      const p = plan(o, model, M, times, join(work, `m${M}`));
      p.requested = M;
      o.log(`${name}: --microbatches ${M}: M=${p.microbatches}, ${p.stages} stages, predicted ${(p.predicted_us / p.microbatches).toFixed(0)} us/sample`);
      const key = `${p.microbatches}/${p.placement}`;
      if (!runs.has(key)) runs.set(key, { target: p.dir, M: p.microbatches, rounds: [], steps: [], shares: [] });
      p.run = runs.get(key);
      plans.push(p);
    }
    const all = [...runs.values()];
    for (let k = 0; k < o.rounds; k++) {
      o.log(`${name}: round ${k + 1} of ${o.rounds} (${all.length} runs)`);
      const shift = Math.floor((k * all.length) / o.rounds);
      for (const run of [...all.slice(shift), ...all.slice(0, shift)]) {
        const args = [RUNNER, run.target, '--microbatches', String(run.M), '--repeat', String(o.repeat), '--warmup', String(o.warmup),
          '--threads-per-device', '1', '--json'];
        if (k === 0) args.push('--check', model);
        const r = runJson(process.execPath, args, `run_deployment ${run.target} (M=${run.M})`, { mismatchIsResult: true });
        run.rounds.push(r.step_us.median);
        run.steps.push(...r.step_us.all);
        run.shares.push(r.cpu_share ?? 1);
        if (k === 0) checkedOk &&= r.check.ok;
      }
    }
    for (const p of plans) Object.assign(p, roundStats(p.run), { per_sample_us: median(p.run.rounds) / p.microbatches });
    const fixed = plans.filter((p) => p.requested !== 'auto');
    const auto = plans.find((p) => p.requested === 'auto');
    const best = fixed.reduce((a, b) => (b.per_sample_us < a.per_sample_us ? b : a));
    const predictedBest = fixed.reduce((a, b) => (b.predicted_us / b.microbatches < a.predicted_us / a.microbatches ? b : a));
    models.push({ name, plans, auto, best, predictedBest, ratio: auto.per_sample_us / best.per_sample_us });
  }
  meta.load_after = load();
  return { models, meta, checkedOk };
}

const us = (v) => v.toFixed(0);
const pct = (v) => `${(v * 100).toFixed(0)}%`;

export function markdown({ models, meta, checkedOk }) {
  const L = [];
  L.push(`## --microbatches auto, measured, on ${meta.cluster} (${meta.when})`, '');
  L.push(`Host: ${meta.cores} cores, load average ${meta.load_before.toFixed(2)} before / ${meta.load_after.toFixed(2)} after; ` +
    `runner: ${meta.rounds} interleaved rounds of ${meta.repeat} timed steps after ${meta.warmup} warm-up, every micro-batch checked (${checkedOk ? 'all matched' : 'SOME DIFFERED'}). ` +
    'Plans from node times measured here (tools/fidelity/measure.mjs, 1 thread).', '');
  const share = Math.min(...models.flatMap((m) => m.plans.map((p) => p.cpu_share ?? 1)));
  if (share < MIN_CPU_SHARE) {
    L.push(`**The host was busy**: the lowest cpu share of a run was ${share.toFixed(2)} (< ${MIN_CPU_SHARE}), so other processes, ` +
      'not the plans, set these times (the two "devices" did not get two cores); rerun on an idle host before reading the ratios.', '');
  }
  L.push('| model | auto M (tried) | auto measured us/sample | best fixed M | its us/sample | auto / best | best predicted fixed M |');
  L.push('|---|---|---|---|---|---|---|');
  for (const m of models) {
    L.push(`| ${m.name} | ${m.auto.microbatches} (${m.auto.tried?.join(',') ?? '–'}) | ${us(m.auto.per_sample_us)} | ${m.best.microbatches} | ${us(m.best.per_sample_us)} | ${m.ratio.toFixed(3)} | ${m.predictedBest.microbatches} |`);
  }
  L.push('', 'us/sample: the measured step (median over rounds of each round\'s median) ÷ M; the model as exported is one micro-batch.', '');
  L.push('### Every plan', '', '| model | --microbatches | M | stages | devices | predicted us/sample | measured us/sample | spread | cpu share |', '|---|---|---|---|---|---|---|---|---|');
  for (const m of models) {
    for (const p of m.plans) {
      L.push(`| ${m.name} | ${p.requested} | ${p.microbatches} | ${p.stages} | ${p.devices_used} | ${us(p.predicted_us / p.microbatches)} | ${us(p.per_sample_us)} | ${pct(p.spread)} | ${p.cpu_share.toFixed(2)} |`);
    }
  }
  return L.join('\n') + '\n';
}

const USAGE = `usage: node tools/bench/microbatches_bench.mjs MODEL.onnx... --work DIR [options]
  --work DIR            deployments and node times go here
  --results DIR         where microbatches.md goes (default: --work)
  --cli PATH            onnx-autopar (default: $AUTOPAR_CLI, else build/tools/onnx-autopar)
  --cluster SPEC        the cluster planned for (default cpu:2x1)
  --microbatches LIST   the fixed counts (default 1,2,4,8,16); auto chooses in 1..their largest
  --rounds K            interleaved rounds (default 3)
  --repeat R --warmup W timed and warm-up steps per run and round (default 3, 1)
  --host-calibration F  pass F to onnx-autopar`;

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, {
    work: { type: 'string' }, results: { type: 'string' }, cli: { type: 'string' }, cluster: { type: 'string' },
    microbatches: { type: 'string' }, repeat: { type: 'string' }, warmup: { type: 'string' }, rounds: { type: 'string' },
    'host-calibration': { type: 'string' },
  });
  if (v.help) return { text: USAGE };
  if (positionals.length === 0) throw badInput('expected at least one MODEL.onnx (see --help)');
  if (!v.work) throw badInput('--work DIR is required (see --help)');
  for (const m of positionals) if (!existsSync(m)) throw badInput(`${m}: no such model`);
  const o = {
    models: positionals.map((m) => resolve(m)),
    work: resolve(v.work),
    cli: resolveCli(v.cli),
    cluster: v.cluster ?? 'cpu:2x1',
    microbatches: (v.microbatches ?? '1,2,4,8,16').split(',').filter(Boolean).map((x) => number(x, '--microbatches', { int: true, min: 1 })),
    rounds: v.rounds === undefined ? 3 : number(v.rounds, '--rounds', { int: true, min: 1 }),
    repeat: v.repeat === undefined ? 3 : number(v.repeat, '--repeat', { int: true, min: 1 }),
    warmup: v.warmup === undefined ? 1 : number(v.warmup, '--warmup', { int: true, min: 0 }),
    hostCalibration: v['host-calibration'] ? resolve(v['host-calibration']) : null,
    log: (s) => process.stderr.write(`microbatches_bench: ${s}\n`),
  };
  if (o.microbatches.length === 0) throw badInput('--microbatches: empty list');
  if (o.hostCalibration && !existsSync(o.hostCalibration)) throw badInput(`--host-calibration: ${o.hostCalibration} does not exist`);
  mkdirSync(o.work, { recursive: true });
  const r = await benchmark(o);
  const md = markdown(r);
  const results = resolve(v.results ?? o.work);
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'microbatches.md'), md);
  o.log(`wrote ${join(results, 'microbatches.md')}`);
  return { text: md.trimEnd(), code: r.checkedOk ? EXIT.OK : EXIT.MISMATCH };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('microbatches_bench', main, process.argv.slice(2));
}
