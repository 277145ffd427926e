"""Multi-rank GPU checks of the MoE dispatch / combine (tests/gpu_kernels/moe_gpu_worker.py under
tools/tdist-run; several ranks on one GPU under MPS, or one per GPU). Skipped, with the reason,
without a CUDA GPU, torch, the tdist bindings or the bitcode."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from gpu_worker_launch import gpu_skip_reason, run_worker  # noqa: E402

_reason = gpu_skip_reason()


@pytest.mark.skipif(_reason is not None, reason=f"MoE GPU tests need a GPU run: {_reason}")
@pytest.mark.parametrize("ranks", [int(n) for n in os.environ.get("TDIST_TEST_RANKS", "2,4,8").split(",")])
def test_moe_gpu_worker(ranks):
    run_worker(Path(__file__).with_name("moe_gpu_worker.py"), ranks, 600)
