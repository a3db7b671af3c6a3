// Which precision a network computes its outputs in, and the tolerance a
// split-against-unsplit check should use for each output (compare.mjs).
//
// Precision, per output:
//  - a float16 output is computed in float16;
//  - a float32/float64 output is computed in half precision (float16 or
//    bfloat16) when the model does, else in its own type. The model computes
//    in half precision when most of its floating-point initializers, by bytes,
//    are float16 or bfloat16 (the main graph's initializers; Constant nodes
//    and subgraphs are not counted). A model with no floating-point
//    initializer at all computes in half precision when it has a Cast to
//    float16 or bfloat16. This is a rule of thumb: a mixed-precision model
//    that keeps float32 master weights and casts them to float16 is judged
//    float32; give --atol/--rtol for such a model.
//
// Tolerance for half-precision compute (halfTolerance below), with u the
// unit roundoff of the half type (float16: 2^-11 ≈ 4.9e-4; bfloat16: 2^-8)
// and L the number of nodes on the longest path from the graph's inputs to
// the output:
//
//     atol = rtol = min(cap, 6 · u · sqrt(L))      cap: 0.05 (float16), 0.1 (bfloat16)
//
// Why: a split changes which ops ORT fuses and in which order it accumulates,
// so an op's result near a cut may round to a neighbouring half-precision
// value: a relative difference of up to one ulp (2u) of either sign, about
// 1.15u standard deviation if uniform. Through a network whose layers keep
// activations of magnitude ~1 (normalisations, bounded activations) these
// differences add up like a random walk along the L ops of the longest path:
// standard deviation ≈ 1.15 · u · sqrt(L), relative. The check takes the worst
// of up to ~10^6 elements, about 5 standard deviations of a Gaussian, hence
// 6 · u · sqrt(L) (≈ 5 × 1.15). The same value serves as atol because values
// near zero carry the absolute error of the magnitude-1 values they were
// computed from. The cap keeps the check able to tell "rounded differently"
// from "computed something else" however deep the network: a wrong weight or
// a swapped input changes outputs of magnitude 1 by O(1).
// float16 examples: L = 2 → 4.1e-3 (atol + rtol·1 = 8.3e-3: a difference of
// 8e-3 on an output of magnitude 1 passes at every depth from 2 on);
// L = 10 → 9.3e-3; L = 100 → 2.9e-2; L ≥ 292 → the cap, 0.05.
//
// Float32/float64 compute keeps the caller's atol/rtol (1e-4 by default).
import { readFileSync } from 'node:fs';
import { Reader } from './tensor_pb.mjs';

/** Unit roundoff and the most the tolerance grows to, per half type (see the header). */
export const HALF_TYPES = {
  float16: { u: 2 ** -11, cap: 0.05 },
  bfloat16: { u: 2 ** -8, cap: 0.1 },
};

/** atol = rtol for `type` ('float16' | 'bfloat16') compute through `depth` nodes (see the header). */
export function halfTolerance(depth, type = 'float16') {
  const { u, cap } = HALF_TYPES[type];
  const t = Math.min(cap, 6 * u * Math.sqrt(Math.max(1, depth)));
  return { atol: t, rtol: t };
}

// Field numbers of onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_OP_TYPE = 4;
const NODE_ATTRIBUTE = 5;
const ATTRIBUTE_NAME = 1;
const ATTRIBUTE_I = 3;
const TENSOR_DIMS = 1;
const TENSOR_DATA_TYPE = 2;
const LENGTH_DELIMITED = 2;

// ONNX data_type -> [kind, bytes per element] for the floating-point types.
const FLOAT_TYPES = { 1: ['float32', 4], 10: ['float16', 2], 11: ['float64', 8], 16: ['bfloat16', 2] };
const HALF = new Set(['float16', 'bfloat16']);

const utf8 = new TextDecoder('utf-8');

function eachField(bytes, fn) {
  const r = new Reader(bytes);
  while (!r.done()) {
    const key = Number(r.varint());
    if (!fn(key >>> 3, key & 7, r)) r.skip(key & 7);
  }
}

