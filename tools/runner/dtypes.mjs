// Element types: the ONNX TensorProto.DataType enum <-> onnxruntime-node's
// tensor type names <-> the JS typed array that holds the data, plus IEEE
// half-precision conversions (float16 data is carried as Uint16Array bits).
//
// Types ORT's JS API cannot hold (bfloat16, float8*, complex, int4/uint4) are
// absent on purpose: lookups for them throw a clear error.

export const DTYPES = [
  // onnx enum, ort name, array constructor, bytes per element, kind
  { onnx: 1, name: 'float32', Array: Float32Array, bytes: 4, kind: 'float' },
  { onnx: 2, name: 'uint8', Array: Uint8Array, bytes: 1, kind: 'int' },
  { onnx: 3, name: 'int8', Array: Int8Array, bytes: 1, kind: 'int' },
  { onnx: 4, name: 'uint16', Array: Uint16Array, bytes: 2, kind: 'int' },
  { onnx: 5, name: 'int16', Array: Int16Array, bytes: 2, kind: 'int' },
  { onnx: 6, name: 'int32', Array: Int32Array, bytes: 4, kind: 'int' },
  { onnx: 7, name: 'int64', Array: BigInt64Array, bytes: 8, kind: 'bigint' },
  { onnx: 8, name: 'string', Array: Array, bytes: 0, kind: 'string' },
  { onnx: 9, name: 'bool', Array: Uint8Array, bytes: 1, kind: 'bool' },
  { onnx: 10, name: 'float16', Array: Uint16Array, bytes: 2, kind: 'half' },
  { onnx: 11, name: 'float64', Array: Float64Array, bytes: 8, kind: 'float' },
  { onnx: 12, name: 'uint32', Array: Uint32Array, bytes: 4, kind: 'int' },
  { onnx: 13, name: 'uint64', Array: BigUint64Array, bytes: 8, kind: 'bigint' },
];

const ONNX_NAMES = {
  0: 'undefined', 14: 'complex64', 15: 'complex128', 16: 'bfloat16', 17: 'float8e4m3fn',
  18: 'float8e4m3fnuz', 19: 'float8e5m2', 20: 'float8e5m2fnuz', 21: 'uint4', 22: 'int4',
};

const BY_ONNX = new Map(DTYPES.map((d) => [d.onnx, d]));
const BY_NAME = new Map(DTYPES.map((d) => [d.name, d]));

/** dtype record for an ONNX data_type enum value; throws for unsupported ones. */
export function dtypeFromOnnx(code) {
  const d = BY_ONNX.get(code);
  if (!d) {
    const what = ONNX_NAMES[code] ?? `data_type ${code}`;
    throw new Error(`element type ${what} is not supported by onnxruntime-node tensors`);
  }
  return d;
}

/** dtype record for an ORT type name ('float32', 'int64', ...); throws if unknown. */
export function dtypeFromName(name) {
  const d = BY_NAME.get(name);
  if (!d) throw new Error(`element type '${name}' is not supported by the runner`);
  return d;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 half (as uint16 bits) -> JS number. */
export function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** JS number -> IEEE 754 half bits, round to nearest even. */
export function floatToHalf(v) {
  f32[0] = v;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++;
  return sign | half;
}

/** Number of elements of a shape ([] is a scalar: 1 element). */
export function numel(dims) {
  return dims.reduce((a, b) => a * b, 1);
}
