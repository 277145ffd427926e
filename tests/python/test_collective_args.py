"""A bad argument to a collective binding on one PE fails the collective on every PE (InvalidParam
naming that PE and the argument) instead of raising there alone and leaving the others waiting;
the job goes on afterwards. Two CPU ranks under tdist-run."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tdist._C", reason="tdist._C not built (cmake -DTDIST_BUILD_PYTHON=ON)")

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {python!r})
    import numpy as np
    import shmem as ash, tdist
    tdist.init_from_env(local_mem_size=1 << 20, backend=tdist.BACKEND_CPU, control_timeout_s=20,
                        wait_timeout_ms=20000)
    me = tdist.my_pe()
    keep = tdist.malloc(256)
    bad = 1  # the PE that passes the bad argument
    cases = [  # (name, call on the bad PE, call on the others, what the message must say)
        ("malloc(-1)", lambda: tdist.malloc(-1), lambda: tdist.malloc(4096), "size -1 is out of range"),
        ("malloc(2**70)", lambda: tdist.malloc(2**70), lambda: tdist.malloc(64), "size 1180591620717411303424"),
        ("malloc('x')", lambda: tdist.malloc("x"), lambda: tdist.malloc(64), "size must be an int, not str"),
        ("calloc(2, -3)", lambda: tdist.calloc(2, -3), lambda: tdist.calloc(2, 3), "size -3"),
        ("align(None, 64)", lambda: tdist.align(None, 64), lambda: tdist.align(64, 64), "alignment must be an int"),
        ("free(-5)", lambda: tdist.free(-5), lambda: tdist.free(keep), "ptr -5"),
        ("split(2**40)", lambda: tdist.team_split_strided(0, 2**40, 1, 1), lambda: tdist.team_split_strided(0, 0, 1, 1),
         "start 1099511627776"),
        ("allgather(str)", lambda: tdist.ctrl_allgather("abc"), lambda: tdist.ctrl_allgather(b"abc"),
         "in must be bytes, not str"),
        ("broadcast(root='0')", lambda: tdist.ctrl_broadcast(b"12345678", "0"),
         lambda: tdist.ctrl_broadcast(b"12345678", 0), "root must be an int"),
        ("shmem malloc(-1)", lambda: ash.aclshmem_malloc(-1), lambda: ash.aclshmem_malloc(64),
         "size must be a non-negative int"),
        ("shmem tensor([-1])", lambda: ash.aclshmem_create_tensor([-1], dtype=np.float32),
         lambda: ash.aclshmem_create_tensor([4], dtype=np.float32), "negative dimension"),
    ]
    for name, on_bad, on_others, needle in cases:
        t0 = time.monotonic()
        try:
            (on_bad if me == bad else on_others)()
            print("ACCEPTED", name, flush=True)
        except tdist.InvalidParam as e:
            ok = needle in str(e) and f"PE {{bad}}" in str(e)
            print("OK" if ok else "WRONG", f"{{time.monotonic() - t0:.2f}}", name, str(e)[:200], flush=True)
        except Exception as e:
            print("WRONG", name, type(e).__name__, str(e)[:200], flush=True)
    # free(keep) failed everywhere above, so it is still live: the heap is intact and usable
    tdist.free(keep)
    tdist.ctrl_barrier()
    p = tdist.malloc(512)
    tdist.free(p)
    tdist.finalize()
    print("DONE", flush=True)
""")


def test_bad_argument_fails_the_collective_on_every_pe():
    code = SCRIPT.format(python=str(REPO / "python"))
    r = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-run"), "-n", "2", "--timeout", "120", "--",
                        sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    out = r.stdout
    assert r.returncode == 0, out[-3000:] + r.stderr[-3000:]
    for rank in (0, 1):
        lines = [ln.split("] ", 1)[1] for ln in out.splitlines() if ln.startswith(f"[rank {rank}] ")]
        bad = [ln for ln in lines if ln.startswith(("ACCEPTED", "WRONG"))]
        assert not bad, (rank, bad)
        oks = [ln for ln in lines if ln.startswith("OK ")]
        assert len(oks) == 11, (rank, lines)
        assert all(float(ln.split()[1]) < 10 for ln in oks), oks  # nobody waited for a timeout
        assert "DONE" in lines, lines
