#!/usr/bin/env bash
# Builds one fuzz target (fuzz/) with clang's libFuzzer, ASan and UBSan into
# build-fuzz/ and runs it for SECONDS on one core.
#
#   scripts/fuzz.sh model_loader 600
#   scripts/fuzz.sh cost_graph 600
#
# Seeds are generated each time: the model loader starts from the small models
# of ONNX's backend test data (libonnx-testdata), the cost-graph reader from
# cost graphs the CLI writes for some of them plus two written below. The
# corpus grows in fuzz-out/TARGET/corpus/ and is kept between runs. The run
# goes on after a finding (fork mode); crashing, leaking, slow (>10 s) and
# memory-hungry inputs land in fuzz-out/TARGET/findings/. A fixed finding's
# input goes to fuzz/regressions/TARGET/, which ctest replays.
set -euo pipefail

cd "$(dirname "$0")/.."
usage="usage: scripts/fuzz.sh model_loader|cost_graph SECONDS"
TARGET=${1:?$usage}
RUN_SECONDS=${2:?$usage}
case "$TARGET" in model_loader | cost_graph) ;; *) echo "$usage" >&2; exit 2 ;; esac

BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
OUT=${FUZZ_OUT_DIR:-fuzz-out}/$TARGET
CLANG_VERSION=${CLANG_VERSION:-14}
# Inputs up to 16 KiB: the seed models are smaller, and a larger input only
# makes each run slower without reaching new code.
MAX_LEN=16384
TESTDATA=/usr/share/libonnx-testdata/data

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang-$CLANG_VERSION CXX=clang++-$CLANG_VERSION \
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAUTOPAR_FUZZ=ON -DBUILD_TESTING=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target "fuzz_$TARGET" onnx-autopar

mkdir -p "$OUT/corpus" "$OUT/findings"
rm -rf "$OUT/seeds"
mkdir -p "$OUT/seeds"

# --- seeds --------------------------------------------------------------------
small_models() {
  find "$TESTDATA/node" "$TESTDATA/simple" "$TESTDATA/pytorch-operator" \
    "$TESTDATA/pytorch-converted" -name model.onnx -size -"$((MAX_LEN / 1024))"k | sort
}
if [ "$TARGET" = model_loader ]; then
  small_models | while read -r model; do
    name=${model#"$TESTDATA"/}
    cp "$model" "$OUT/seeds/${name//\//_}"
  done
  # The same models claiming opset 18: the ONNX 1.12 checker skips them, so
  # they reach our own shape rules for newer opsets unchecked.
  /usr/bin/python3 - "$OUT/seeds" <<'PY'
import os, sys
import onnx
seeds = sys.argv[1]
for name in sorted(os.listdir(seeds)):
    model = onnx.load(os.path.join(seeds, name))
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, 18)
    model.ir_version = max(model.ir_version, 8)
    onnx.save(model, os.path.join(seeds, name + ".opset18"))
PY
  # Words the mutator may splice in: op types, attribute and dim names.
  {
    sed -n 's/^OP([^,]*, "[^"]*", "\([^"]*\)").*/"\1"/p' ir/op_kinds.def
    printf '"%s"\n' ai.onnx.ml com.microsoft batch sequence axis axes perm group \
      kernel_shape strides pads dilations location offset length
  } | sort -u >"$OUT/dict"
else
  cli=$BUILD_DIR/tools/onnx-autopar
  small_models | awk 'NR % 10 == 0' | while read -r model; do
    name=${model#"$TESTDATA"/}
    "$cli" cost "$model" --format costgraph --devices 2 --memory-per-device 1GB \
      >"$OUT/seeds/${name//\//_}.json" 2>/dev/null || rm -f "$OUT/seeds/${name//\//_}.json"
  done
  cat >"$OUT/seeds/hetero.json" <<'JSON'
{"nodes": [{"id": 0, "name": "a", "op": "MatMul", "compute_us": [10, 4], "param_bytes": 4096,
            "output_bytes": [1024], "temp_bytes": 64},
           {"id": 1, "name": "b", "op": "Relu", "compute_us": [1, 2], "output_bytes": [1024]},
           {"id": 2, "name": "c", "op": "Add", "compute_us": [1, 1], "output_bytes": [512]}],
 "edges": [{"src": 0, "dst": 1, "bytes": 1024, "tensor": "x"},
           {"src": 0, "dst": 2, "bytes": 1024, "tensor": "x"},
           {"src": 1, "dst": 2, "bytes": 1024, "tensor": "y"}],
 "devices": {"count": 3, "memory_bytes": [1e6, 1e6, 5e5], "kinds": [0, 1, 1],
             "bandwidth_bytes_per_s": 5e10, "latency_us": 5}}
JSON
  cat >"$OUT/seeds/no_devices.json" <<'JSON'
{"nodes": [{"id": 0, "compute_us": 3, "output_bytes": [8]}, {"id": 1, "compute_us": 0}],
 "edges": [{"src": 0, "dst": 1, "bytes": 8}]}
JSON
  printf '"%s"\n' nodes edges devices id name op compute_us param_bytes output_bytes \
    temp_bytes src dst bytes tensor count memory_bytes kinds bandwidth_bytes_per_s \
    latency_us >"$OUT/dict"
fi
echo "fuzz: $(ls "$OUT/seeds" | wc -l) seeds, $(ls "$OUT/corpus" | wc -l) inputs in the corpus"

# --- run ----------------------------------------------------------------------
# Fork mode with one job: one core, and the run goes on after a finding.
set +e
"$BUILD_DIR/fuzz/fuzz_$TARGET" "$OUT/corpus" "$OUT/seeds" \
  -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_total_time="$RUN_SECONDS" -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 \
  -dict="$OUT/dict" -artifact_prefix="$OUT/findings/" -print_final_stats=1 -print_funcs=0 \
  2>&1 | tee "$OUT/log" | grep '^#\|ERROR\|SUMMARY\|^INFO: exiting' | tail -n 40
status=${PIPESTATUS[0]}
set -e
echo "fuzz: log in $OUT/log; findings: $(ls "$OUT/findings" | wc -l) in $OUT/findings/"
exit "$status"
