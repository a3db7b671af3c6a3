// TensorProto decoding/encoding and float16 conversion.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeTensor, encodeTensor, readTensorFile } from '../tensor_pb.mjs';
import { floatToHalf, halfToFloat } from '../dtypes.mjs';
import { pythonMissing, runPython, tempDir, testdata } from '../testing/helpers.mjs';

const SAMPLES = [
  { type: 'float32', dims: [2, 3], data: Float32Array.from([1.5, -2, 0, 3.25, NaN, -Infinity]) },
  { type: 'float64', dims: [2], data: Float64Array.from([1e300, -1e-300]) },
  { type: 'int8', dims: [3], data: Int8Array.from([-128, 0, 127]) },
  { type: 'uint8', dims: [3], data: Uint8Array.from([0, 1, 255]) },
  { type: 'int16', dims: [2], data: Int16Array.from([-32768, 32767]) },
  { type: 'uint16', dims: [1], data: Uint16Array.from([65535]) },
  { type: 'int32', dims: [2, 1], data: Int32Array.from([-(2 ** 31), 2 ** 31 - 1]) },
  { type: 'uint32', dims: [1], data: Uint32Array.from([2 ** 32 - 1]) },
  { type: 'int64', dims: [3], data: BigInt64Array.from([-(2n ** 63n), -1n, 2n ** 63n - 1n]) },
  { type: 'uint64', dims: [1], data: BigUint64Array.from([2n ** 64n - 1n]) },
  { type: 'bool', dims: [4], data: Uint8Array.from([1, 0, 0, 1]) },
  { type: 'float16', dims: [2], data: Uint16Array.from([0x3c00, 0xc000]) },
  { type: 'string', dims: [2], data: ['héllo', ''] },
  { type: 'float32', dims: [], data: Float32Array.from([7]) }, // scalar
  { type: 'float32', dims: [0, 4], data: new Float32Array(0) }, // empty
];

test('encode/decode round trip for every supported element type', () => {
  for (const t of SAMPLES) {
    const back = decodeTensor(encodeTensor({ ...t, name: `t_${t.type}` }));
    assert.equal(back.name, `t_${t.type}`);
    assert.equal(back.type, t.type);
    assert.deepEqual(back.dims, t.dims);
    assert.deepEqual(Array.from(back.data), Array.from(t.data), t.type);
  }
});

test('decodes the typed (non-raw) data fields written by onnx.helper', { skip: pythonMissing() }, () => {
  const dir = tempDir('pb');
  const cases = {
    float32: [1, 'FLOAT', [2, 2], [1.5, -2.0, 0.25, 3.0]],
    float64: [11, 'DOUBLE', [2], [1e200, -0.5]],
    int32: [6, 'INT32', [3], [-5, 0, 2147483647]],
    int8: [3, 'INT8', [2], [-128, 127]],
    uint16: [4, 'UINT16', [2], [0, 65535]],
    bool: [9, 'BOOL', [3], [1, 0, 1]],
    int64: [7, 'INT64', [2, 1], [0, 42]], // [0] set to -(2^53 + 1) in Python
    uint32: [12, 'UINT32', [1], [4294967295]],
    uint64: [13, 'UINT64', [1], [0]], // set to 2^64 - 1 in Python
    float16: [10, 'FLOAT16', [3], [1.0, -0.5, 65504.0]],
  };
  const py = [
    'import sys, onnx',
    'from onnx import helper, TensorProto',
    `cases = ${JSON.stringify(cases)}`,
    "cases['int64'][3][0] = -9007199254740993",
    "cases['uint64'][3][0] = 18446744073709551615",
    'for k, (code, enum, dims, vals) in cases.items():',
    '    t = helper.make_tensor(k, getattr(TensorProto, enum), dims, vals, raw=False)',
    '    assert not t.raw_data',
    `    open('${dir}/' + k + '.pb', 'wb').write(t.SerializeToString())`,
    "t = helper.make_tensor('s', TensorProto.STRING, [2], [b'ab', b'c'])",
    `open('${dir}/string.pb', 'wb').write(t.SerializeToString())`,
  ].join('\n');
  runPython(['-c', py]);
  for (const [name, [, , dims, vals]] of Object.entries(cases)) {
    const t = readTensorFile(join(dir, `${name}.pb`));
    assert.equal(t.type, name);
    assert.deepEqual(t.dims, dims);
    const got = name === 'float16' ? Array.from(t.data, halfToFloat) : Array.from(t.data);
    // Values beyond 2^53 (set in Python, not expressible in JSON) as BigInt.
    const want = name === 'int64' ? [-9007199254740993n, 42n] : name === 'uint64' ? [18446744073709551615n] : vals;
    assert.deepEqual(got, want, name);
  }
  assert.deepEqual(readTensorFile(join(dir, 'string.pb')).data, ['ab', 'c']);
});

test('float16 conversions', () => {
  assert.equal(floatToHalf(1), 0x3c00);
  assert.equal(floatToHalf(-2), 0xc000);
  assert.equal(floatToHalf(65504), 0x7bff);
  assert.equal(floatToHalf(1e6), 0x7c00); // overflow -> inf
  assert.equal(floatToHalf(1e-9), 0); // underflow
  assert.equal(floatToHalf(2 ** -24), 1); // smallest subnormal
  assert.ok(Number.isNaN(halfToFloat(floatToHalf(NaN))));
  for (let h = 0; h < 0x10000; h++) {
    const f = halfToFloat(h);
    if (!Number.isNaN(f)) assert.equal(floatToHalf(f), h === 0x8000 ? 0x8000 : h, `bits ${h}`);
  }
});

test('rejects what is not a supported TensorProto, with a reason', () => {
  assert.throws(() => decodeTensor(new Uint8Array(0)), /no data_type/);
  const good = encodeTensor({ type: 'float32', dims: [4], data: new Float32Array(4) });
  assert.throws(() => decodeTensor(good.subarray(0, good.length - 3)), /truncated/);
  const bf16 = encodeTensor({ type: 'uint16', dims: [1], data: new Uint16Array(1) });
  bf16[bf16.indexOf(4, 2)] = 16; // data_type UINT16 (4) -> BFLOAT16 (16)
  assert.throws(() => decodeTensor(bf16), /bfloat16 is not supported/);
  for (const name of ['node/test_identity_sequence', 'node/test_identity_opt', 'node/test_optional_has_element']) {
    const pb = testdata(`${name}/test_data_set_0/input_0.pb`);
    if (existsSync(pb)) assert.throws(() => decodeTensor(readFileSync(pb)), /not a TensorProto/, name);
  }
});
