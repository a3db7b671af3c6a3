#!/usr/bin/env node
// calibrate: fits the cpu preset's kernel overhead and per-op-class
// efficiency / memory efficiency to measured ORT per-node times on this
// machine, and writes a device file for `--device FILE` (DeviceSpecFromJson
// schema: "base" plus overrides). The fit is described in fit.mjs and
// README.md.
//
// The cost model's per-node compute and memory times are read from
// `onnx-autopar cost` itself, with probe device files built on the base
// preset (efficiency 1 and an unbounded memory side, and the reverse; and the
// base's own values one side at a time), so that the C++ roofline stays the
// single source of truth.
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { EXIT, badInput } from '../runner/errors.mjs';
import { MEASURE_OPTIONS, measureModel, measureOptionsFrom, parseCli, runMain } from './measure.mjs';
import { OP_CLASSES, fidelityReport, joinNodes, readMeasurements, resolveCli, runCost } from './lib.mjs';
import { fitRoofline, predict } from './fit.mjs';

const USAGE = `usage: node tools/fidelity/calibrate.mjs MODEL.onnx|MEASURED.json... -o OUT.json [options]
  -o, --output F      the device file to write (required)
  --base P            preset the file builds on (default cpu:T, T = --threads)
  --name N            the device's name (default cpu-calibrated)
  --cli PATH          onnx-autopar binary (default $AUTOPAR_CLI, else build/tools/onnx-autopar)
  --runs N  --warmup N  --threads N  --seed N  --int-range LO,HI  --dim NAME=V
                      measurement options (see measure.mjs); MEASURED.json files
                      (measure.mjs -o / fidelity --save-measured) are used as
                      they are, several of one model merged (per-node median)
  --stat S            per-node statistic: median (default), mean, min
  --alpha A           weight of a node in the log fit: measured_us^A (default 0.5)
  --no-sum-match      skip the per-class rescaling to measured totals
  --json              print the fit as JSON
exit codes: 0 written, 2 bad input, 4 ONNX Runtime or internal error`;

const OPTIONS = {
  ...MEASURE_OPTIONS,
  output: { type: 'string', short: 'o' }, base: { type: 'string' }, name: { type: 'string' },
  cli: { type: 'string' }, stat: { type: 'string' }, alpha: { type: 'string' },
  'no-sum-match': { type: 'boolean' }, json: { type: 'boolean' },
};

const HUGE = 1e12; // an efficiency that takes one side of the roofline out
const allClasses = (v) => Object.fromEntries(OP_CLASSES.map((c) => [c, v]));

/**
 * Per-node roofline parts of `model` under `base`, from probe runs of the CLI:
 * C (compute µs at efficiency 1), M (memory µs at memory efficiency 1),
 * and the base's overhead o0 and per-class e0 / m0 where a node shows them.
 */
export function probeModel(cli, model, base, dims) {
  const nodesOf = (device) => runCost(cli, model, device, dims).nodes;
  const C = nodesOf({ base, kernel_overhead_us: 0, efficiency: allClasses(1), memory_efficiency: allClasses(HUGE) });
  const M = nodesOf({ base, kernel_overhead_us: 0, efficiency: allClasses(HUGE), memory_efficiency: allClasses(1) });
  const Cb = nodesOf({ base, kernel_overhead_us: 0, memory_efficiency: allClasses(HUGE) });
  const Mb = nodesOf({ base, kernel_overhead_us: 0, efficiency: allClasses(HUGE) });
  const O = nodesOf({ base, efficiency: allClasses(HUGE), memory_efficiency: allClasses(HUGE) });
  const prior = { o: null, e: {}, m: {} };
  const parts = new Map();
  C.forEach((n, i) => {
    if (n.op_class === undefined || n.kernels === undefined) {
      throw badInput(`${cli} prints no op_class/kernels per node in cost --format json (rebuild it)`);
    }
    const c = n.time_us;
    const m = M[i].time_us;
    // The probes leave 1e-12 of the other side; below 1e-9 µs is nothing.
    const row = { cls: n.op_class, k: n.kernels, C: c > 1e-9 ? c : 0, M: m > 1e-9 ? m : 0 };
    parts.set(i, row);
    if (row.C > 0 && Cb[i].time_us > 0) prior.e[row.cls] = row.C / Cb[i].time_us;
    if (row.M > 0 && Mb[i].time_us > 0) prior.m[row.cls] = row.M / Mb[i].time_us;
    if (n.kernels > 0 && prior.o === null) prior.o = (O[i].time_us - Math.max(row.C, row.M) / HUGE) / n.kernels;
  });
  return { parts, prior };
}

