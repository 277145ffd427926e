#!/usr/bin/env bash
# Installs everything tdist needs on a fresh Debian 12 machine: Debian packages, then PyPI ones
# (into the virtual environment .venv).
# Idempotent; safe to run again.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
DEBS=(build-essential cmake ninja-build git pkg-config python3-venv
      libgtest-dev libgmock-dev libbenchmark-dev libssl-dev
      libopenmpi-dev openmpi-bin libucx-dev iproute2
      clang-19 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools)
missing=()
for p in "${DEBS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[install-deps] apt: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
PY=${PYTHON:-python3}
# PyPI packages go into the project's virtual environment (.venv, or $TDIST_VENV; python3-venv
# above), which the other scripts put first on PATH (scripts/env.sh): Debian's own Python refuses
# pip installs outside one (externally managed).
VENV=${TDIST_VENV:-"$(dirname "$0")/../.venv"}
if [ ! -x "$VENV/bin/python" ]; then
  $PY -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$(dirname "$0")/../requirements.txt"
# triton-ascend is itself a package named `triton`, so it gets its own virtual environment, made
# from the same Python (tdist's extension loads in both): the Ascend compile path and CPU ranks.
VENV_ASCEND=${TDIST_ASCEND_VENV:-"$(dirname "$0")/../.venv-ascend"}
if [ ! -x "$VENV_ASCEND/bin/python" ]; then
  $PY -m venv "$VENV_ASCEND"
fi
"$VENV_ASCEND/bin/python" -m pip install -q --disable-pip-version-check triton-ascend==3.2.0 pybind11 numpy pytest
# torch, for the torch integration tests (tests/torch: init_from_torch, group=, torch.compile tracing
# of the custom ops): its own environment, so that the main one keeps requirements.txt's Triton pin
# and the quick start stays light. torch 2.11.0 is what the GPU machine has; it brings Triton 3.6.0.
VENV_TORCH=${TDIST_TORCH_VENV:-"$(dirname "$0")/../.venv-torch"}
if [ ! -x "$VENV_TORCH/bin/python" ]; then
  $PY -m venv "$VENV_TORCH"
fi
"$VENV_TORCH/bin/python" -m pip install -q --disable-pip-version-check torch==2.11.0 numpy pytest
echo "[install-deps] done"
