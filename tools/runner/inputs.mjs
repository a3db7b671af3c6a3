// Graph inputs for a run: random tensors from a seeded PRNG (mulberry32) and
// the model's input metadata, or tensors read from a directory of
// input_N.pb files (ONNX test data layout); also reads output_N.pb sets.
//
// Random values: float types uniform in [-1, 1); integer types uniform in
// [lo, hi) (default [0, 10): safe as indices for Gather/embedding inputs),
// clamped to the type's range; bool 0/1 with p = 1/2. Inputs are generated in
// the order given (the original model's input order), one PRNG stream, so a
// seed always gives the same values. Symbolic dims take --dim NAME=V, else 1.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { badInput } from './errors.mjs';
import { dtypeFromName, floatToHalf, numel } from './dtypes.mjs';
import { readTensorFile } from './tensor_pb.mjs';

/** mulberry32: tiny, fast, well-distributed 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INT_LIMITS = {
  int8: [-128, 128], uint8: [0, 256], int16: [-32768, 32768], uint16: [0, 65536],
  int32: [-(2 ** 31), 2 ** 31], uint32: [0, 2 ** 32], int64: [-(2 ** 53), 2 ** 53], uint64: [0, 2 ** 53],
};

/** Static dims for a metadata shape; symbolic or unknown dims come from `dimValues` or default to 1. */
export function concreteShape(spec, dimValues = {}, notes = []) {
  if (!Array.isArray(spec.shape)) throw badInput(`input '${spec.name}' has no shape in the model; cannot make random data (use --inputs)`);
  return spec.shape.map((d, i) => {
    if (typeof d === 'number' && d >= 0) return d;
    const key = typeof d === 'string' && d ? d : `${spec.name}:${i}`;
    if (key in dimValues) return dimValues[key];
    notes.push(`input '${spec.name}' dim ${i} ('${key}') is not static; using 1 (set it with --dim ${key}=N)`);
    return 1;
  });
}

/** One random tensor for an input spec {name, type, shape}. */
export function randomTensor(rng, spec, { intRange = [0, 10], dimValues = {}, notes = [] } = {}) {
  if (!spec.isTensor && spec.isTensor !== undefined) throw badInput(`input '${spec.name}' is not a tensor (sequence/map inputs need --inputs)`);
  let dt;
  try {
    dt = dtypeFromName(spec.type);
  } catch (e) {
    throw badInput(`input '${spec.name}': ${e.message}`);
  }
  const dims = concreteShape(spec, dimValues, notes);
  const n = numel(dims);
  let data;
  if (dt.kind === 'float') {
    data = new dt.Array(n);
    for (let i = 0; i < n; i++) data[i] = rng() * 2 - 1;
  } else if (dt.kind === 'half') {
    data = new Uint16Array(n);
    for (let i = 0; i < n; i++) data[i] = floatToHalf(rng() * 2 - 1);
  } else if (dt.kind === 'bool') {
    data = new Uint8Array(n);
    for (let i = 0; i < n; i++) data[i] = rng() < 0.5 ? 1 : 0;
  } else if (dt.kind === 'string') {
    data = Array.from({ length: n }, () => `s${Math.floor(rng() * 10)}`);
  } else {
    const [tlo, thi] = INT_LIMITS[dt.name];
    const lo = Math.max(intRange[0], tlo);
    const hi = Math.min(intRange[1], thi);
    if (hi <= lo) throw badInput(`--int-range ${intRange} is empty for ${dt.name} input '${spec.name}'`);
    data = new dt.Array(n);
    for (let i = 0; i < n; i++) {
      const v = lo + Math.floor(rng() * (hi - lo));
      data[i] = dt.kind === 'bigint' ? BigInt(v) : v;
    }
  }
  return { name: spec.name, type: dt.name, dims, data };
}

/** Random tensors for all specs, in order. Returns { tensors: {name: tensor}, notes: [string] }. */
export function randomInputs(specs, seed, opts = {}) {
  const rng = mulberry32(seed);
  const notes = [];
  const tensors = {};
  for (const spec of specs) tensors[spec.name] = randomTensor(rng, spec, { ...opts, notes });
  return { tensors, notes };
}

/** Sorted [index, path] pairs of PREFIX_N.pb files in dir. */
function pbFiles(dir, prefix) {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw badInput(`${dir}: no such directory`);
  const re = new RegExp(`^${prefix}_(\\d+)\\.pb$`);
  return readdirSync(dir)
    .map((f) => [re.exec(f), f])
    .filter(([m]) => m)
    .map(([m, f]) => [Number(m[1]), join(dir, f)])
    .sort((a, b) => a[0] - b[0]);
}

/**
 * Reads PREFIX_N.pb files and assigns them to `names`: by the tensor's own name
 * when it is one of `names`, else by position N. Returns {name: tensor}.
 */
export function readTensorDir(dir, prefix, names) {
  const files = pbFiles(dir, prefix);
  if (files.length === 0 && names.length > 0) throw badInput(`${dir}: no ${prefix}_N.pb files`);
  const out = {};
  for (const [n, path] of files) {
    let t;
    try {
      t = readTensorFile(path);
    } catch (e) {
      throw badInput(e.message);
    }
    const name = names.includes(t.name) ? t.name : names[n];
    if (name === undefined) throw badInput(`${path}: model has only ${names.length} ${prefix}s`);
    if (out[name]) throw badInput(`${path}: a second value for '${name}'`);
    out[name] = { ...t, name };
  }
  return out;
}

/** Checks .pb inputs against the input specs (element type; static dims). */
export function checkInputs(tensors, specs) {
  for (const spec of specs) {
    const t = tensors[spec.name];
    if (!t) throw badInput(`no value for input '${spec.name}'`);
    if (spec.type && t.type !== spec.type) throw badInput(`input '${spec.name}': file has ${t.type}, model wants ${spec.type}`);
    const s = spec.shape;
    if (Array.isArray(s) && (s.length !== t.dims.length || s.some((d, i) => typeof d === 'number' && d >= 0 && d !== t.dims[i]))) {
      throw badInput(`input '${spec.name}': file has shape [${t.dims}], model wants [${s}]`);
    }
  }
}
