// Shared helpers of the end-to-end tests: run the onnx-autopar executable and
// the ONNX Runtime runner (tools/runner) as a user does, and make random
// node placements from a plan.json.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNER, tempDir } from '../../tools/runner/testing/helpers.mjs';
import { mulberry32 } from '../../tools/runner/inputs.mjs';

export { tempDir };
export const CLI = process.env.AUTOPAR_CLI;
export const MODELS_DIR = process.env.AUTOPAR_MODELS_DIR;

/** Runs a command; returns { code, stdout, stderr }. */
function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 300000, maxBuffer: 64 << 20 });
  return { code: r.status, stdout: r.stdout ?? '', stderr: (r.stderr ?? '') + (r.error ? String(r.error) : '') };
}

export const autopar = (args) => run(CLI, args);
export const runner = (args) => run(process.execPath, [RUNNER, '--json', ...args]);

export const readPlan = (dir) => JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8'));

/**
 * Writes a placement file that puts every node of `plan` on a device drawn
 * uniformly from [0, devices) (seeded), and returns its path.
 */
export function randomPlacementFile(plan, devices, seed, dir) {
  const rng = mulberry32(seed);
  const placement = {};
  for (const node of Object.keys(plan.node_to_device)) placement[node] = Math.floor(rng() * devices);
  const path = join(dir, `placement_${devices}_${seed}.json`);
  writeFileSync(path, JSON.stringify(placement));
  return path;
}

/**
 * Runs the runner on a deployment folder or Triton repository `dir` with
 * `runnerArgs` and returns its JSON report. Throws with the runner's output
 * when it fails.
 */
export function runReport(dir, runnerArgs) {
  const r = runner([dir, ...runnerArgs]);
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    throw new Error(`runner on ${dir}: exit ${r.code}: ${r.stdout}${r.stderr}`);
  }
  if (r.code !== 0) throw new Error(`runner on ${dir}: exit ${r.code}: ${r.stdout.slice(0, 2000)}`);
  return report;
}

/**
 * Splits `model` into `outDir` (extra CLI flags in `args`), then runs the
 * stages in ORT with `runnerArgs` and returns the runner's JSON report, the
 * plan and the split's summary (stdout). Throws with both tools' output on
 * any failure.
 */
export function splitAndRun(model, outDir, args, runnerArgs) {
  const split = autopar([model, '-o', outDir, '--stages', '--force', ...args]);
  if (split.code !== 0) throw new Error(`onnx-autopar ${model} ${args.join(' ')}: exit ${split.code}: ${split.stderr}`);
  return { report: runReport(outDir, runnerArgs), plan: readPlan(outDir), summary: split.stdout };
}
