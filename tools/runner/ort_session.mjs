// Thin layer over onnxruntime-node: loading the package with a helpful error,
// creating sessions with the runner's options, and converting between ORT
// tensors and the runner's plain tensors ({type, dims, data}), which can be
// posted between worker threads.
import { internal } from './errors.mjs';

let ortModule = null;

/**
 * Imports onnxruntime-node once; a missing install is a clear error. ORT's own
 * log goes quiet (fatal only) unless verbose: its errors reach us as exceptions.
 */
export async function loadOrt({ verbose = false } = {}) {
  if (ortModule) return ortModule;
  try {
    ortModule = await import('onnxruntime-node');
  } catch (e) {
    throw internal(
      `cannot load onnxruntime-node (${e.code ?? e.message}); install it with ` +
        '(cd tools/runner && npm ci --onnxruntime-node-install=skip)',
    );
  }
  ortModule.env.logLevel = verbose ? 'warning' : 'fatal';
  return ortModule;
}

/**
 * Session options from runner options:
 *   profilePrefix: enable ORT profiling, files named PREFIX_<timestamp>.json
 *   threads: intra-op threads per session (0 = ORT default)
 *   verbose: let ORT print warnings
 */
export function sessionOptions({ profilePrefix, threads, verbose } = {}) {
  const o = { logSeverityLevel: verbose ? 2 : 4 };
  if (threads) o.intraOpNumThreads = threads;
  if (profilePrefix) {
    o.enableProfiling = true;
    o.profileFilePrefix = profilePrefix;
  }
  return o;
}

/** Creates a session; ORT errors become RunnerError(INTERNAL) naming the model. */
export async function createSession(path, opts = {}) {
  const ort = await loadOrt(opts);
  try {
    return await ort.InferenceSession.create(path, sessionOptions(opts));
  } catch (e) {
    throw internal(`ONNX Runtime cannot load ${path}: ${oneLine(e.message)}`);
  }
}

/** Input/output metadata of a session: [{name, type, shape}] (shape entries: number or symbolic name). */
export function sessionMeta(session) {
  const conv = (list, names) =>
    names.map((name, i) => {
      const m = list?.[i] ?? {};
      return { name, isTensor: m.isTensor !== false, type: m.type, shape: m.shape ?? null };
    });
  return {
    inputs: conv(session.inputMetadata, session.inputNames),
    outputs: conv(session.outputMetadata, session.outputNames),
  };
}

/** Runs a session on runner tensors; returns runner tensors for `fetches` (default: all outputs). */
export async function runSession(session, feeds, fetches, label) {
  const ort = await loadOrt();
  const ortFeeds = {};
  for (const name of session.inputNames) {
    const t = feeds[name];
    if (!t) throw internal(`${label}: no value for input '${name}'`);
    try {
      ortFeeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    } catch (e) {
      throw internal(`${label}: cannot make tensor '${name}': ${oneLine(e.message)}`);
    }
  }
  let result;
  try {
    result = await session.run(ortFeeds, fetches ?? session.outputNames);
  } catch (e) {
    throw internal(`${label}: ONNX Runtime run failed: ${oneLine(e.message)}`);
  }
  const out = {};
  for (const [name, t] of Object.entries(result)) {
    if (t.type !== 'string' && !ArrayBuffer.isView(t.data)) {
      throw internal(`${label}: output '${name}' is not a CPU tensor`);
    }
    // ORT gives every output its own fresh buffer; a view into a larger one
    // (not seen so far) is copied, so a tensor may always be moved to another thread.
    const data = t.type === 'string' || (t.data.byteOffset === 0 && t.data.byteLength === t.data.buffer.byteLength) ? t.data : t.data.slice();
    out[name] = { type: t.type, dims: Array.from(t.dims, Number), data };
  }
  return out;
}

/** Ends profiling (when enabled) and releases a session. */
export async function closeSession(session, profiling) {
  if (profiling) session.endProfiling();
  await session.release();
}

export const oneLine = (s) => String(s).replace(/\s+/g, ' ').trim();
