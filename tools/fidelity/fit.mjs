// The calibration fit: the cost model's roofline
//
//   t_i = k_i · o + max(C_i / e_c, M_i / m_c)        (µs; c = node i's op class)
//
// with C_i the node's compute time at efficiency 1 (flops / peak of its dtype
// class), M_i its memory time at memory efficiency 1 (bytes / bandwidth) and
// k_i its kernel count, fitted to measured times y_i. Unknowns: the kernel
// overhead o (one for the device) and per op class the efficiency e_c and the
// memory efficiency m_c.
//
// 1. Weighted least squares in log space:
//      L = Σ w_i (ln t_i − ln y_i)² / Σ w_i + λ Σ_c [(ln e_c − ln e0_c)² + (ln m_c − ln m0_c)²]
//    with w_i = y_i^α (α = 0.5: every node counts — ranks — but long nodes
//    more — the whole-model sum) and a small ridge λ towards the base
//    preset's values e0, m0: it decides the directions the data cannot (a
//    class whose nodes are all compute-bound says nothing about m_c; a class
//    whose flops/bytes ratio is the same for all nodes cannot tell e_c from
//    m_c). For a given o the classes are independent: a coarse-then-fine
//    grid over (ln e_c, ln m_c) per class; o itself is a 1-D search on a log
//    grid, refined.
// 2. Per-class sum matching: each class's compute and memory rates are scaled
//    by one factor s_c (clamped to [1/4, 4]) so that the class's predicted
//    total equals its measured total — the log fit ranks nodes; this makes
//    the whole-model sums agree on the fitting set.
export const BOUNDS = { e: [1e-4, 8], m: [1e-3, 1e3], o: [0.02, 100] };

const ln = Math.log;

/** Roofline time of one node row {k, C, M, cls} under params {o, e: {cls}, m: {cls}}. */
export function predict(row, p) {
  const e = p.e[row.cls];
  const m = p.m[row.cls];
  return row.k * p.o + Math.max(row.C > 0 ? row.C / e : 0, row.M > 0 ? row.M / m : 0);
}

function classLoss(rows, o, le, lm, prior, lambda) {
  const e = Math.exp(le);
  const m = Math.exp(lm);
  let s = 0;
  for (const r of rows) {
    const t = r.k * o + Math.max(r.C > 0 ? r.C / e : 0, r.M > 0 ? r.M / m : 0);
    const d = ln(Math.max(t, 1e-9)) - r.ly;
    s += r.w * d * d;
  }
  return s + lambda * ((le - prior.le) ** 2 + (lm - prior.lm) ** 2);
}

function gridMin(f, [a0, a1], [b0, b1], step) {
  let best = { v: Infinity, a: a0, b: b0 };
  for (let a = a0; a <= a1 + 1e-12; a += step) {
    for (let b = b0; b <= b1 + 1e-12; b += step) {
      const v = f(a, b);
      if (v < best.v) best = { v, a, b };
    }
  }
  return best;
}

/** Best (ln e, ln m) of one class for a given overhead o. */
function fitClass(rows, o, prior, lambda, opts) {
  const f = (le, lm) => classLoss(rows, o, le, lm, prior, lambda);
  const E = [ln(BOUNDS.e[0]), ln(BOUNDS.e[1])];
  const M = [ln(BOUNDS.m[0]), ln(BOUNDS.m[1])];
  let best = gridMin(f, E, M, opts.coarse ?? 0.4);
  for (const step of [0.08, 0.016]) {
    const r = step * 6;
    best = gridMin(f, [Math.max(E[0], best.a - r), Math.min(E[1], best.a + r)], [Math.max(M[0], best.b - r), Math.min(M[1], best.b + r)], step);
  }
  return best;
}

/**
 * Fits {o, e: {cls}, m: {cls}} to rows [{cls, k, C, M, y}] (y > 0).
 * `prior`: {o, e: {cls}, m: {cls}} (the base preset). Options: alpha (weight
 * exponent, 0.5), lambda (ridge, 1e-3), sumMatch (true), fixedOverhead (a
 * number: do not fit o).
 * Returns {params, classes: {cls: {nodes, measured_us, predicted_us, scale}}, loss}.
 */
export function fitRoofline(rows, prior, opts = {}) {
  const alpha = opts.alpha ?? 0.5;
  const lambda = opts.lambda ?? 1e-3;
  const data = rows.filter((r) => r.y > 0 && r.k >= 0);
  const wsum = data.reduce((a, r) => a + r.y ** alpha, 0) || 1;
  const byClass = new Map();
  for (const r of data) {
    if (!byClass.has(r.cls)) byClass.set(r.cls, []);
    byClass.get(r.cls).push({ ...r, ly: ln(r.y), w: r.y ** alpha / wsum });
  }
  const priorOf = (c) => ({ le: ln(prior.e[c] ?? 1), lm: ln(prior.m[c] ?? 1) });

  const solve = (o) => {
    let total = 0;
    const e = {};
    const m = {};
    for (const [c, rs] of byClass) {
      const b = fitClass(rs, o, priorOf(c), lambda, opts);
      total += b.v;
      e[c] = Math.exp(b.a);
      m[c] = Math.exp(b.b);
    }
    return { v: total, o, e, m };
  };

  let best;
  if (opts.fixedOverhead !== undefined) best = solve(opts.fixedOverhead);
  else {
    const [lo, hi] = [ln(BOUNDS.o[0]), ln(BOUNDS.o[1])];
    best = { v: Infinity };
    for (let lo_ = lo; lo_ <= hi + 1e-12; lo_ += 0.25) {
      const s = solve(Math.exp(lo_));
      if (s.v < best.v) best = s;
    }
    // Golden-section refinement of ln o within ±0.25 of the grid optimum.
    let a = ln(best.o) - 0.25;
    let b = ln(best.o) + 0.25;
    const g = (Math.sqrt(5) - 1) / 2;
    let x1 = b - g * (b - a);
    let x2 = a + g * (b - a);
    let f1 = solve(Math.exp(x1));
    let f2 = solve(Math.exp(x2));
    for (let it = 0; it < 12; it++) {
      if (f1.v < f2.v) {
        b = x2; x2 = x1; f2 = f1; x1 = b - g * (b - a); f1 = solve(Math.exp(x1));
      } else {
        a = x1; x1 = x2; f1 = f2; x2 = a + g * (b - a); f2 = solve(Math.exp(x2));
      }
    }
    for (const f of [f1, f2]) if (f.v < best.v) best = f;
  }

  const params = { o: best.o, e: { ...prior.e, ...best.e }, m: { ...prior.m, ...best.m } };
  const classes = {};
  for (const [c, rs] of byClass) {
    const meas = rs.reduce((a, r) => a + r.y, 0);
    const over = rs.reduce((a, r) => a + r.k * params.o, 0);
    const roof = rs.reduce((a, r) => a + predict(r, params) - r.k * params.o, 0);
    let scale = 1;
    if ((opts.sumMatch ?? true) && roof > 0 && meas - over > 0) {
      scale = Math.min(4, Math.max(0.25, roof / (meas - over)));
      params.e[c] = clamp(params.e[c] * scale, BOUNDS.e);
      params.m[c] = clamp(params.m[c] * scale, BOUNDS.m);
    }
    classes[c] = { nodes: rs.length, measured_us: meas, predicted_us: rs.reduce((a, r) => a + predict(r, params), 0), scale };
  }
  return { params, classes, loss: best.v, fitted: [...byClass.keys()] };
}

const clamp = (v, [lo, hi]) => Math.min(hi, Math.max(lo, v));
