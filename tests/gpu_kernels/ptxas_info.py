"""What Triton's own ptxas reports for a kernel's PTX on sm_90a (no GPU needed), for the compile tests."""
import os
import re
import subprocess
import tempfile

import pytest


def spill_stores(ptx):
    """Bytes of spill stores per thread that ptxas reports for ``ptx`` on sm_90a: the ptxas Triton
    itself compiled the PTX for (its bundled one, or ``TRITON_PTXAS_PATH``), since the PTX version
    follows that ptxas."""
    from triton.backends.nvidia.compiler import get_ptxas
    ptxas = get_ptxas(90).path
    if not ptxas or not os.path.exists(ptxas):
        pytest.skip("no ptxas for Triton's NVIDIA backend")
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", f.name, "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = re.findall(r"(\d+) bytes spill stores", r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    return max(int(v) for v in m)
