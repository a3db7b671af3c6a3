#!/usr/bin/env bash
# Installs what onnx-autopar needs on Debian 12 (only what is missing) and
# builds it into build/. Safe to run again: a second run only rebuilds.
#
#   scripts/setup.sh            install dependencies and build
#   BUILD_DIR=out scripts/setup.sh
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

# Debian packages: compilers and build tools, the libraries the code links,
# ONNX's backend test data, and Debian's torch for exporting example models.
PACKAGES=(
  g++ cmake ninja-build clang-format
  libonnx-dev libprotobuf-dev protobuf-compiler libabsl-dev nlohmann-json3-dev
  libssl-dev  # SHA-256 of the source model in plan.json (libcrypto)
  libgtest-dev libgmock-dev
  libonnx-testdata
  python3-onnx python3-torch python3-torchvision
  chromium chromium-driver  # tests/e2e/report_browser.test.mjs opens report.html
)

# Node.js runs the ONNX Runtime verifier (tools/runner). Images that ship their
# own node (NodeSource) keep it; elsewhere Debian's nodejs and npm are used.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTOPAR_WERROR=ON >/dev/null
cmake --build "$BUILD_DIR"

# --- ORT runner (tools/runner): onnxruntime-node from the npm registry -------
# Node/npm are not installed here: on this image they come from NodeSource.
# "skip" stops onnxruntime-node's postinstall from downloading CUDA libraries.
if [ ! -d tools/runner/node_modules/onnxruntime-node ]; then
  if command -v npm >/dev/null; then
    echo "setup: installing tools/runner dependencies (npm ci)"
    (cd tools/runner && ONNXRUNTIME_NODE_INSTALL=skip npm ci --onnxruntime-node-install=skip --no-audit --no-fund)
  else
    echo "setup: npm not found; skipping tools/runner (the ORT runner needs node >= 20 and npm)"
  fi
fi
# --- end ORT runner -----------------------------------------------------------

echo "setup: built $BUILD_DIR/tools/onnx-autopar"
