// Shared helpers for the runner's tests (kept outside test/ so that
// `node --test tools/runner/test/` does not run this file as a test).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RUNNER_DIR = fileURLToPath(new URL('..', import.meta.url));
export const RUNNER = join(RUNNER_DIR, 'run_deployment.mjs');
export const TESTDATA = '/usr/share/libonnx-testdata/data';
export const PYTHON = '/usr/bin/python3'; // Debian's Python, which has onnx

/** Runs the CLI; returns { code, stdout, stderr }. */
export function runCli(args, opts = {}) {
  const r = spawnSync(process.execPath, [RUNNER, ...args], { encoding: 'utf8', timeout: 120000, ...opts });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const tempDirs = [];
process.on('exit', () => tempDirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A fresh temporary directory, removed when the process exits. */
export function tempDir(tag = 'runner') {
  const dir = mkdtempSync(join(tmpdir(), `${tag}-`));
  tempDirs.push(dir);
  return dir;
}

/** Why Python fixtures cannot be built here, or false when they can (usable as `skip:`). */
export function pythonMissing() {
  if (!existsSync(PYTHON)) return `${PYTHON} not found`;
  const r = spawnSync(PYTHON, ['-c', 'import onnx, numpy'], { encoding: 'utf8' });
  return r.status === 0 ? false : `${PYTHON} lacks onnx/numpy`;
}

/** Runs a Python script with Debian's Python; throws with its stderr on failure. */
export function runPython(args) {
  const r = spawnSync(PYTHON, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${PYTHON} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Builds the hand-made fixture (make_fixture.py) in a new temp dir; returns its path. */
export function makeFixture({ corrupt = false } = {}) {
  const dir = tempDir('fixture');
  runPython([join(RUNNER_DIR, 'test', 'make_fixture.py'), dir, ...(corrupt ? ['--corrupt'] : [])]);
  return dir;
}

/** Path of a libonnx-testdata test directory (category/name). */
export const testdata = (name) => join(TESTDATA, name);