/** {type, bytes} of a TensorProto from its dims and data_type (data not read). */
function tensorSize(bytes) {
  let code = 0;
  let n = 1;
  eachField(bytes, (field, wire, r) => {
    if (field === TENSOR_DATA_TYPE && wire === 0) code = Number(r.varint());
    else if (field === TENSOR_DIMS && wire === 0) n *= Number(r.varint());
    else if (field === TENSOR_DIMS && wire === LENGTH_DELIMITED) {
      const sub = new Reader(r.bytes());
      while (!sub.done()) n *= Number(sub.varint());
    } else return false;
    return true;
  });
  const t = FLOAT_TYPES[code];
  return t ? { type: t[0], bytes: n * t[1] } : null;
}

function decodeNode(bytes) {
  const node = { op: '', inputs: [], outputs: [], to: null };
  eachField(bytes, (field, wire, r) => {
    if (wire !== LENGTH_DELIMITED) return false;
    if (field === NODE_INPUT) node.inputs.push(utf8.decode(r.bytes()));
    else if (field === NODE_OUTPUT) node.outputs.push(utf8.decode(r.bytes()));
    else if (field === NODE_OP_TYPE) node.op = utf8.decode(r.bytes());
    else if (field === NODE_ATTRIBUTE) {
      let name = '';
      let i = null;
      eachField(r.bytes(), (f, w, ar) => {
        if (f === ATTRIBUTE_NAME && w === LENGTH_DELIMITED) name = utf8.decode(ar.bytes());
        else if (f === ATTRIBUTE_I && w === 0) i = Number(BigInt.asIntN(64, ar.varint()));
        else return false;
        return true;
      });
      if (name === 'to') node.to = i;
    } else return false;
    return true;
  });
  return node;
}

/**
 * What precision analysis needs of one model file's main graph:
 * { initBytes: {float32, float16, float64, bfloat16}, castsToHalf, nodes: [{op, inputs, outputs, to}] }.
 */
export function scanModel(bytes) {
  const initBytes = { float32: 0, float16: 0, float64: 0, bfloat16: 0 };
  const nodes = [];
  let graph = null;
  eachField(bytes, (field, wire, r) => {
    if (field !== MODEL_GRAPH || wire !== LENGTH_DELIMITED) return false;
    graph = r.bytes();
    return true;
  });
  if (!graph) throw new Error('not an ONNX model (no graph)');
  eachField(graph, (field, wire, r) => {
    if (wire !== LENGTH_DELIMITED) return false;
    if (field === GRAPH_INITIALIZER) {
      const t = tensorSize(r.bytes());
      if (t) initBytes[t.type] += t.bytes;
    } else if (field === GRAPH_NODE) {
      nodes.push(decodeNode(r.bytes()));
    } else return false;
    return true;
  });
  const castsToHalf = nodes.filter((n) => n.op === 'Cast' && (n.to === 10 || n.to === 16)).length;
  return { initBytes, castsToHalf, nodes };
}

/**
 * Number of nodes on the longest path ending at each tensor (graph inputs and
 * initializers: 0), over the nodes of all `scans` together: the stage models
 * of a deployment keep the original tensor names, so their union is the
 * original graph. Returns { depthOf(tensor), maxDepth }.
 */
function tensorDepths(scans) {
  const nodes = scans.flatMap((s) => s.nodes);
  const producer = new Map();
  for (const n of nodes) for (const o of n.outputs) if (o) producer.set(o, n);
  // Kahn's order: a node's depth is 1 + the deepest of its produced inputs.
  const waiting = new Map(nodes.map((n) => [n, new Set(n.inputs.filter((i) => producer.has(i) && producer.get(i) !== n))]));
  const readers = new Map();
  for (const n of nodes) for (const i of waiting.get(n)) readers.set(i, [...(readers.get(i) ?? []), n]);
  const depth = new Map();
  const ready = nodes.filter((n) => waiting.get(n).size === 0);
  while (ready.length) {
    const n = ready.pop();
    const d = 1 + Math.max(0, ...n.inputs.map((i) => depth.get(i) ?? 0));
    for (const o of n.outputs) {
      if (!o || producer.get(o) !== n) continue;
      depth.set(o, d);
      for (const r of readers.get(o) ?? []) {
        const w = waiting.get(r);
        if (w.delete(o) && w.size === 0) ready.push(r);
      }
    }
  }
  // Tensors left without a depth sit on a cycle (not a valid ONNX graph): 0.
  return { depthOf: (t) => depth.get(t) ?? 0, maxDepth: Math.max(0, ...depth.values()) };
}

