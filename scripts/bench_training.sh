#!/usr/bin/env bash
# Training-step benchmark on one CPU thread: exports the architectures of the
# PyTorch parity test (tests/training/torch_models.py) at micro-batch size 8
# and times torch 1.13's own step on them (tools/bench/training_bench.py),
# then writes each model's training step with onnx-autopar, runs it with
# tools/runner/train.mjs on the same data, and sets the measured step beside
# torch's and beside the cost model's predictions (tools/bench/training_bench.mjs).
# Prints a Markdown report; writes tools/bench/results/training_step.{md,csv}.
# A model whose step cannot be written yet (an operator without a gradient
# rule) is a row with the error.
#
#   scripts/bench_training.sh                  all models
#   scripts/bench_training.sh --models mlp,cnn some; results stay in the work dir
#   scripts/bench_training.sh --pipeline [ARGS] the split step instead: a CNN, an
#       Inception-style network, a transformer encoder and an LSTM split over
#       cpu:2x1 at M = 8 by every placement algorithm, trained, predicted
#       against measured (tools/bench/pipeline_training_bench.mjs; ARGS go to it,
#       e.g. --rounds 2 --algos tga,sgp,single); writes
#       tools/bench/results/pipeline_training.{md,csv}
# Exit 77 (skipped) without Debian's Python torch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CLI=${AUTOPAR_CLI:-$BUILD_DIR/tools/onnx-autopar}
PYTHON=/usr/bin/python3  # Debian's, with torch, torchvision and onnx

models=
pipeline=
[ "${1:-}" = --models ] && models=$2
if [ "${1:-}" = --pipeline ]; then
  pipeline=1
  shift
fi

if ! "$PYTHON" -c 'import torch, torchvision, onnx' 2>/dev/null; then
  echo "bench_training: skipped: $PYTHON lacks torch, torchvision or onnx" >&2
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-training.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=tools/bench/results
[ -n "$models" ] && results=$work

echo "bench_training: $(uptime)" >&2
if [ -n "$pipeline" ]; then
  "$PYTHON" tools/export_models.py "$work/models" --models resnet18,googlenet,transformer_encoder,lstm >&2
  calibration=()
  [ -f tools/fidelity/host_calibration.json ] && calibration=(--host-calibration tools/fidelity/host_calibration.json)
  node tools/bench/pipeline_training_bench.mjs "$work"/models/{resnet18,googlenet,transformer_encoder,lstm}.onnx \
    --work "$work/runs" --results "$results" --cli "$CLI" "${calibration[@]}" "$@"
  exit 0
fi
"$PYTHON" tools/bench/training_bench.py "$work/models" ${models:+--models "$models"} --batch 8 --steps 10 --warmup 2 >&2
calibration=()
[ -f tools/fidelity/host_calibration.json ] && calibration=(--host-calibration tools/fidelity/host_calibration.json)
node tools/bench/training_bench.mjs "$work/models" --work "$work/runs" --results "$results" --cli "$CLI" "${calibration[@]}"
