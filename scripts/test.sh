#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test with ctest. This is what CI
# runs (.ci/run).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

scripts/setup.sh
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
