#!/usr/bin/env bash
# The placement benchmark: builds tools/bench/placement_bench,
# exports the real models it places (tools/export_models.py skips those that
# are up to date), runs it, prints its Markdown table on stdout and writes
# every measurement to a CSV file.
#
#   scripts/bench_placement.sh [--quick] [placement_bench flags...]
#
# The full run: every algorithm × the graph families at 1k, 10k and 100k units
# and the six models × 2, 4 and 8 devices × loose and tight memory (tens of
# minutes on two cores, mostly TGA's budget of 2 s a run). --quick: 1k and 10k
# units, 2 and 8 devices, a 1 s budget (a few minutes). See
# tools/bench/placement_bench.cc for the other flags (--algos, --families,
# --models, --max-units, --max-units-for ALGO=N, --time-budget S, --csv FILE).
# --node-level judges every plan node by node instead (list schedulers on the
# nodes, TGA refining below its units; --sizes, --devices, --memory, and
# algorithm names such as tga@10 for TGA with 10 s).
#
#   BUILD_DIR=build MODELS_DIR=build/models CSV=build/placement_bench.csv
#   SKIP_EXPORT=1 (use whatever models MODELS_DIR has)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODELS_DIR=${MODELS_DIR:-$BUILD_DIR/models}
CSV=${CSV:-$BUILD_DIR/placement_bench.csv}
MODELS=resnet50,inception_v3,transformer_seq2seq,bert_base_like,gpt2_small_like,lstm_seq2seq

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD_DIR" -j2 --target placement_bench >&2
if [[ -z "${SKIP_EXPORT:-}" ]]; then
  /usr/bin/python3 tools/export_models.py "$MODELS_DIR" --models "$MODELS" >&2
fi
"$BUILD_DIR/tools/bench/placement_bench" --models-dir "$MODELS_DIR" --models "$MODELS" \
  --csv "$CSV" "$@"
echo "CSV: $CSV" >&2
