#!/usr/bin/env bash
# Configure and build everything this machine can build (MLIR compiler when libmlir-22-dev is
# present, NVIDIA backend + bitcode when the CUDA toolkit / clang-19 are), plus the Python
# extension. Build directory: $TDIST_BUILD_DIR (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh  # .venv's python3 (and its nanobind) for the extension
BUILD=${TDIST_BUILD_DIR:-build}
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" "${GEN[@]}" -DTDIST_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" "$@"
fi
cmake --build "$BUILD" -j"$(nproc)"
