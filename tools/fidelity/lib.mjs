// Shared pieces of the fidelity check and the calibration: running
// `onnx-autopar cost --format json`, joining its per-node predictions with
// measured per-node times, and the statistics reported on the join.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { badInput, internal } from '../runner/errors.mjs';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The C++ CLI: --cli, else $AUTOPAR_CLI, else build/tools/onnx-autopar under the repo. */
export function resolveCli(flag) {
  const cli = flag ?? process.env.AUTOPAR_CLI ?? join(REPO_ROOT, 'build/tools/onnx-autopar');
  if (!existsSync(cli)) throw badInput(`onnx-autopar not found at ${cli} (build it, or pass --cli PATH)`);
  return resolve(cli);
}

export const OP_CLASSES = ['conv', 'matmul', 'recurrent', 'normalization', 'pooling', 'reduction', 'elementwise', 'data_movement', 'metadata', 'other'];

/**
 * `onnx-autopar cost MODEL --device DEVICE --format json` → the parsed report.
 * `device` is a preset name, a device file path, or an object (written to a
 * temporary device file). `dims`: {NAME: V} passed as --dim.
 */
export function runCost(cli, model, device, dims = {}) {
  let tmp = null;
  let deviceArg = device;
  if (typeof device === 'object') {
    tmp = mkdtempSync(join(tmpdir(), 'autopar-device-'));
    deviceArg = join(tmp, 'device.json');
    writeFileSync(deviceArg, JSON.stringify(device));
  }
  try {
    const args = ['cost', model, '--device', deviceArg, '--format', 'json'];
    for (const [k, v] of Object.entries(dims)) args.push('--dim', `${k}=${v}`);
    const r = spawnSync(cli, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
    if (r.error) throw internal(`cannot run ${cli}: ${r.error.message}`);
    if (r.status !== 0) {
      const msg = (r.stderr || r.stdout || '').trim().split('\n').pop();
      throw badInput(`onnx-autopar cost ${model} --device ${typeof device === 'object' ? JSON.stringify(device) : device} failed (exit ${r.status}): ${msg}`);
    }
    let report;
    try {
      report = JSON.parse(r.stdout);
    } catch (e) {
      throw internal(`onnx-autopar cost printed no JSON: ${e.message}`);
    }
    if (!Array.isArray(report.nodes)) throw internal('onnx-autopar cost JSON has no "nodes"');
    return report;
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

/** Short op type: "com.microsoft.FusedConv" → "FusedConv" (ORT's profile uses the bare type). */
const bareOp = (op) => String(op ?? '').split('.').pop();

/**
 * Joins predicted nodes (cost report `nodes`) with measured nodes
 * (measure.mjs `nodes`: {key: {op, node_index, unnamed, mean_us, median_us,
 * min_us}}) by node name. Nodes without a name in the model get made-up
 * names on both sides, which differ: ORT profiles them as "<op>_<ORT node
 * index>" (Constant nodes do not count: ORT folds them), onnx-autopar names
 * them "<op>_<position>". Those (on either side, a name "<op>_<digits>") are
 * joined with each other per op type in order — ORT's node index order vs
 * the cost report's order, the same for models whose node list is
 * topologically sorted, as ONNX requires. `stat` picks mean_us, median_us or
 * min_us. Returns { joined: [{name, op, op_class, kernels, predicted_us,
 * measured_us, cost}], predictedOnly: [cost node], measuredOnly: [{name, op,
 * measured_us}] }.
 */
export function joinNodes(costNodes, measuredNodes, stat = 'median') {
  const field = `${stat}_us`;
  const madeUp = (name, op) => !name || new RegExp(`^${escapeRe(bareOp(op))}_\\d+$`).test(name);
  const byName = new Map();
  const unnamedPred = new Map(); // op -> [cost node], in report order
  for (const n of costNodes) {
    if (madeUp(n.name, n.op)) {
      const op = bareOp(n.op);
      if (!unnamedPred.has(op)) unnamedPred.set(op, []);
      unnamedPred.get(op).push(n);
    } else byName.set(n.name, n);
  }
  const used = new Set();
  const joined = [];
  const measuredOnly = [];
  const unnamedMeas = [];
  for (const [key, m] of Object.entries(measuredNodes)) {
    if (m.unnamed ?? (key.startsWith('#') || key === `${m.op}_${m.node_index}`)) {
      unnamedMeas.push([key, m]);
      continue;
    }
    let p = byName.get(key);
    if (!p) {
      // A real name that merely looks made up ("Conv_5" from old exporters).
      const pool = unnamedPred.get(m.op) ?? [];
      const i = pool.findIndex((n) => n.name === key);
      if (i >= 0) p = pool.splice(i, 1)[0];
    }
    if (p && !used.has(p)) {
      used.add(p);
      joined.push(row(p, key, m[field]));
    } else measuredOnly.push({ name: key, op: m.op, measured_us: m[field] });
  }
  unnamedMeas.sort((a, b) => a[1].node_index - b[1].node_index);
  for (const [key, m] of unnamedMeas) {
    const p = (unnamedPred.get(m.op) ?? []).shift();
    if (p) {
      used.add(p);
      joined.push(row(p, p.name || key, m[field]));
    } else measuredOnly.push({ name: key, op: m.op, measured_us: m[field] });
  }
  const predictedOnly = costNodes.filter((n) => !used.has(n));
  return { joined, predictedOnly, measuredOnly };
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function row(p, name, measured) {
  return { name, op: p.op, op_class: p.op_class ?? null, kernels: p.kernels ?? 1, predicted_us: p.time_us, measured_us: measured, cost: p };
}

/** Ranks (1-based) with ties given their average rank. */
export function ranks(values) {
  const idx = values.map((v, i) => [v, i]).sort((a, b) => a[0] - b[0]);
  const r = new Array(values.length);
  for (let i = 0; i < idx.length; ) {
    let j = i;
    while (j + 1 < idx.length && idx[j + 1][0] === idx[i][0]) j++;
    const avg = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) r[idx[k][1]] = avg;
    i = j + 1;
  }
  return r;
}

export function pearson(x, y) {
  const n = x.length;
  if (n < 2) return null;
  const mx = x.reduce((a, b) => a + b, 0) / n;
  const my = y.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
    syy += (y[i] - my) ** 2;
  }
  if (sxx === 0 || syy === 0) return null; // constant: correlation undefined
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

/** Spearman's rank correlation (Pearson on average ranks); null when undefined (< 2 points or a constant side). */
export const spearman = (x, y) => pearson(ranks(x), ranks(y));

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/**
 * The fidelity report of a join: counts, Spearman, whole-model ratios and
 * the op types and nodes whose predictions are furthest off (by absolute
 * µs error, which is what moves the whole-model ratio).
 */
export function fidelityReport({ cost, measured, stat = 'median', top = 8 }) {
  const j = joinNodes(cost.nodes, measured.nodes, stat);
  const pred = j.joined.map((r) => r.predicted_us);
  const meas = j.joined.map((r) => r.measured_us);
  const predJoined = sum(pred);
  const measJoined = sum(meas);
  const predTotal = sum(cost.nodes.map((n) => n.time_us));
  const measTotal = sum(Object.values(measured.nodes).map((n) => n[`${stat}_us`]));
  // Wall time: without the profiler when measured (the real cost), else with.
  const walls = measured.wall_unprofiled_us ?? measured.wall_us;
  const wall = walls?.[stat] ?? walls?.median ?? null;
  const ratio = (a, b) => (b > 0 ? a / b : null);

  const byOp = new Map();
  for (const r of j.joined) {
    const k = r.op;
    if (!byOp.has(k)) byOp.set(k, { op: k, op_class: r.op_class, nodes: 0, measured_us: 0, predicted_us: 0 });
    const o = byOp.get(k);
    o.nodes++;
    o.measured_us += r.measured_us;
    o.predicted_us += r.predicted_us;
  }
  const ops = [...byOp.values()].map((o) => ({ ...o, ratio: ratio(o.predicted_us, o.measured_us), error_us: o.predicted_us - o.measured_us }));
  ops.sort((a, b) => Math.abs(b.error_us) - Math.abs(a.error_us));
  const logErr = j.joined.filter((r) => r.measured_us > 0 && r.predicted_us > 0).map((r) => Math.abs(Math.log2(r.predicted_us / r.measured_us)));
  const worstNodes = j.joined
    .map((r) => ({ name: r.name, op: r.op, measured_us: r.measured_us, predicted_us: r.predicted_us, ratio: ratio(r.predicted_us, r.measured_us) }))
    .sort((a, b) => Math.abs(b.predicted_us - b.measured_us) - Math.abs(a.predicted_us - a.measured_us))
    .slice(0, Math.min(top, 5));
  return {
    model: measured.model,
    device: cost.device,
    stat,
    threads: measured.threads,
    runs: measured.runs,
    cpu_share: measured.cpu_share ?? null,
    nodes: { predicted: cost.nodes.length, measured: Object.keys(measured.nodes).length, joined: j.joined.length },
    spearman: spearman(pred, meas),
    pearson_log: pearson(pred.map((v) => Math.log(Math.max(v, 1e-3))), meas.map((v) => Math.log(Math.max(v, 1e-3)))),
    within_2x: logErr.length ? logErr.filter((e) => e <= 1).length / logErr.length : null,
    median_abs_log2_error: logErr.length ? logErr.sort((a, b) => a - b)[logErr.length >> 1] : null,
    whole_model: {
      predicted_us: predJoined,
      measured_kernel_us: measJoined,
      ratio: ratio(predJoined, measJoined),
      predicted_all_us: predTotal,
      measured_all_kernel_us: measTotal,
      wall_us: wall,
      wall_profiled: !measured.wall_unprofiled_us,
      ratio_vs_wall: ratio(predTotal, wall),
    },
    unjoined: {
      predicted_only: { count: j.predictedOnly.length, predicted_us: sum(j.predictedOnly.map((n) => n.time_us)), ops: countOps(j.predictedOnly.map((n) => n.op)) },
      measured_only: { count: j.measuredOnly.length, measured_us: sum(j.measuredOnly.map((n) => n.measured_us)), ops: countOps(j.measuredOnly.map((n) => n.op)) },
    },
    top_mispredicted_ops: ops.slice(0, top),
    top_mispredicted_nodes: worstNodes,
  };
}

function countOps(ops) {
  const c = {};
  for (const op of ops) c[op] = (c[op] ?? 0) + 1;
  return c;
}

const fmt = (v, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? 'n/a' : v.toFixed(d));
const ms = (us) => (us === null || us === undefined ? 'n/a' : `${(us / 1000).toFixed(3)} ms`);

/** The human-readable form of fidelityReport's result. */
export function formatReport(r) {
  const w = r.whole_model;
  const lines = [
    `model ${r.model}`,
    `device ${r.device}; ORT CPU EP, ${r.threads} thread(s), ${r.runs} measured runs, per-node ${r.stat}`,
    `nodes: ${r.nodes.joined} joined (predicted ${r.nodes.predicted}, measured ${r.nodes.measured})`,
  ];
  const po = r.unjoined.predicted_only;
  const mo = r.unjoined.measured_only;
  if (po.count) lines.push(`  predicted only: ${po.count} (${ms(po.predicted_us)}): ${Object.entries(po.ops).map(([k, v]) => `${k}×${v}`).join(' ')}`);
  if (mo.count) lines.push(`  measured only: ${mo.count} (${ms(mo.measured_us)}): ${Object.entries(mo.ops).map(([k, v]) => `${k}×${v}`).join(' ')}`);
  lines.push(
    `spearman ${fmt(r.spearman, 3)}   pearson(log) ${fmt(r.pearson_log, 3)}   nodes within 2x ${r.within_2x === null ? 'n/a' : `${(100 * r.within_2x).toFixed(0)}%`}`,
    `whole model: predicted ${ms(w.predicted_us)} / measured kernels ${ms(w.measured_kernel_us)} = ratio ${fmt(w.ratio, 3)}`,
    `             predicted (all nodes) ${ms(w.predicted_all_us)} / wall${w.wall_profiled ? ' (profiled)' : ''} ${ms(w.wall_us)} = ratio ${fmt(w.ratio_vs_wall, 3)}`,
  );
  if (r.cpu_share !== null && r.cpu_share < 0.8) {
    lines.push(`warning: the process got ${(100 * r.cpu_share).toFixed(0)}% of a core per ORT thread while measuring; other load inflated the measured times`);
  }
  lines.push('top mispredicted op types (by |predicted - measured|):');
  lines.push(`  ${'op'.padEnd(22)} ${'class'.padEnd(14)} ${'nodes'.padStart(5)} ${'measured'.padStart(12)} ${'predicted'.padStart(12)} ${'ratio'.padStart(7)}`);
  for (const o of r.top_mispredicted_ops) {
    lines.push(`  ${o.op.padEnd(22)} ${String(o.op_class ?? '-').padEnd(14)} ${String(o.nodes).padStart(5)} ${ms(o.measured_us).padStart(12)} ${ms(o.predicted_us).padStart(12)} ${fmt(o.ratio).padStart(7)}`);
  }
  lines.push('top mispredicted nodes:');
  for (const n of r.top_mispredicted_nodes) {
    lines.push(`  ${n.name} (${n.op}): measured ${fmt(n.measured_us, 1)} µs, predicted ${fmt(n.predicted_us, 1)} µs, ratio ${fmt(n.ratio)}`);
  }
  return lines.join('\n');
}

/** A measurement JSON written by measure.mjs -o (or fidelity --save-measured). */
export function readMeasurement(path) {
  let m;
  try {
    m = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw badInput(`${path}: not a measurement JSON (${e.message})`);
  }
  if (!m || typeof m.nodes !== 'object' || typeof m.model !== 'string') throw badInput(`${path}: not a measurement JSON from measure.mjs`);
  return m;
}

/**
 * Several measurements of one model (taken at different times) as one: per
 * node the median over the sets of their means and medians, the smallest
 * min. Machine state drifts over minutes on a shared host; measuring in
 * rounds and merging evens that out.
 */
export function mergeMeasurements(list) {
  if (list.length === 1) return list[0];
  const [first] = list;
  for (const m of list) {
    if (m.model !== first.model) throw badInput(`cannot merge measurements of ${first.model} and ${m.model}`);
    if (m.threads !== first.threads) throw badInput(`cannot merge measurements with ${first.threads} and ${m.threads} threads`);
  }
  const med = (xs) => {
    const s = xs.filter((x) => x !== undefined && x !== null).sort((a, b) => a - b);
    if (s.length === 0) return null;
    const h = s.length >> 1;
    return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
  };
  const names = [...new Set(list.flatMap((m) => Object.keys(m.nodes)))];
  const nodes = {};
  for (const name of names) {
    const parts = list.map((m) => m.nodes[name]).filter(Boolean);
    nodes[name] = {
      ...parts[0],
      mean_us: med(parts.map((p) => p.mean_us)),
      median_us: med(parts.map((p) => p.median_us)),
      min_us: Math.min(...parts.map((p) => p.min_us)),
      samples: parts.reduce((a, p) => a + (p.samples ?? 0), 0),
      sets: parts.length,
    };
  }
  const mergeWall = (key) => {
    if (!list.every((m) => m[key])) return null;
    return { mean: med(list.map((m) => m[key].mean)), median: med(list.map((m) => m[key].median)), min: Math.min(...list.map((m) => m[key].min)) };
  };
  return {
    ...first,
    runs: list.reduce((a, m) => a + m.runs, 0),
    sets: list.length,
    cpu_share: Math.min(...list.map((m) => m.cpu_share ?? 1)),
    wall_us: mergeWall('wall_us'),
    wall_unprofiled_us: mergeWall('wall_unprofiled_us'),
    model_run_us: med(list.map((m) => m.model_run_us)),
    kernel_sum_us: Object.values(nodes).reduce((a, n) => a + n.mean_us, 0),
    nodes,
  };
}

/** Reads measurement files and merges those of the same model: [merged measurement], in first-seen model order. */
export function readMeasurements(paths) {
  const byModel = new Map();
  for (const p of paths) {
    const m = readMeasurement(p);
    if (!byModel.has(m.model)) byModel.set(m.model, []);
    byModel.get(m.model).push(m);
  }
  return [...byModel.values()].map(mergeMeasurements);
}
