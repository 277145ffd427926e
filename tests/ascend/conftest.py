"""Tests of the compile path through the real triton-ascend 3.2 (docs/COMPILE.md), run with the
Python of its own environment (.venv-ascend, scripts/install-deps.sh). The package is imported from
python/, tdist._C and tdist-opt from build*/."""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "examples"))
# CPU ranks run the Ascend lowering; no vendor tool is on PATH here.
os.environ.setdefault("TDIST_PLATFORM", "cpu")

try:
    import triton.backends.ascend.compiler  # noqa: F401
except ImportError:  # pragma: no cover - the suite is meant for .venv-ascend only
    pytest.exit("tests/ascend needs triton-ascend: run it with .venv-ascend/bin/python -m pytest", returncode=2)
