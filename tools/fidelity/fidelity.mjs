#!/usr/bin/env node
// fidelity: how well the cost model's per-node predictions match ONNX
// Runtime's measured per-node times on this machine.
// A report, not a test: exits 0 whatever the numbers, non-zero only on errors.
// See README.md.
import { writeFileSync } from 'node:fs';
import { EXIT, badInput } from '../runner/errors.mjs';
import { MEASURE_OPTIONS, measureModel, measureOptionsFrom, parseCli, runMain } from './measure.mjs';
import { fidelityReport, formatReport, readMeasurements, resolveCli, runCost } from './lib.mjs';

const USAGE = `usage: node tools/fidelity/fidelity.mjs MODEL.onnx [options]
  --device D          cost-model device: preset (cpu, cpu:N, ...) or device JSON file
                      (default cpu:T, T = --threads: the cpu preset with as many
                      cores as ORT uses)
  --cli PATH          onnx-autopar binary (default $AUTOPAR_CLI, else build/tools/onnx-autopar)
  --runs N            measured runs (default 20)      --warmup N   discarded runs (default 3)
  --threads N         ORT intra-op threads (default 1)
  --seed N            seed of the random inputs (default 0)
  --int-range LO,HI   integer inputs uniform in [LO, HI) (default 0,10)
  --dim NAME=V        symbolic input dim (repeatable; passed to ORT and to onnx-autopar)
  --stat S            per-node statistic over the runs: median (default), mean, min
  --measured FILE     use a measurement saved by measure.mjs -o / --save-measured
                      instead of running ORT (MODEL may then be omitted);
                      repeatable: measurements of the model taken at different
                      times are merged (per node, the median over them)
  --save-measured F   save this run's measurement (to re-check other devices)
  --top N             op types listed (default 8)
  --json              one JSON object on stdout
exit codes: 0 report printed, 2 bad input, 4 ONNX Runtime or internal error`;

const OPTIONS = {
  ...MEASURE_OPTIONS,
  device: { type: 'string' }, cli: { type: 'string' }, stat: { type: 'string' },
  measured: { type: 'string', multiple: true }, 'save-measured': { type: 'string' }, top: { type: 'string' },
  json: { type: 'boolean' },
};

export const STATS = ['median', 'mean', 'min'];

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, OPTIONS);
  if (v.help) return { text: USAGE };
  const o = measureOptionsFrom(v);
  const stat = v.stat ?? 'median';
  if (!STATS.includes(stat)) throw badInput(`--stat must be one of ${STATS.join(', ')}`);
  const top = v.top === undefined ? 8 : Number(v.top);
  if (!Number.isInteger(top) || top < 1) throw badInput(`--top: bad value '${v.top}'`);
  let measured;
  let model;
  if (v.measured) {
    if (positionals.length > 1) throw badInput('expected at most one MODEL.onnx (see --help)');
    const all = readMeasurements(v.measured);
    if (all.length !== 1) throw badInput('--measured files are of different models');
    measured = all[0];
    model = positionals[0] ?? measured.model;
  } else {
    if (positionals.length !== 1) throw badInput('expected one MODEL.onnx (see --help)');
    model = positionals[0];
  }
  const cli = resolveCli(v.cli);
  const device = v.device ?? `cpu:${measured?.threads ?? o.threads}`;
  // The cost run first: it fails fast on a model the cost model cannot take.
  const cost = runCost(cli, model, device, o.dimValues);
  if (!measured) {
    measured = await measureModel(model, o);
    if (v['save-measured']) writeFileSync(v['save-measured'], JSON.stringify(measured, null, 1) + '\n');
  }
  const report = fidelityReport({ cost, measured, stat, top });
  report.device_arg = device;
  return v.json ? { json: { ok: true, ...report } } : { text: formatReport(report), code: EXIT.OK };
}

runMain('fidelity', main, process.argv.slice(2));