const sig = (v, d = 4) => Number(v.toPrecision(d));

async function main(argv) {
  const { values: v, positionals } = parseCli(argv, OPTIONS);
  if (v.help) return { text: USAGE };
  if (positionals.length === 0) throw badInput('expected at least one MODEL.onnx or MEASURED.json (see --help)');
  if (!v.output) throw badInput('-o OUT.json is required');
  const o = measureOptionsFrom(v);
  const stat = v.stat ?? 'median';
  if (!['median', 'mean', 'min'].includes(stat)) throw badInput('--stat must be median, mean or min');
  const alpha = v.alpha === undefined ? 0.5 : Number(v.alpha);
  if (!Number.isFinite(alpha) || alpha < 0 || alpha > 1) throw badInput(`--alpha: bad value '${v.alpha}' (0..1)`);
  const cli = resolveCli(v.cli);

  // Measurements first (they decide the thread count of the default base).
  const measured = readMeasurements(positionals.filter((p) => p.endsWith('.json')));
  for (const p of positionals) {
    if (!p.endsWith('.json')) measured.push(await measureModel(p, o));
  }
  const threads = new Set(measured.map((m) => m.threads));
  if (threads.size > 1) throw badInput(`measurements with different thread counts (${[...threads].join(', ')}) cannot be fitted together`);
  const base = v.base ?? `cpu:${[...threads][0]}`;

  // Rows for the fit: every joined node with its probed roofline parts.
  const rows = [];
  const perModel = [];
  let prior = { o: null, e: {}, m: {} };
  for (const m of measured) {
    const baseCost = runCost(cli, m.model, base, o.dimValues);
    const probe = probeModel(cli, m.model, base, o.dimValues);
    prior = { o: prior.o ?? probe.prior.o, e: { ...probe.prior.e, ...prior.e }, m: { ...probe.prior.m, ...prior.m } };
    const indexOf = new Map(baseCost.nodes.map((n, i) => [n, i]));
    const j = joinNodes(baseCost.nodes, m.nodes, stat);
    const modelRows = j.joined.map((r) => ({ ...probe.parts.get(indexOf.get(r.cost)), y: r.measured_us, base_us: r.predicted_us, model: m.model }));
    rows.push(...modelRows);
    perModel.push({ m, baseCost, modelRows });
  }
  if (prior.o === null) throw badInput('no node with a kernel in the models; nothing to calibrate');
  for (const c of OP_CLASSES) {
    prior.e[c] ??= 1;
    prior.m[c] ??= 1;
  }
  // The JS roofline must reproduce the CLI's base predictions.
  for (const r of rows) {
    const js = predict(r, prior);
    if (Math.abs(js - r.base_us) > 1e-6 * Math.max(1, r.base_us)) {
      throw badInput(`probe mismatch: JS roofline ${js} µs vs onnx-autopar ${r.base_us} µs for a ${r.cls} node; the device model changed?`);
    }
  }

  const fit = fitRoofline(rows, prior, { alpha, sumMatch: !v['no-sum-match'] });
  const p = fit.params;
  // A class's efficiency (memory efficiency) is written only when the data
  // says something about it: some node of the class has its compute (memory)
  // side binding and worth at least 20% of its predicted time. Otherwise the
  // base preset's value stays (the fit only kept it near it).
  const binds = (r, side) => {
    const c = r.C > 0 ? r.C / p.e[r.cls] : 0;
    const mm = r.M > 0 ? r.M / p.m[r.cls] : 0;
    const t = predict(r, p);
    return side === 'compute' ? c >= mm && c >= 0.2 * t : mm >= c && mm >= 0.2 * t;
  };
  const computeSeen = new Set(rows.filter((r) => r.y > 0 && binds(r, 'compute')).map((r) => r.cls));
  const memorySeen = new Set(rows.filter((r) => r.y > 0 && binds(r, 'memory')).map((r) => r.cls));
  const models = measured.map((m) => basename(m.model)).join(', ');
  const device = {
    base,
    name: v.name ?? 'cpu-calibrated',
    description:
      `${base} calibrated by tools/fidelity/calibrate.mjs on ${models}: ORT ${measured[0].ort_version ?? '?'} CPU EP, ` +
      `${[...threads][0]} intra-op thread(s), graph optimizations off, per-node ${stat} of ${measured[0].runs} runs`,
    kernel_overhead_us: sig(p.o),
    efficiency: Object.fromEntries(OP_CLASSES.filter((c) => computeSeen.has(c)).map((c) => [c, sig(p.e[c])])),
    memory_efficiency: Object.fromEntries(OP_CLASSES.filter((c) => memorySeen.has(c)).map((c) => [c, sig(p.m[c])])),
  };
  writeFileSync(v.output, JSON.stringify(device, null, 2) + '\n');

  // Check: the written file through the CLI, on the same measurements.
  const check = perModel.map(({ m, baseCost }) => {
    const before = fidelityReport({ cost: baseCost, measured: m, stat });
    const after = fidelityReport({ cost: runCost(cli, m.model, v.output, o.dimValues), measured: m, stat });
    return {
      model: m.model, joined: before.nodes.joined, cpu_share: m.cpu_share ?? null,
      spearman_before: before.spearman, spearman_after: after.spearman,
      ratio_before: before.whole_model.ratio, ratio_after: after.whole_model.ratio,
    };
  });
  const classes = Object.entries(fit.classes).map(([c, s]) => ({
    op_class: c, nodes: s.nodes, measured_us: s.measured_us,
    base_us: rows.filter((r) => r.cls === c).reduce((a, r) => a + r.base_us, 0),
    fitted_us: s.predicted_us, scale: s.scale,
    efficiency: [prior.e[c], p.e[c]], memory_efficiency: [prior.m[c], p.m[c]],
    compute_seen: computeSeen.has(c), memory_seen: memorySeen.has(c),
  }));
  if (v.json) return { json: { ok: true, output: v.output, base, device, prior, classes, check } };

  const f = (x, d = 3) => (x === null || x === undefined ? 'n/a' : x.toFixed(d));
  const lines = [`fitted ${rows.length} nodes of ${measured.length} model(s) (${models}) against ${base}; wrote ${v.output}`];
  lines.push(`kernel_overhead_us ${f(prior.o, 2)} -> ${f(p.o, 2)}`);
  lines.push(`  ${'class'.padEnd(14)} ${'nodes'.padStart(5)} ${'measured'.padStart(10)} ${'base'.padStart(10)} ${'fitted'.padStart(10)}  efficiency          memory_efficiency`);
  for (const c of classes) {
    const eff = c.compute_seen ? `${f(c.efficiency[0], 4)} -> ${f(c.efficiency[1], 4)}` : `${f(c.efficiency[0], 4)} (kept)`;
    const mem = c.memory_seen ? `${f(c.memory_efficiency[0], 4)} -> ${f(c.memory_efficiency[1], 4)}` : `${f(c.memory_efficiency[0], 4)} (kept)`;
    lines.push(
      `  ${c.op_class.padEnd(14)} ${String(c.nodes).padStart(5)} ${(c.measured_us / 1000).toFixed(2).padStart(8)}ms ${(c.base_us / 1000).toFixed(2).padStart(8)}ms ${(c.fitted_us / 1000).toFixed(2).padStart(8)}ms  ${eff.padEnd(19)} ${mem}`,
    );
  }
  lines.push('check with onnx-autopar --device ' + v.output + ' (same measurements):');
  for (const c of check) {
    lines.push(`  ${basename(c.model).padEnd(28)} ${String(c.joined).padStart(4)} nodes  spearman ${f(c.spearman_before)} -> ${f(c.spearman_after)}  whole-model ratio ${f(c.ratio_before)} -> ${f(c.ratio_after)}`);
  }
  const busy = check.filter((c) => c.cpu_share !== null && c.cpu_share < 0.8);
  if (busy.length) lines.push(`warning: measured on a busy machine (${busy.map((c) => `${basename(c.model)} ${(100 * c.cpu_share).toFixed(0)}% of a core`).join(', ')}); the fit absorbs that slowdown`);
  return { text: lines.join('\n'), code: EXIT.OK };
}

runMain('calibrate', main, process.argv.slice(2));
