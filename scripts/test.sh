#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test with ctest, then builds a
# second tree with AddressSanitizer + UndefinedBehaviorSanitizer
# (AUTOPAR_SANITIZE) and runs the fast tests again under them: all but the
# node-driven ones labelled "slow", and with the fuzzers' regression inputs.
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
  # -O1 and assertions on: a quicker build than -O2 and readable reports.
  # Any sanitizer report aborts the test that caused it.
  cmake -S . -B "$ASAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DAUTOPAR_SANITIZE=ON -DAUTOPAR_BENCHMARKS=OFF >/dev/null
  cmake --build "$ASAN_BUILD_DIR"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -j2 -LE slow
fi
