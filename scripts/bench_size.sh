#!/usr/bin/env bash
# How long `onnx-autopar size` takes, the interactive case: ResNet-50 on 1..16
# V100s with the default micro-batch search (1..32), once on one thread and
# once with the default threads (this machine's cores, at most 16). Prints
# each run's wall and CPU time, the machine's cores and its load (the CPU
# time is what a run costs; the wall time also shows what else ran).
#
#   scripts/bench_size.sh [MODEL.onnx] [MAX_DEVICES]
#
#   BUILD_DIR=build; the model defaults to the exported ResNet-50
#   ($BUILD_DIR/models/resnet50.onnx, tools/export_models.py writes it).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODEL=${1:-$BUILD_DIR/models/resnet50.onnx}
MAX_DEVICES=${2:-16}

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD_DIR" -j2 --target onnx-autopar >&2
if [[ ! -f "$MODEL" ]]; then
  echo "$MODEL is missing: /usr/bin/python3 tools/export_models.py $BUILD_DIR/models" >&2
  exit 2
fi
CLI="$BUILD_DIR/tools/onnx-autopar"

echo "size $MODEL --device V100 --max-devices $MAX_DEVICES"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for threads in 1 default; do
  flags=()
  [[ $threads != default ]] && flags=(--threads "$threads")
  /usr/bin/time -f "threads $threads: %e s wall, %U s CPU (user), peak RSS %M KiB" \
    "$CLI" size "$MODEL" --device V100 --max-devices "$MAX_DEVICES" --quiet "${flags[@]}" \
    >/dev/null
done
