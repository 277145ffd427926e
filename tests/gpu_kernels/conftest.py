"""tests/gpu_kernels: CPU-side compile and validation tests, plus the multi-rank GPU worker.

The kernels are compiled ahead of time for sm_90 without a GPU, so TDIST_PLATFORM defaults to cuda
here (libshmem_device then selects its CUDA backend on machines without nvidia-smi)."""
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("TDIST_PLATFORM", "cuda")
os.environ["TRITON_ALWAYS_COMPILE"] = "1"
