#!/usr/bin/env bash
# --microbatches auto on a real host: exports three models
# (tools/bench/fidelity_models.py: cnn_b8, inception, bert_like), measures
# their node times here, plans each for `--cluster cpu:2x1` with the fixed
# counts M = 1, 2, 4, 8, 16 and with `--microbatches auto --max-microbatches
# 16`, runs every split with tools/runner and compares auto's measured time
# per sample with the best measured fixed count
# (tools/bench/microbatches_bench.mjs). Prints a Markdown report and writes
# tools/bench/results/microbatches.md (with the date and the load average).
# A benchmark, not a test: the numbers are only as good as the host is idle,
# so run it when the load average is low (it prints it first).
#
#   scripts/bench_microbatches.sh [--quick] [flags for microbatches_bench.mjs]
#
#   --quick   one model (bert_like), 2 rounds; results stay in the temporary work dir
# Exit 77 (skipped) without Debian's Python torch. Deployments go to a
# temporary dir; the exported models are cached in $BUILD_DIR/fidelity_models.
# The host calibration tools/fidelity/host_calibration.json is used when it
# exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CLI=${AUTOPAR_CLI:-$BUILD_DIR/tools/onnx-autopar}
PYTHON=/usr/bin/python3  # Debian's, with torch and onnx

quick=0
args=()
for a in "$@"; do
  if [ "$a" = --quick ]; then quick=1; else args+=("$a"); fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-microbatches.XXXXXX")
trap 'rm -rf "$work"' EXIT

if ! "$PYTHON" -c 'import torch, onnx' 2>/dev/null; then
  echo "bench_microbatches: skipped: $PYTHON lacks torch or onnx (apt-get install python3-torch python3-onnx)" >&2
  exit 77
fi
[ -x "$CLI" ] || cmake --build "$BUILD_DIR" -j2 --target onnx-autopar >&2

models_dir=$BUILD_DIR/fidelity_models
if ((quick)); then
  models=bert_like
  results=$work
  args=(--rounds 2 "${args[@]}")
else
  models=cnn_b8,inception,bert_like
  results=tools/bench/results
fi
"$PYTHON" tools/bench/fidelity_models.py "$models_dir" --models "$models" >&2
paths=()
IFS=, read -ra names <<<"$models"
for m in "${names[@]}"; do paths+=("$models_dir/$m.onnx"); done

calibration=()
[ -f tools/fidelity/host_calibration.json ] && calibration=(--host-calibration tools/fidelity/host_calibration.json)

echo "bench_microbatches: $(uptime)" >&2
node tools/bench/microbatches_bench.mjs "${paths[@]}" --work "$work" --results "$results" --cli "$CLI" \
  "${calibration[@]}" "${args[@]}"
