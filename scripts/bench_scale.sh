#!/usr/bin/env bash
# The scale benchmark: generates a model of NODES nodes
# (default 1,000,000; tools/bench/make_large_model.cc), then
#  1. runs each command as its own process under /usr/bin/time -v and prints
#     its wall time, CPU time and peak RSS: info, cost, place (SGP, with its
#     simulation) and the main command (search, simulate, rewrite, write);
#  2. runs tools/bench/scale_bench, the main command's pipeline in one
#     process, which prints wall time, CPU time and peak RSS phase by phase.
#
#   scripts/bench_scale.sh [NODES] [cluster flags...]
#
# Default cluster flags: --memory-per-device 15MiB, so that the 1M-node
# model's 46 MiB of weights are split over the 4 default devices and the
# rewrite writes Send/Recv pairs (without a cap SGP keeps this model of tiny
# kernels on one device).
#
#   BUILD_DIR=build WORK_DIR=build/scale (models and outputs)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
WORK_DIR=${WORK_DIR:-$BUILD_DIR/scale}
NODES=${1:-1000000}
shift || true
CLUSTER_FLAGS=("$@")
if [[ ${#CLUSTER_FLAGS[@]} -eq 0 ]]; then CLUSTER_FLAGS=(--memory-per-device 15MiB); fi

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD_DIR" -j2 --target onnx-autopar make_large_model scale_bench >&2
mkdir -p "$WORK_DIR"
MODEL="$WORK_DIR/model_${NODES}.onnx"
if [[ ! -f "$MODEL" ]]; then
  "$BUILD_DIR/tools/bench/make_large_model" "$MODEL" --nodes "$NODES" >&2
fi
CLI="$BUILD_DIR/tools/onnx-autopar"

echo "model: $MODEL ($(du -h "$MODEL" | cut -f1), weights $(du -h "$MODEL.data" | cut -f1))"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo
echo "| command | wall s | cpu s (user + sys) | peak RSS MB |"
echo "|---|---:|---:|---:|"
run() {
  local name=$1
  shift
  local log="$WORK_DIR/time_${name// /_}.txt"
  /usr/bin/time -v "$@" >"$WORK_DIR/out_${name// /_}.txt" 2>"$log"
  awk -v name="$name" -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); wall = 0; for (i = 1; i <= n; ++i) wall = wall * 60 + t[i] }
    /User time/ { user = $2 } /System time/ { sys = $2 } /Maximum resident/ { rss = $2 / 1024 }
    END { printf "| %s | %.1f | %.1f | %.0f |\n", name, wall, user + sys, rss }' "$log"
}
run "info" "$CLI" info "$MODEL"
run "cost" "$CLI" cost "$MODEL" --top 5
run "place (sgp + simulate)" "$CLI" place "$MODEL" "${CLUSTER_FLAGS[@]}"
run "main command (split)" "$CLI" "$MODEL" -o "$WORK_DIR/out" --force --quiet "${CLUSTER_FLAGS[@]}"
echo
echo "the main command said:"
sed 's/^/    /' "$WORK_DIR/out_main_command_(split).txt"
echo
echo "scale_bench, phase by phase in one process:"
"$BUILD_DIR/tools/bench/scale_bench" "$MODEL" "$WORK_DIR/out_bench" "${CLUSTER_FLAGS[@]}"
echo "machine: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
