// Synthetic deployments for calibrate_host.mjs: a chain of K one-node stage
// models (y = x + x over a float vector), placed all on one device or
// alternating between two, to time what the runner itself adds per stage run
// and per hand-over between devices, apart from any model's compute.
// The stage models are written with the runner's protobuf field encoders,
// so no Python or protobuf package is needed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validatePlan } from '../runner/plan.mjs';
import { bytesField as bytes, intField as int, stringField as str } from '../runner/tensor_pb.mjs';

const FLOAT = 1;
const valueInfo = (name, n) => {
  const shape = bytes(2, bytes(1, int(1, n))); // TensorShapeProto { dim { dim_value: n } }
  const tensorType = bytes(1, [...int(1, FLOAT), ...shape]); // TypeProto { tensor_type }
  return [...str(1, name), ...bytes(2, tensorType)];
};

/** A ModelProto (opset 13) of one node: `output = input + input` over float[n]. */
export function addModel(input, output, n) {
  const node = [...str(1, input), ...str(1, input), ...str(2, output), ...str(3, 'add'), ...str(4, 'Add')];
  const graph = [...bytes(1, node), ...str(2, 'chain_stage'), ...bytes(11, valueInfo(input, n)), ...bytes(12, valueInfo(output, n))];
  const opset = [...str(1, ''), ...int(2, 13)];
  return Uint8Array.from([...int(1, 8), ...str(2, 'onnx-autopar'), ...bytes(7, graph), ...bytes(8, opset)]);
}

/**
 * Writes K stage models under `dir` and returns the plan of a chain t0 -> t1
 * -> ... -> tK, stage k on device devices[k % devices.length] (the runner's
 * validated form, as loadPlan returns it). `floats`: elements per tensor.
 */
export function chainPlan(dir, { stages, devices = [0], floats = 64 }) {
  mkdirSync(dir, { recursive: true });
  const raw = { stages: [], inputs: [{ name: 't0' }], outputs: [{ name: `t${stages}` }] };
  for (let k = 0; k < stages; k++) {
    const model = `chain_${floats}_${k}.onnx`;
    writeFileSync(join(dir, model), addModel(`t${k}`, `t${k + 1}`, floats));
    raw.stages.push({ id: k, device: devices[k % devices.length], model, inputs: [`t${k}`], outputs: [`t${k + 1}`] });
  }
  return validatePlan(raw, dir);
}
