// Worker for calibrate_host.mjs: one end of a tensor hand-over between two
// worker threads, done the way the runner's workers hand a stage output to
// another device (schedule.mjs): a {type, dims, data} tensor posted on a
// MessagePort, its buffer moved ('move') or structured-cloned ('copy').
//   sender:   {op: 'send', bytes, reps, mode} -> {ok: true}
//   receiver: {op: 'expect', reps}             -> {one_way_us: [...]}
// Each message carries its send time on the clock all threads share; the
// receiver records arrival − send, then acknowledges, so hand-overs never queue.
import { parentPort, workerData } from 'node:worker_threads';
import { nowUs } from '../runner/schedule.mjs';

const port = workerData.port;
let onPort = null; // the current job's handler of port messages
const early = []; // port messages that came before their job

port.on('message', (msg) => (onPort ? onPort(msg) : early.push(msg)));

function send({ bytes, reps, mode }) {
  let left = reps;
  const next = () => {
    if (left-- === 0) {
      onPort = null;
      parentPort.postMessage({ ok: true });
      return;
    }
    // A fresh buffer per hand-over, like a stage's output.
    const data = new Float32Array(Math.max(1, bytes >> 2)).fill(1);
    port.postMessage({ sent_us: nowUs(), tensor: { type: 'float32', dims: [data.length], data } }, mode === 'move' ? [data.buffer] : []);
  };
  onPort = next; // each acknowledgement triggers the next hand-over
  next();
}

function expect({ reps }) {
  const oneWay = [];
  onPort = (msg) => {
    oneWay.push(nowUs() - msg.sent_us);
    port.postMessage('ack');
    if (oneWay.length === reps) {
      onPort = null;
      parentPort.postMessage({ one_way_us: oneWay });
    }
  };
  while (early.length && onPort) onPort(early.shift());
}

parentPort.on('message', (m) => (m.op === 'send' ? send(m) : expect(m)));
