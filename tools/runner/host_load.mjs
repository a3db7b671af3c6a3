// How much of the CPU this process got: the scheduler statistics of all its
// threads (/proc/self/task/*/schedstat: nanoseconds on a CPU, nanoseconds
// runnable but waiting for one). Over an interval,
//   cpu_share = on-CPU / (on-CPU + waiting)
// is 1 when no thread of ours ever waited for a core, and falls as other
// processes take the cores. It does not depend on how busy our own threads
// were (idle pipeline bubbles count neither way), so it tells a measurement
// taken on a quiet machine from one taken on a loaded one.
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

/** {run_ns, wait_ns} summed over the process's threads, or null where /proc has no schedstat. */
export function schedTotals() {
  try {
    let run = 0;
    let wait = 0;
    for (const tid of readdirSync('/proc/self/task')) {
      let f;
      try {
        f = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ');
      } catch {
        continue; // the thread ended meanwhile
      }
      run += Number(f[0]);
      wait += Number(f[1]);
    }
    return { run_ns: run, wait_ns: wait };
  } catch {
    return null;
  }
}

/** cpu_share between two schedTotals() readings (null when unknown or nothing ran). */
export function cpuShare(before, after) {
  if (!before || !after) return null;
  const run = after.run_ns - before.run_ns;
  const wait = after.wait_ns - before.wait_ns;
  return run + wait > 0 ? run / (run + wait) : null;
}

/** The machine's load: 1-minute load average and core count. */
export function hostLoad() {
  return { load_avg_1m: loadavg()[0], cores: availableParallelism() };
}
