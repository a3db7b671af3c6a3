// Output comparison. Floating-point outputs pass when every element satisfies
//   |a - b| <= atol + rtol * |b|      (a: actual, b: reference)
// with NaN == NaN and equal infinities accepted. Reported errors:
//   max_abs = max |a - b|
//   max_rel = max |a - b| / max(|b|, atol)   (floored so near-zero references
//                                             do not report huge relative errors)
// float16 outputs use at least 1e-3 for both tolerances (half precision's
// epsilon) unless tolerances were given explicitly. compareOutputs may instead
// take a per-output choice (opts.tolFor, from precision.mjs: a network that
// computes in float16 gets a tolerance from float16's roundoff and its depth).
// Integer, bool and string outputs must match exactly. Types and shapes must
// match exactly.
import { dtypeFromName, halfToFloat } from './dtypes.mjs';

/** Compares one tensor with its reference. Returns a record; `ok` says whether it passes. */
export function compareTensor(name, actual, expected, { atol = 1e-4, rtol = 1e-4, halfTolerance = 1e-3 } = {}) {
  const rec = { name, type: expected.type, shape: expected.dims, count: 0, mismatches: 0, maxAbs: 0, maxRel: 0, ok: true, reason: '' };
  const fail = (reason) => Object.assign(rec, { ok: false, reason, maxAbs: null, maxRel: null });
  if (!actual) return fail('missing from the deployment outputs');
  if (actual.type !== expected.type) return fail(`element type ${actual.type}, expected ${expected.type}`);
  const same = actual.dims.length === expected.dims.length && actual.dims.every((d, i) => d === expected.dims[i]);
  if (!same) return fail(`shape [${actual.dims}], expected [${expected.dims}]`);
  const dt = dtypeFromName(expected.type);
  const a = actual.data;
  const b = expected.data;
  rec.count = b.length;
  if (dt.kind === 'float' || dt.kind === 'half') {
    const half = dt.kind === 'half';
    const at = half ? Math.max(atol, halfTolerance) : atol;
    const rt = half ? Math.max(rtol, halfTolerance) : rtol;
    for (let i = 0; i < b.length; i++) {
      const x = half ? halfToFloat(a[i]) : a[i];
      const y = half ? halfToFloat(b[i]) : b[i];
      if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
      const diff = Math.abs(x - y);
      const bad = !Number.isFinite(x) || !Number.isFinite(y) || !(diff <= at + rt * Math.abs(y));
      const d = Number.isNaN(diff) ? Infinity : diff;
      rec.maxAbs = Math.max(rec.maxAbs, d);
      rec.maxRel = Math.max(rec.maxRel, d / Math.max(Math.abs(y), at));
      if (bad) rec.mismatches++;
    }
    rec.atol = at;
    rec.rtol = rt;
  } else {
    for (let i = 0; i < b.length; i++) {
      if (a[i] === b[i]) continue;
      rec.mismatches++;
      if (dt.kind !== 'string') {
        const d = Math.abs(Number(a[i]) - Number(b[i]));
        rec.maxAbs = Math.max(rec.maxAbs, d);
        rec.maxRel = Math.max(rec.maxRel, d / Math.max(Math.abs(Number(b[i])), 1));
      }
    }
  }
  if (rec.mismatches) markFailed(rec, `${rec.mismatches} of ${rec.count} elements differ beyond tolerance`);
  return rec;
}

function markFailed(rec, reason) {
  rec.ok = false;
  rec.reason = reason;
}

/**
 * Compares every reference output (in the given name order). Returns { ok,
 * results, maxAbs, maxRel }. opts: { atol, rtol, halfTolerance } for every
 * output, or opts.tolFor(name, type) -> { atol, rtol, precision, why } | null
 * choosing per output (null: opts' own); each float record then carries
 * precision and why.
 */
export function compareOutputs(actualByName, expectedByName, names, opts = {}) {
  const results = names.map((n) => {
    const t = opts.tolFor && expectedByName[n] ? opts.tolFor(n, expectedByName[n].type) : null;
    if (!t) return compareTensor(n, actualByName[n], expectedByName[n], opts);
    const rec = compareTensor(n, actualByName[n], expectedByName[n], { atol: t.atol, rtol: t.rtol, halfTolerance: 0 });
    return Object.assign(rec, { atol: t.atol, rtol: t.rtol, precision: t.precision, why: t.why });
  });
  const finite = (k) => results.map((r) => r[k]).filter((v) => typeof v === 'number');
  return {
    ok: results.every((r) => r.ok),
    results,
    maxAbs: Math.max(0, ...finite('maxAbs')),
    maxRel: Math.max(0, ...finite('maxRel')),
  };
}

