#!/usr/bin/env bash
# The main job on the CPU backend: install dependencies, build, then run the reverse all-to-all
# (EP MoE combine) across 4 local ranks, checked against a reference, with its bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
source scripts/env.sh
./scripts/build.sh
BUILD=${TDIST_BUILD_DIR:-build}
exec "$BUILD/tools/tdist-run" -n 4 --timeout 600 -- "$BUILD/examples/alltoall_cpu"
