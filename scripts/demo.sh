#!/usr/bin/env bash
# The main job on an example model: exports ResNet-18 (random weights, no
# download) with Debian's torch, shows what onnx-autopar makes of it (contents,
# costs), splits it across four GPUs into out/resnet18/ (4 pipelined
# micro-batches per step, so spreading the layers pays), and runs the split
# model in ONNX Runtime against the original.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODELS_DIR=${MODELS_DIR:-models}
OUT_DIR=${OUT_DIR:-out/resnet18}
CLI="$BUILD_DIR/tools/onnx-autopar"

/usr/bin/python3 tools/export_models.py "$MODELS_DIR" --models resnet18
"$CLI" info "$MODELS_DIR/resnet18.onnx"
echo
"$CLI" cost "$MODELS_DIR/resnet18.onnx" --device V100 --top 5
echo
mkdir -p "$(dirname "$OUT_DIR")"
"$CLI" "$MODELS_DIR/resnet18.onnx" -o "$OUT_DIR" --devices 4 --device V100 --microbatches 4 --stages --force
echo
if [ -d tools/runner/node_modules/onnxruntime-node ]; then
  node tools/runner/run_deployment.mjs "$OUT_DIR" --check "$MODELS_DIR/resnet18.onnx"
else
  echo "demo: tools/runner is not installed (needs node and npm); skipping the ONNX Runtime check"
fi
