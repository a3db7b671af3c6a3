// Worker thread of measure_step's co-run probe (Note [Co-run slowdown] in
// measure_step.mjs): runs one model on its feeds over and over, as a second
// device of this host would, while the main thread lets it.
// workerData: {model, feeds, threads, state: Int32Array on a SharedArrayBuffer}.
// state[0]: 0 run, 1 pause (after the run in progress; it posts 'paused' and
// waits for the state to change), 2 stop. Posts 'ready' after its first run
// and 'done' when it stops.
import { parentPort, workerData } from 'node:worker_threads';
import { createSession, runSession } from '../runner/ort_session.mjs';

const RUN = 0;
const PAUSE = 1;
const STOP = 2;
const { model, feeds, threads, state } = workerData;
const session = await createSession(model, { threads });
try {
  let first = true;
  for (;;) {
    const now = Atomics.load(state, 0);
    if (now === STOP) break;
    if (now === PAUSE) {
      parentPort.postMessage('paused');
      Atomics.wait(state, 0, PAUSE);
      continue;
    }
    if (now !== RUN) throw new Error(`co-run worker: unknown state ${now}`);
    await runSession(session, feeds, undefined, `co-run of ${model}`);
    if (first) parentPort.postMessage('ready');
    first = false;
  }
} finally {
  await session.release();
}
parentPort.postMessage('done');
