// Worker-thread entry: hosts the DeviceSessions of one device and answers
// requests from the main thread's scheduler (executor.mjs):
//   {req, op: 'load', stages, opts} -> {req, ok, result: metadata}
//   {req, op: 'run', id, feeds, fetches} -> {req, ok, result: outputs, ms}
//   {req, op: 'close'} -> {req, ok, result: profile files}
// Failures answer {req, ok: false, error: {message, code}}.
import { parentPort, workerData } from 'node:worker_threads';
import { DeviceSessions } from './device_sessions.mjs';

const device = new DeviceSessions(workerData.device);

parentPort.on('message', async (m) => {
  try {
    let result;
    if (m.op === 'load') result = await device.load(m.stages, m.opts);
    else if (m.op === 'run') result = await device.run(m.id, m.feeds, m.fetches);
    else if (m.op === 'close') result = await device.close();
    else throw new Error(`unknown request '${m.op}'`);
    parentPort.postMessage({ req: m.req, ok: true, result });
    if (m.op === 'close') parentPort.close();
  } catch (e) {
    parentPort.postMessage({ req: m.req, ok: false, error: { message: e.message, code: e.code ?? 4 } });
  }
});
