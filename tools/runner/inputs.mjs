// Graph inputs for a run: random tensors from a seeded PRNG (mulberry32) and
// the model's input metadata, or tensors read from a directory of
// input_N.pb files (ONNX test data layout); also reads output_N.pb sets.
//
// Random values: float types uniform in [-1, 1); integer types uniform in
// [lo, hi) (default [0, 10): safe as indices for Gather/embedding inputs),
// clamped to the type's range; bool 0/1 with p = 1/2. Inputs are generated in
// the order given (the original model's input order), one PRNG stream, so a
// seed always gives the same values. Symbolic dims take --dim NAME=V, else 1.
//
// --input-value NAME=V[,V...] gives one input exact contents (a sample rate, a
// length: inputs that steer control flow, which onnx-autopar may have bound
// and inlined an If for). Its random values are still drawn and then
// replaced, so every other input keeps the values the seed gives it without
// the flag.
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

/**
 * Parses --input-value flags ("NAME=V[,V...]") into {name: [string]}; the
 * values are checked against the input's element type by valueTensor.
 */
export function parseInputValues(flags = []) {
  const out = {};
  for (const text of flags) {
    const eq = text.indexOf('=');
    const name = eq > 0 ? text.slice(0, eq) : '';
    const values = eq > 0 ? text.slice(eq + 1).split(',') : [];
    if (!name || values.some((v) => v === '')) throw badInput(`--input-value: expected NAME=V[,V...], got '${text}'`);
    if (name in out) throw badInput(`--input-value: '${name}' given twice`);
    out[name] = values;
  }
  return out;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** One --input-value element as a number of the input's kind (true/false are 1/0); throws badInput. */
function parseValue(text, dt, name) {
  const bad = (why) => badInput(`--input-value ${name}: '${text}' ${why}`);
  if (text === 'true' || text === 'false') return text === 'true' ? 1 : 0;
  if (!NUMBER.test(text)) throw bad(`is not a number${dt.kind === 'bool' ? ' (bool input: true/false or 1/0)' : ''}`);
  const v = Number(text);
  if (!Number.isFinite(v)) throw bad('is not a finite number');
  if (dt.kind === 'bool') {
    if (v !== 0 && v !== 1) throw bad('is not a bool (true/false or 1/0)');
  } else if (dt.kind === 'int' || dt.kind === 'bigint') {
    if (!Number.isInteger(v)) throw bad(`is not an integer (input is ${dt.name})`);
    if (dt.kind === 'bigint') {
      // Exact past 2^53 when written as digits.
      const b = /^[+-]?\d+$/.test(text) ? BigInt(text) : BigInt(v);
      const [lo, hi] = dt.name === 'int64' ? [-(2n ** 63n), 2n ** 63n] : [0n, 2n ** 64n];
      if (b < lo || b >= hi) throw bad(`is out of ${dt.name}'s range`);
      return b;
    }
    const [lo, hi] = INT_LIMITS[dt.name];
    if (v < lo || v >= hi) throw bad(`is out of ${dt.name}'s range`);
  }
  return v;
}

/**
 * The tensor an --input-value gives an input spec {name, type, shape}: its
 * declared shape (symbolic dims from `dimValues`; one dim neither declares nor
 * --dim gives is read off the element count, more are 1) holding `values`
 * row-major. A wrong element count, a value that is not a number of the
 * input's type, or a string input is a bad-input error.
 */
export function valueTensor(spec, values, { dimValues = {} } = {}) {
  let dt;
  try {
    dt = dtypeFromName(spec.type);
  } catch (e) {
    throw badInput(`--input-value ${spec.name}: ${e.message}`);
  }
  if (dt.kind === 'string') throw badInput(`--input-value ${spec.name}: a string input takes no numbers (use --inputs)`);
  if (spec.isTensor === false) throw badInput(`--input-value ${spec.name}: not a tensor input`);
  let dims;
  if (!Array.isArray(spec.shape)) {
    dims = values.length === 1 ? [] : [values.length];
  } else {
    const unknown = [];
    dims = spec.shape.map((d, i) => {
      if (typeof d === 'number' && d >= 0) return d;
      const key = typeof d === 'string' && d ? d : `${spec.name}:${i}`;
      if (key in dimValues) return dimValues[key];
      unknown.push(i);
      return 1;
    });
    if (unknown.length === 1) {
      const rest = numel(dims);
      if (rest > 0 && values.length % rest === 0) dims[unknown[0]] = values.length / rest;
    }
  }
  const n = numel(dims);
  if (values.length !== n) {
    throw badInput(`--input-value ${spec.name}: ${values.length} value${values.length === 1 ? '' : 's'} for shape [${dims}] (${n} element${n === 1 ? '' : 's'}, row-major)`);
  }
  const nums = values.map((v) => parseValue(v, dt, spec.name));
  let data;
  if (dt.kind === 'half') data = Uint16Array.from(nums, floatToHalf);
  else if (dt.kind === 'bigint') data = dt.Array.from(nums, (v) => BigInt(v)); // true/false came as 1/0
  else data = dt.Array.from(nums);
  return { name: spec.name, type: dt.name, dims, data };
}

/** Throws a bad-input error for an --input-value name that is not one of `names` (the inputs of `what`). */
export function checkInputValueNames(inputValues, names, what) {
  for (const name of Object.keys(inputValues)) {
    if (!names.includes(name)) throw badInput(`--input-value: '${name}' is not an input of ${what} (its inputs: ${names.join(', ') || 'none'})`);
  }
}

/** The run report's "inputs" for seeded random inputs: seed, integer range and any --input-value. */
export function randomInputsReport({ seed, intRange, inputValues = {} }) {
  const report = { source: 'random', seed, int_range: intRange };
  if (Object.keys(inputValues).length) report.values = inputValues;
  return report;
}

/**
 * Random inputs for `specs` from `seed` (randomInputs), with the inputs that
 * `inputValues` ({name: [string]}, from parseInputValues) names replaced by
 * those values. Every name must be one of `specs` or of `unread` (inputs no
 * stage reads, which need no value).
 */
export function seededInputs(specs, seed, { inputValues = {}, unread = [], what = 'the model', ...opts } = {}) {
  checkInputValueNames(inputValues, [...new Set([...specs.map((s) => s.name), ...unread])], what);
  const rng = mulberry32(seed);
  const notes = [];
  const tensors = {};
  for (const spec of specs) {
    if (spec.unread) continue; // no stage reads it: no value is needed
    if (!(spec.name in inputValues)) {
      tensors[spec.name] = randomTensor(rng, spec, { ...opts, notes });
      continue;
    }
    // Draw (and drop) its random values so the next inputs' stay as they were.
    try {
      randomTensor(rng, spec, { ...opts, notes: [] });
    } catch {}
    tensors[spec.name] = valueTensor(spec, inputValues[spec.name], opts);
  }
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
    if (!t && spec.unread) continue;
    if (!t) throw badInput(`no value for input '${spec.name}'`);
    if (spec.type && t.type !== spec.type) throw badInput(`input '${spec.name}': file has ${t.type}, model wants ${spec.type}`);
    const s = spec.shape;
    if (Array.isArray(s) && (s.length !== t.dims.length || s.some((d, i) => typeof d === 'number' && d >= 0 && d !== t.dims[i]))) {
      throw badInput(`input '${spec.name}': file has shape [${t.dims}], model wants [${s}]`);
    }
  }
}
