#!/usr/bin/env bash
# All tests: C++ unit and multi-process suites, kernels, compiler lit tests (ctest), then the
# Python tests (pytest). GPU tests skip with a reason on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh  # .venv: python3, pytest, lit, FileCheck
./scripts/build.sh
BUILD=${TDIST_BUILD_DIR:-build}
ctest --test-dir "$BUILD" --output-on-failure -j2 --timeout 900
# one pytest process per suite: each folder has its own conftest.py helpers
for suite in tests/python tests/gpu_kernels tests/launcher tests/multihost; do
  python3 -m pytest -q -rs "$suite"
done
# The compile path through the real triton-ascend, and dl.* kernels on CPU ranks (docs/COMPILE.md),
# in triton-ascend's own environment (scripts/install-deps.sh makes it).
VENV_ASCEND=${TDIST_ASCEND_VENV:-.venv-ascend}
"$VENV_ASCEND/bin/python" -m pytest -q -rs tests/ascend
# torch integration (shmem.init_from_torch, group=, the ops as torch.library custom ops traced by
# torch.compile) on CPU ranks, in the torch environment (scripts/install-deps.sh makes it).
VENV_TORCH=${TDIST_TORCH_VENV:-.venv-torch}
"$VENV_TORCH/bin/python" -m pytest -q -rs tests/torch
