// Error type and exit codes of the runner. Every failure becomes one line
// `run_deployment: error: ...` on stderr and one of these exit codes.
export const EXIT = {
  OK: 0,
  BAD_INPUT: 2, // bad arguments, missing/invalid plan.json, stage files, .pb files
  MISMATCH: 3, // outputs differ beyond tolerance (or an output is missing)
  INTERNAL: 4, // ONNX Runtime failed to load/run a model, worker crash, bugs
};

export class RunnerError extends Error {
  constructor(message, code = EXIT.BAD_INPUT) {
    super(message);
    this.code = code;
  }
}

export const badInput = (msg) => new RunnerError(msg, EXIT.BAD_INPUT);
export const internal = (msg) => new RunnerError(msg, EXIT.INTERNAL);
