// Minimal reader/writer for ONNX TensorProto messages (the input_N.pb /
// output_N.pb files of ONNX test data sets), without a protobuf dependency.
//
// A tensor is the plain object used everywhere in the runner:
//   { name, type: 'float32' | 'int64' | ..., dims: number[], data: TypedArray | string[] }
// Decoded fields: dims, data_type, name, raw_data, float_data, int32_data,
// string_data, int64_data, double_data, uint64_data (packed or not).
// Rejected with a clear error: segmented tensors, external data, element types
// onnxruntime-node cannot hold, and files that are not a TensorProto (e.g. a
// SequenceProto or OptionalProto of the sequence/optional tests).
import { readFileSync, writeFileSync } from 'node:fs';
import { dtypeFromOnnx, dtypeFromName, numel } from './dtypes.mjs';

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error('tensor_pb: raw_data handling assumes a little-endian host');
}

const utf8 = new TextDecoder('utf-8');
const utf8enc = new TextEncoder();

/** Cursor over protobuf wire-format bytes (also read by tools/fidelity/onnx_nodes.mjs). */
export class Reader {
  constructor(bytes, start = 0, end = bytes.length) {
    this.b = bytes;
    this.pos = start;
    this.end = end;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  done() {
    return this.pos >= this.end;
  }
  need(n) {
    if (this.pos + n > this.end) throw new Error('truncated protobuf message');
  }
  varint() {
    // Returns a BigInt holding the raw 64-bit value.
    let result = 0n;
    let shift = 0n;
    for (;;) {
      this.need(1);
      const byte = this.b[this.pos++];
      result |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return BigInt.asUintN(64, result);
      shift += 7n;
      if (shift > 63n) throw new Error('malformed varint');
    }
  }
  bytes() {
    const len = Number(this.varint());
    this.need(len);
    const out = this.b.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  fixed32() {
    this.need(4);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }
  fixed64() {
    this.need(8);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  skip(wireType) {
    if (wireType === 0) this.varint();
    else if (wireType === 1) (this.need(8), (this.pos += 8));
    else if (wireType === 2) this.bytes();
    else if (wireType === 5) (this.need(4), (this.pos += 4));
    else throw new Error(`unsupported protobuf wire type ${wireType}`);
  }
}

/** Reads a repeated scalar field, packed (wire type 2) or one element at a time. */
function readRepeated(r, wireType, out, scalarWire, readOne) {
  if (wireType === 2 && scalarWire !== 2) {
    const bytes = r.bytes();
    const sub = new Reader(bytes);
    while (!sub.done()) out.push(readOne(sub));
  } else if (wireType === scalarWire) {
    out.push(readOne(r));
  } else {
    throw new Error(`unexpected wire type ${wireType}`);
  }
}

const asInt64 = (s) => BigInt.asIntN(64, s.varint());
const asUint64 = (s) => s.varint();
const asInt32 = (s) => Number(BigInt.asIntN(32, s.varint()));

/** Decodes TensorProto bytes into a runner tensor. */
export function decodeTensor(bytes) {
  const f = { packedDims: false, dims: [], dataType: 0, name: '', raw: null, float: [], int32: [], str: [], int64: [], double: [], uint64: [] };
  try {
    return decodeTensorFields(bytes, f);
  } catch (e) {
    // A SequenceProto/OptionalProto/MapProto starts with a string field 1,
    // which reads as packed dims: say so instead of reporting odd dims.
    if (f.packedDims) throw new Error('not a TensorProto (a SequenceProto, OptionalProto or MapProto?): the runner reads tensors only');
    throw e;
  }
}

function decodeTensorFields(bytes, f) {
  const r = new Reader(bytes);
  while (!r.done()) {
    const key = Number(r.varint());
    const field = key >>> 3;
    const wt = key & 7;
    switch (field) {
      case 1: f.packedDims ||= wt === 2; readRepeated(r, wt, f.dims, 0, (s) => Number(asInt64(s))); break;
      case 2: f.dataType = Number(r.varint()); break;
      case 3: throw new Error('segmented TensorProto, or not a TensorProto (a SequenceProto or OptionalProto?): the runner reads plain tensors only');
      case 4: readRepeated(r, wt, f.float, 5, (s) => s.fixed32()); break;
      case 5: readRepeated(r, wt, f.int32, 0, asInt32); break;
      case 6: f.str.push(utf8.decode(r.bytes())); break;
      case 7: readRepeated(r, wt, f.int64, 0, asInt64); break;
      case 8: f.name = utf8.decode(r.bytes()); break;
      case 9: f.raw = r.bytes(); break;
      case 10: readRepeated(r, wt, f.double, 1, (s) => s.fixed64()); break;
      case 11: readRepeated(r, wt, f.uint64, 0, asUint64); break;
      case 13: throw new Error('TensorProto with external data is not supported');
      case 14: if (Number(r.varint()) === 1) throw new Error('TensorProto with external data is not supported'); break;
      default: r.skip(wt); // doc_string and fields newer than this reader
    }
  }
  if (f.dataType === 0) throw new Error('TensorProto has no data_type (not a TensorProto?)');
  if (f.dims.some((d) => !Number.isSafeInteger(d) || d < 0)) throw new Error(`bad dims [${f.dims}]`);
  const dt = dtypeFromOnnx(f.dataType);
  const n = numel(f.dims);
  let data;
  if (f.raw) {
    if (dt.kind === 'string') throw new Error('string tensor with raw_data');
    if (f.raw.length !== n * dt.bytes) {
      throw new Error(`raw_data has ${f.raw.length} bytes, dims [${f.dims}] of ${dt.name} need ${n * dt.bytes}`);
    }
    const copy = new Uint8Array(f.raw.length); // aligned copy
    copy.set(f.raw);
    data = new dt.Array(copy.buffer);
  } else {
    const src = {
      float32: f.float, float64: f.double, int64: f.int64, uint32: f.uint64, uint64: f.uint64, string: f.str,
    }[dt.name] ?? f.int32; // int32, int16, int8, uint16, uint8, bool, float16 live in int32_data
    if (src.length !== n) {
      throw new Error(`TensorProto holds ${src.length} values, dims [${f.dims}] need ${n}`);
    }
    if (dt.name === 'string') data = src.slice();
    else if (dt.name === 'uint32') data = Uint32Array.from(src, Number);
    else data = dt.Array.from(src);
  }
  return { name: f.name, type: dt.name, dims: f.dims, data };
}

/** Reads and decodes a .pb file; errors name the file. */
export function readTensorFile(path) {
  let bytes;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new Error(`cannot read ${path}: ${e.code ?? e.message}`);
  }
  try {
    return decodeTensor(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (e) {
    throw new Error(`${path}: ${e.message}`);
  }
}

/**
 * Protobuf wire format as plain byte arrays, so that messages nest
 * (tools/fidelity/chain_models.mjs builds whole ModelProtos with them).
 */
export function varintBytes(v) {
  let x = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let byte = Number(x & 0x7fn);
    x >>= 7n;
    if (x) byte |= 0x80;
    out.push(byte);
  } while (x);
  return out;
}
export const keyBytes = (field, wire) => varintBytes((field << 3) | wire);
export const intField = (field, v) => [...keyBytes(field, 0), ...varintBytes(v)];
export const bytesField = (field, b) => [...keyBytes(field, 2), ...varintBytes(b.length), ...b];
export const stringField = (field, s) => bytesField(field, [...utf8enc.encode(s)]);

/** Protobuf writer: collects byte chunks. */
class Writer {
  constructor() {
    this.chunks = [];
  }
  varint(v) {
    this.chunks.push(Uint8Array.from(varintBytes(v)));
  }
  key(field, wt) {
    this.varint((field << 3) | wt);
  }
  bytes(field, u8) {
    this.key(field, 2);
    this.varint(u8.length);
    this.chunks.push(u8);
  }
  finish() {
    return Buffer.concat(this.chunks);
  }
}

/** Encodes a runner tensor as TensorProto bytes (dims, data_type, name, raw_data / string_data). */
export function encodeTensor(t) {
  const dt = dtypeFromName(t.type);
  const w = new Writer();
  for (const d of t.dims) (w.key(1, 0), w.varint(d));
  w.key(2, 0);
  w.varint(dt.onnx);
  if (t.name) w.bytes(8, utf8enc.encode(t.name));
  if (dt.kind === 'string') {
    for (const s of t.data) w.bytes(6, utf8enc.encode(String(s)));
  } else {
    w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return w.finish();
}

/** Writes a runner tensor to a .pb file. */
export function writeTensorFile(path, t) {
  writeFileSync(path, encodeTensor(t));
}
