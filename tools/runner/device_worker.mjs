// Worker-thread entry: one device. Hosts the device's ONNX Runtime sessions
// (created once, reused by every step) and its StepScheduler, which runs the
// device's stages for every micro-batch and hands tensors straight to the other
// devices' workers over MessagePorts (schedule.mjs). Requests from the main
// thread (executor.mjs):
//   {req, op: 'load', stages, opts}                 -> metadata of the stage models
//   {req, op: 'setup', route, microbatches, peers}  -> peers: {device: MessagePort}
//   {req, op: 'inputs', inputs}                      -> [m] -> {name: tensor}
//   {req, op: 'step', step, collect}                -> {timeline, outputs}
//   {req, op: 'close'}                               -> profile files written
// Failures answer {req, ok: false, error: {message, code}}.
import { parentPort, workerData } from 'node:worker_threads';
import { DeviceSessions } from './device_sessions.mjs';
import { StepScheduler, movable } from './schedule.mjs';

const device = new DeviceSessions(workerData.device);
let scheduler = null;

function setup({ route, microbatches, peers }) {
  scheduler = new StepScheduler({
    route,
    device: workerData.device,
    microbatches,
    runStage: (id, feeds, fetches) => device.run(id, feeds, fetches),
    send: (dst, msg, transfer) => peers[dst].postMessage(msg, transfer),
  });
  for (const port of Object.values(peers)) port.on('message', (msg) => scheduler.receive(msg));
}

async function handle(m) {
  switch (m.op) {
    case 'load':
      return [await device.load(m.stages, m.opts)];
    case 'setup':
      return [setup(m)];
    case 'inputs':
      return [scheduler.setInputs(m.inputs)];
    case 'step': {
      const r = await scheduler.runStep(m.step, { collect: m.collect });
      // The step is over: nothing here reads the collected outputs again.
      const transfer = new Set(r.outputs.flatMap((o) => Object.values(o).filter(movable).map((t) => t.data.buffer)));
      return [r, [...transfer]];
    }
    case 'close':
      return [await device.close()];
    default:
      throw new Error(`unknown request '${m.op}'`);
  }
}

parentPort.on('message', async (m) => {
  try {
    const [result, transfer] = await handle(m);
    parentPort.postMessage({ req: m.req, ok: true, result }, transfer ?? []);
    if (m.op === 'close') parentPort.close();
  } catch (e) {
    parentPort.postMessage({ req: m.req, ok: false, error: { message: e.message, code: e.code ?? 4 } });
  }
});
