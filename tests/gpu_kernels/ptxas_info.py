"""What Triton's own ptxas reports for a kernel's PTX on sm_90a (no GPU needed), for the compile tests."""
import os
import re
import subprocess
import tempfile

import pytest
import triton


def spill_stores(ptx):
    """Bytes of spill stores per thread that ptxas (Triton's own) reports for ``ptx`` on sm_90a."""
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    if not os.path.exists(ptxas):
        pytest.skip("Triton's ptxas is not installed")
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", f.name, "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = re.findall(r"(\d+) bytes spill stores", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    return max(int(v) for v in m)
