#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test with ctest, then builds a
# second tree with AddressSanitizer + UndefinedBehaviorSanitizer
# (AUTOPAR_SANITIZE) and runs the model-handling tests again under them (see
# below), with the fuzzers' regression inputs.
# This is what CI runs (.ci/run).
#
#   scripts/test.sh
#   SANITIZE=0 scripts/test.sh      skip the sanitizer run
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}

scripts/setup.sh
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2

if [ "${SANITIZE:-1}" != 0 ]; then
  # Kept to what fits CI's 30 minutes next to the first build: -O0 with line
  # tables (assertions on, readable reports), no benchmark programs, and the
  # test folders that parse, check and rewrite models (plus the bad-input
  # corpus and the fuzzers' regression inputs, which run the cost model and
  # the simulator too); the cost model's, the placers' and the CLI's own tests
  # run in the first tree only. Any sanitizer report fails its test.
  cmake -S . -B "$ASAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DAUTOPAR_WERROR=ON \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DAUTOPAR_SANITIZE=ON -DAUTOPAR_BENCHMARKS=OFF \
    -DAUTOPAR_TEST_FOLDERS="ir;shapes;onnx_io;passes;robustness" >/dev/null
  cmake --build "$ASAN_BUILD_DIR"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -j2 -LE slow
fi
