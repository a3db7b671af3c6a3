// Reads and replaces the initializers of an ONNX model file at the protobuf
// wire level, without a protobuf dependency: train.mjs --save writes the
// original model (same graph, names, opset and every field it does not
// touch, byte for byte) with the trained weights.
//
// replaceInitializers rewrites the main graph's initializers named in the
// map as plain TensorProtos (dims, data_type, name, raw_data). Tensors kept
// in external data files cannot follow the model to another folder, so every
// other external tensor (initializers, Constant values, subgraphs included)
// is inlined as raw_data; a missing or short data file is an error.
import { readFileSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import { Reader, decodeTensor, encodeTensor } from './tensor_pb.mjs';

// Field numbers of onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const NODE_ATTRIBUTE = 5;
const ATTRIBUTE_T = 5;
const ATTRIBUTE_G = 6;
const ATTRIBUTE_TENSORS = 10;
const ATTRIBUTE_GRAPHS = 11;
const TENSOR_NAME = 8;
const TENSOR_RAW_DATA = 9;
const TENSOR_EXTERNAL_DATA = 13;
const TENSOR_DATA_LOCATION = 14;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;
const LENGTH_DELIMITED = 2;

const utf8 = new TextDecoder('utf-8');

/**
 * The fields of the message in `bytes`: [{field, wireType, start, end, body}],
 * start/end spanning the whole field (key included), body the payload of a
 * length-delimited field.
 */
function fields(bytes) {
  const out = [];
  const r = new Reader(bytes);
  while (!r.done()) {
    const start = r.pos;
    const key = Number(r.varint());
    const field = key >>> 3;
    const wireType = key & 7;
    let body = null;
    if (wireType === LENGTH_DELIMITED) body = r.bytes();
    else r.skip(wireType);
    out.push({ field, wireType, start, end: r.pos, body });
  }
  return out;
}

function varint(v) {
  const out = [];
  let x = v;
  do {
    let b = x % 128;
    x = Math.floor(x / 128);
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Uint8Array.from(out);
}

/** A length-delimited field holding `body`. */
function lengthDelimited(field, body) {
  return Buffer.concat([varint((field << 3) | LENGTH_DELIMITED), varint(body.length), body]);
}

/** The name of a TensorProto. */
function tensorName(bytes) {
  for (const f of fields(bytes)) if (f.field === TENSOR_NAME && f.body) return utf8.decode(f.body);
  return '';
}

/** Rebuilds a message: each field either kept verbatim or replaced by `edit`'s bytes (null: dropped). */
function rewrite(bytes, edit) {
  const parts = [];
  let changed = false;
  for (const f of fields(bytes)) {
    const replaced = edit(f);
    if (replaced === undefined) {
      parts.push(bytes.subarray(f.start, f.end));
    } else {
      changed = true;
      if (replaced !== null) parts.push(replaced);
    }
  }
  return changed ? Buffer.concat(parts) : bytes;
}

/** A TensorProto whose data lives in an external file, rewritten with raw_data; other tensors unchanged. */
function inlineExternal(bytes, ctx) {
  const fs = fields(bytes);
  const external = fs.some((f) => f.field === TENSOR_DATA_LOCATION && f.wireType === 0 && readVarintAt(bytes, f) === 1);
  if (!external) return bytes;
  const info = {};
  for (const f of fs) {
    if (f.field !== TENSOR_EXTERNAL_DATA || !f.body) continue;
    let key = '';
    let value = '';
    for (const e of fields(f.body)) {
      if (e.field === ENTRY_KEY && e.body) key = utf8.decode(e.body);
      if (e.field === ENTRY_VALUE && e.body) value = utf8.decode(e.body);
    }
    info[key] = value;
  }
  const name = tensorName(bytes);
  const where = `tensor '${name}'`;
  if (!info.location) throw new Error(`${where}: external data without a location`);
  if (isAbsolute(info.location) || normalize(info.location).startsWith('..')) {
    throw new Error(`${where}: external data location '${info.location}' is outside the model's folder`);
  }
  const path = join(ctx.modelDir, info.location);
  let file;
  try {
    file = ctx.files.get(path) ?? readFileSync(path);
  } catch (e) {
    throw new Error(`${where}: cannot read its external data ${path} (${e.code ?? e.message})`);
  }
  ctx.files.set(path, file);
  const offset = Number(info.offset ?? 0);
  const length = info.length === undefined ? file.length - offset : Number(info.length);
  if (!(offset >= 0 && length >= 0 && offset + length <= file.length)) {
    throw new Error(`${where}: external data ${path} holds ${file.length} bytes, offset ${offset} + length ${length} exceed it`);
  }
  const raw = file.subarray(offset, offset + length);
  const kept = rewrite(bytes, (f) =>
    f.field === TENSOR_EXTERNAL_DATA || f.field === TENSOR_DATA_LOCATION || f.field === TENSOR_RAW_DATA ? null : undefined,
  );
  return Buffer.concat([kept, lengthDelimited(TENSOR_RAW_DATA, raw)]);
}

function readVarintAt(bytes, f) {
  const r = new Reader(bytes, f.start, f.end);
  r.varint(); // key
  return Number(r.varint());
}

function rewriteAttribute(bytes, ctx) {
  return rewrite(bytes, (f) => {
    if (!f.body) return undefined;
    let body;
    if (f.field === ATTRIBUTE_T || f.field === ATTRIBUTE_TENSORS) body = inlineExternal(f.body, ctx);
    else if (f.field === ATTRIBUTE_G || f.field === ATTRIBUTE_GRAPHS) body = rewriteGraph(f.body, ctx, null);
    else return undefined;
    return body === f.body ? undefined : lengthDelimited(f.field, body);
  });
}

function rewriteNode(bytes, ctx) {
  return rewrite(bytes, (f) => {
    if (f.field !== NODE_ATTRIBUTE || !f.body) return undefined;
    const body = rewriteAttribute(f.body, ctx);
    return body === f.body ? undefined : lengthDelimited(f.field, body);
  });
}

/** Rewrites a GraphProto; `replace` (the main graph only) maps initializer names to new tensors. */
function rewriteGraph(bytes, ctx, replace) {
  return rewrite(bytes, (f) => {
    if (!f.body) return undefined;
    let body;
    if (f.field === GRAPH_INITIALIZER) {
      const name = tensorName(f.body);
      if (replace?.has(name)) {
        ctx.replaced.add(name);
        const t = replace.get(name);
        return lengthDelimited(f.field, encodeTensor({ ...t, name }));
      }
      body = inlineExternal(f.body, ctx);
    } else if (f.field === GRAPH_NODE) {
      body = rewriteNode(f.body, ctx);
    } else {
      return undefined;
    }
    return body === f.body ? undefined : lengthDelimited(f.field, body);
  });
}

/**
 * The model in `bytes` with the main graph's initializers named in `weights`
 * (Map name -> runner tensor) replaced, and every external tensor inlined
 * (read relative to `modelDir`). Throws an Error naming the first weight that
 * is not an initializer of the main graph, or an unreadable external tensor.
 */
export function replaceInitializers(bytes, weights, modelDir) {
  const ctx = { modelDir, files: new Map(), replaced: new Set() };
  let graphs = 0;
  const out = rewrite(bytes, (f) => {
    if (f.field !== MODEL_GRAPH || !f.body) return undefined;
    graphs++;
    return lengthDelimited(f.field, rewriteGraph(f.body, ctx, weights));
  });
  if (graphs !== 1) throw new Error('not an ONNX model (no graph)');
  for (const name of weights.keys()) {
    if (!ctx.replaced.has(name)) throw new Error(`'${name}' is not an initializer of the model's main graph`);
  }
  return out;
}

/**
 * The main graph's initializers of the model in `bytes` as runner tensors
 * (Map name -> tensor); external ones are read relative to `modelDir`.
 */
export function readInitializers(bytes, modelDir = '.') {
  const ctx = { modelDir, files: new Map(), replaced: new Set() };
  const out = new Map();
  for (const f of fields(bytes)) {
    if (f.field !== MODEL_GRAPH || !f.body) continue;
    for (const g of fields(f.body)) {
      if (g.field !== GRAPH_INITIALIZER || !g.body) continue;
      const t = decodeTensor(inlineExternal(g.body, ctx));
      out.set(t.name, t);
    }
  }
  return out;
}
