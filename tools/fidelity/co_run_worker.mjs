// Worker thread of measure_step's co-run probe (Note [Co-run slowdown] in
// measure_step.mjs): runs one model on its feeds over and over, as a second
// device of this host would, until the main thread sets the stop flag.
// workerData: {model, feeds, threads, stop: Int32Array on a SharedArrayBuffer}.
// Posts 'ready' after its first run and 'done' when it stops.
import { parentPort, workerData } from 'node:worker_threads';
import { createSession, runSession } from '../runner/ort_session.mjs';

const { model, feeds, threads, stop } = workerData;
const session = await createSession(model, { threads });
try {
  let first = true;
  while (Atomics.load(stop, 0) === 0) {
    await runSession(session, feeds, undefined, `co-run of ${model}`);
    if (first) parentPort.postMessage('ready');
    first = false;
  }
} finally {
  await session.release();
}
parentPort.postMessage('done');