/**
 * The compute precision of the network held by the model files `paths` (one
 * original model, or a deployment's stage models): { half: 'float16' |
 * 'bfloat16' | null, halfBytes, floatBytes, castsToHalf, why, depthOf(tensor),
 * maxDepth }.
 */
export function modelPrecision(paths) {
  const scans = paths.map((p) => {
    try {
      return scanModel(readFileSync(p));
    } catch (e) {
      throw new Error(`${p}: ${e.message}`);
    }
  });
  const sum = (k) => scans.reduce((a, s) => a + s.initBytes[k], 0);
  const f16 = sum('float16');
  const bf16 = sum('bfloat16');
  const halfBytes = f16 + bf16;
  const floatBytes = sum('float32') + sum('float64');
  const castsToHalf = scans.reduce((a, s) => a + s.castsToHalf, 0);
  let half = null;
  let why;
  const pct = (x) => `${Math.round((100 * x) / (halfBytes + floatBytes))}%`;
  if (halfBytes + floatBytes > 0) {
    if (halfBytes > floatBytes) half = bf16 > f16 ? 'bfloat16' : 'float16';
    why = `${pct(halfBytes)} of floating-point initializer bytes are float16/bfloat16`;
  } else if (castsToHalf > 0) {
    half = 'float16';
    why = `no floating-point initializers; ${castsToHalf} Cast${castsToHalf === 1 ? '' : 's'} to half precision`;
  } else {
    why = 'no floating-point initializers and no Cast to half precision';
  }
  const d = tensorDepths(scans);
  return { half, halfBytes, floatBytes, castsToHalf, why, depthOf: d.depthOf, maxDepth: d.maxDepth };
}

/**
 * Per-output tolerance: tolFor(name, type) -> { atol, rtol, precision, why }.
 * `base` = { atol, rtol, explicit } (explicit: --atol/--rtol given, used for
 * every output); `prec` = modelPrecision(...) or null (unknown model: float16
 * outputs then use at least 1e-3, the runner's older rule).
 */
export function toleranceChooser(base, prec) {
  return (name, type) => {
    const halfOut = type === 'float16';
    const floatOut = type === 'float32' || type === 'float64';
    if (!halfOut && !floatOut) return null;
    if (base.explicit) return { atol: base.atol, rtol: base.rtol, precision: 'given', why: 'given by --atol/--rtol' };
    const compute = halfOut ? (prec?.half ?? 'float16') : prec?.half ?? null;
    if (!compute) return { atol: base.atol, rtol: base.rtol, precision: type, why: prec ? prec.why : 'default' };
    if (!prec) return { atol: Math.max(base.atol, 1e-3), rtol: Math.max(base.rtol, 1e-3), precision: 'float16', why: 'float16 output' };
    let depth = prec.depthOf(name);
    if (!depth) depth = prec.maxDepth;
    const t = halfTolerance(depth, compute);
    const reason = halfOut && !prec.half ? 'float16 output' : prec.why;
    return {
      ...t, precision: compute, depth,
      why: `${reason}; ${depth} node${depth === 1 ? '' : 's'} on the longest path: min(${HALF_TYPES[compute].cap}, 6·${compute === 'float16' ? '2^-11' : '2^-8'}·sqrt(${depth}))`,
    };
  };
}

/**
 * The comparison options of a check (compare.mjs's compareOutputs) for the
 * runner's parsed options `o` ({ atol, rtol, halfTolerance, explicitTol }) and
 * the model files that hold the network (none: float16 outputs keep the older
 * at-least-1e-3 rule). A model that cannot be read for this adds a note to
 * `text` and falls back to that rule.
 */
export function checkTolerance(o, paths, text = []) {
  const base = { atol: o.atol, rtol: o.rtol, halfTolerance: o.halfTolerance };
  if (o.explicitTol) return { ...base, tolFor: toleranceChooser({ atol: o.atol, rtol: o.rtol, explicit: true }, null) };
  if (!paths.length) return base;
  let prec;
  try {
    prec = modelPrecision(paths);
  } catch (e) {
    text.push(`note: cannot tell the network's precision (${e.message}); float32 tolerances, float16 outputs at least 1e-3`);
    return base;
  }
  return { ...base, tolFor: toleranceChooser({ atol: o.atol, rtol: o.rtol, explicit: false }, prec) };
}
