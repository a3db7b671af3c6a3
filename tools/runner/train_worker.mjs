// Worker-thread entry of a split training step: one device. Hosts the
// device's ONNX Runtime sessions (its stages and its update model, created
// once) and its PipelineDevice (train_pipeline_device.mjs), which runs the
// device's order and hands tensors and new weight values straight to the
// other devices' workers over MessagePorts. Requests from the main thread
// (train_pipeline.mjs):
//   {req, op: 'load', stages, opts}              -> metadata of the models
//   {req, op: 'setup', route, peers, weights}    -> peers: {device: MessagePort}
//   {req, op: 'step', step, data}                -> {timeline, losses, max_stashes}
//   {req, op: 'weights', step}                   -> the weights this device updates
//   {req, op: 'close'}
// Failures answer {req, ok: false, error: {message, code}}.
import { parentPort, workerData } from 'node:worker_threads';
import { DeviceSessions } from './device_sessions.mjs';
import { PipelineDevice } from './train_pipeline_device.mjs';

const sessions = new DeviceSessions(workerData.device);
let device = null;

function setup({ route, peers, weights }) {
  device = new PipelineDevice({
    route,
    device: workerData.device,
    runStage: (id, feeds, fetches) => sessions.run(id, feeds, fetches),
    send: (dst, msg, transfer) => peers[dst].postMessage(msg, transfer),
  });
  device.setWeights(weights);
  for (const port of Object.values(peers)) port.on('message', (msg) => device.receive(msg));
}

async function handle(m) {
  switch (m.op) {
    case 'load':
      return await sessions.load(m.stages, m.opts);
    case 'setup':
      return setup(m);
    case 'step':
      return await device.runStep(m.step, m.data);
    case 'weights':
      return device.homedWeights(m.step);
    case 'close':
      return await sessions.close();
    default:
      throw new Error(`unknown request '${m.op}'`);
  }
}

parentPort.on('message', async (m) => {
  try {
    const result = await handle(m);
    parentPort.postMessage({ req: m.req, ok: true, result });
    if (m.op === 'close') parentPort.close();
  } catch (e) {
    parentPort.postMessage({ req: m.req, ok: false, error: { message: e.message, code: e.code ?? 4 } });
  }
});
