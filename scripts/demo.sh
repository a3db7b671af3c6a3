#!/usr/bin/env bash
# The main job on an example model: exports ResNet-18 (random weights, no
# download) with Debian's torch, shows what onnx-autopar makes of it (contents,
# costs), measures its node times on this machine with ONNX Runtime, splits it
# for this machine's cores as two devices of one thread each (`--cluster
# cpu:2x1`, 8 pipelined micro-batches per step, so a 2-stage pipeline pays)
# into out/resnet18/, and runs the split model's pipelined step in ONNX
# Runtime, timed and checked against the original on every micro-batch.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODELS_DIR=${MODELS_DIR:-models}
OUT_DIR=${OUT_DIR:-out/resnet18}
CLI="$BUILD_DIR/tools/onnx-autopar"
CALIBRATION=tools/fidelity/host_calibration.json

/usr/bin/python3 tools/export_models.py "$MODELS_DIR" --models resnet18
"$CLI" info "$MODELS_DIR/resnet18.onnx"
echo
"$CLI" cost "$MODELS_DIR/resnet18.onnx" --device V100 --top 5
echo
mkdir -p "$(dirname "$OUT_DIR")"
if [ ! -d tools/runner/node_modules/onnxruntime-node ]; then
  # Without ONNX Runtime there is nothing to measure or run on: plan from
  # the cost model alone.
  "$CLI" "$MODELS_DIR/resnet18.onnx" -o "$OUT_DIR" --cluster cpu:2x1 --host-calibration "$CALIBRATION" \
    --microbatches 8 --stages --force
  echo "demo: tools/runner is not installed (needs node and npm); skipping the measurement and the ONNX Runtime run"
  exit 0
fi
TIMES="$(dirname "$OUT_DIR")/resnet18_times.json"
node tools/fidelity/measure.mjs "$MODELS_DIR/resnet18.onnx" -o "$TIMES" --runs 10
echo
"$CLI" "$MODELS_DIR/resnet18.onnx" -o "$OUT_DIR" --cluster cpu:2x1 --host-calibration "$CALIBRATION" \
  --node-times "$TIMES" --microbatches 8 --stages --force
echo
node tools/runner/run_deployment.mjs "$OUT_DIR" --microbatches 8 --repeat 5 --warmup 2 --check "$MODELS_DIR/resnet18.onnx"
