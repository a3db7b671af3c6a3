// The sessions of one device: one ORT InferenceSession per stage placed on the
// device, created together, run one at a time (a device runs one stage at a
// time, like one accelerator stream). Used directly on the main thread
// (--sequential) and inside device_worker.mjs (one worker thread per device).
import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createSession, sessionMeta, runSession, closeSession } from './ort_session.mjs';
import { internal } from './errors.mjs';

export class DeviceSessions {
  constructor(device) {
    this.device = device;
    this.sessions = new Map(); // stage id -> session
    this.profiled = [];        // [prefix, start time] of profiled sessions
  }

  /** Creates a session per stage [{id, modelPath, profilePrefix?}]; returns {id: {inputs, outputs}} metadata. */
  async load(stages, opts) {
    const meta = {};
    for (const s of stages) {
      const profilePrefix = s.profilePrefix ?? null;
      const t0 = Date.now();
      const session = await createSession(s.modelPath, { ...opts, profilePrefix });
      if (profilePrefix) this.profiled.push([profilePrefix, t0]);
      this.sessions.set(s.id, session);
      meta[s.id] = sessionMeta(session);
    }
    return meta;
  }

  /** Runs stage `id` on feeds {name: tensor}; returns {name: tensor} for `fetches`. */
  async run(id, feeds, fetches) {
    const session = this.sessions.get(id);
    if (!session) throw internal(`device ${this.device}: stage ${id} is not loaded here`);
    return runSession(session, feeds, fetches, `stage ${id} (device ${this.device})`);
  }

  /** Releases all sessions; returns the profile files written (when profiling). */
  async close() {
    for (const s of this.sessions.values()) await closeSession(s, this.profiled.length > 0);
    this.sessions.clear();
    return this.profiled.flatMap(([prefix, t0]) => profileFiles(prefix, t0));
  }
}

/** Files ORT wrote for a profile prefix: PREFIX_<timestamp>.json, newer than t0. */
function profileFiles(prefix, t0) {
  const dir = dirname(prefix);
  const base = basename(prefix) + '_';
  try {
    return readdirSync(dir)
      .filter((f) => f.startsWith(base) && f.endsWith('.json') && /^\d{4}-/.test(f.slice(base.length)))
      .map((f) => join(dir, f))
      .filter((p) => statSync(p).mtimeMs >= t0 - 1000);
  } catch {
    return [];
  }
}
