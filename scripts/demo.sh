#!/usr/bin/env bash
# The main job on an example model: exports ResNet-18 (random weights, no
# download) with Debian's torch, then shows what onnx-autopar makes of it:
# contents, costs, and a placement on four GPUs.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODELS_DIR=${MODELS_DIR:-models}
CLI="$BUILD_DIR/tools/onnx-autopar"

/usr/bin/python3 tools/export_models.py "$MODELS_DIR" --models resnet18
"$CLI" info "$MODELS_DIR/resnet18.onnx"
echo
"$CLI" cost "$MODELS_DIR/resnet18.onnx" --device V100 --top 5
echo
"$CLI" place "$MODELS_DIR/resnet18.onnx" --devices 4 --device V100