const fmt = (v) => (v === null || v === undefined ? '-' : v === 0 ? '0' : v.toExponential(2));
const tolStr = (v) => String(Number(v.toPrecision(3)));

/**
 * The distinct tolerances the records of a comparison used that a precision
 * choice made: [{ precision, atol, rtol, why, outputs: [name] }].
 */
export function toleranceGroups(results) {
  const groups = new Map();
  for (const r of results) {
    if (!r.precision) continue;
    const key = `${r.precision}|${r.atol}|${r.rtol}|${r.why}`;
    if (!groups.has(key)) groups.set(key, { precision: r.precision, atol: r.atol, rtol: r.rtol, why: r.why, outputs: [] });
    groups.get(key).outputs.push(r.name);
  }
  return [...groups.values()];
}

/**
 * Human-readable lines for a comparison against `label` ('original model',
 * 'expected outputs'): one per output, one per tolerance a precision choice
 * made ("float16 compute: atol … rtol … (why)"), then PASS/FAIL.
 */
export function formatComparison(cmp, label, { atol, rtol }) {
  const w = Math.max(...cmp.results.map((r) => r.name.length), 4);
  const lines = cmp.results.map((r) =>
    `  ${r.name.padEnd(w)}  ${String(r.type).padEnd(7)} [${r.shape}]  max_abs ${fmt(r.maxAbs)}  max_rel ${fmt(r.maxRel)}  ${r.ok ? 'ok' : 'MISMATCH: ' + r.reason}`,
  );
  const groups = toleranceGroups(cmp.results);
  const floats = cmp.results.filter((r) => r.atol !== undefined);
  const several = groups.length > 1 || (groups.length === 1 && groups[0].outputs.length < floats.length);
  for (const g of groups) {
    const what = g.precision === 'given' ? 'given tolerance' : `${g.precision} compute`;
    const whose = several ? ` for ${g.outputs.join(', ')}` : '';
    lines.push(`${what}${whose}: atol ${tolStr(g.atol)} rtol ${tolStr(g.rtol)} (${g.why})`);
  }
  // One tolerance for all float outputs: name it in the verdict; several: see the lines above.
  const one = !several && groups.length === 1 ? groups[0] : null;
  const [a, r] = one ? [tolStr(one.atol), tolStr(one.rtol)] : [atol, rtol];
  const within = several ? 'their tolerances above' : `atol ${a} + rtol ${r}`;
  const bad = cmp.results.filter((x) => !x.ok).length;
  lines.push(
    cmp.ok
      ? `PASS vs ${label}: ${cmp.results.length} output${cmp.results.length === 1 ? "" : "s"} within ${within} (max abs ${fmt(cmp.maxAbs)}, max rel ${fmt(cmp.maxRel)})`
      : `FAIL vs ${label}: ${bad} of ${cmp.results.length} outputs mismatch (${several ? 'their tolerances above' : `atol ${a}, rtol ${r}`}; max abs ${fmt(cmp.maxAbs)}, max rel ${fmt(cmp.maxRel)})`,
  );
  return lines;
}

/**
 * Folds the comparisons of several micro-batches (cmps[m], same output names)
 * into one of the same shape: per output the worst record (a failing one
 * first, else the largest max_abs), its reason naming the micro-batch, plus
 * failedMicrobatches: [m].
 */
export function combineComparisons(cmps) {
  if (cmps.length === 1) return { ...cmps[0], failedMicrobatches: cmps[0].ok ? [] : [0] };
  const results = cmps[0].results.map((_, i) => {
    let worst = null;
    cmps.forEach((c, m) => {
      const r = c.results[i];
      const worse = !worst || (worst.ok && !r.ok) || (worst.ok === r.ok && (r.maxAbs ?? Infinity) > (worst.r.maxAbs ?? Infinity));
      if (worse) worst = { r, m, ok: r.ok };
    });
    const bad = cmps.filter((c) => !c.results[i].ok).length;
    const r = { ...worst.r, microbatch: worst.m };
    if (!r.ok) r.reason = `micro-batch ${worst.m}: ${r.reason}${bad > 1 ? ` (and ${bad - 1} more micro-batch${bad > 2 ? 'es' : ''})` : ''}`;
    return r;
  });
  const finite = (k) => results.map((r) => r[k]).filter((v) => typeof v === 'number');
  return {
    ok: cmps.every((c) => c.ok),
    results,
    maxAbs: Math.max(0, ...finite('maxAbs')),
    maxRel: Math.max(0, ...finite('maxRel')),
    failedMicrobatches: cmps.flatMap((c, m) => (c.ok ? [] : [m])),
  };
}
