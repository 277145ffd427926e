"""Bad input to the shmem host package gets a tdist error naming the problem, and loses nothing
(one CPU rank, in a subprocess so no tdist state leaks into other tests)."""
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {python!r})
    import numpy as np
    import shmem as ash, tdist
    ash.set_conf_store_tls(False, "")
    a = ash.InitAttr(); a.my_rank, a.n_ranks, a.local_mem_size = 0, 1, 1 << 20
    a.ip_port = "tcp://127.0.0.1:{port}"; a.option_attr.backend = "cpu"
    ash.aclshmem_init(a)
    free_before = tdist.heap_free_bytes()
    cases = [
        ("malloc(-1)", lambda: ash.aclshmem_malloc(-1), "InvalidParam", "size must be a non-negative int"),
        ("malloc('x')", lambda: ash.aclshmem_malloc("x"), "InvalidParam", "size must be a non-negative int"),
        ("calloc(2, -3)", lambda: ash.aclshmem_calloc(2, -3), "InvalidParam", "size must be a non-negative int"),
        ("tensor([-1])", lambda: ash.aclshmem_create_tensor([-1], dtype=np.float32), "InvalidParam",
         "negative dimension"),
        ("tensor(object)", lambda: ash.aclshmem_create_tensor([4], dtype=object), "InvalidParam",
         "cannot live in the symmetric heap"),
        ("tensor(huge)", lambda: ash.aclshmem_create_tensor([2**40], dtype=np.float32), "MallocFailed",
         "bytes requested"),
        ("ptr(pe=5)", lambda: ash.aclshmem_ptr(0, 5), "InvalidParam", "out of range"),
        ("free(foreign)", lambda: ash.aclshmem_free(12345), "InvalidParam", "not in the symmetric heap"),
        ("free_tensor(foreign)", lambda: ash.aclshmem_free_tensor(np.zeros(4)), "InvalidParam",
         "not the start of a tensor"),
    ]
    for name, fn, exc, msg in cases:
        try:
            fn()
            print("ACCEPTED", name)
        except Exception as e:
            ok = type(e).__name__ == exc and msg in str(e)
            print("OK" if ok else "WRONG", name, type(e).__name__, str(e)[:160])
    # nothing was lost: the heap is whole and still works
    print("HEAP", tdist.heap_free_bytes() == free_before)
    t = ash.aclshmem_create_tensor([8], dtype=np.float64)
    t[:] = np.arange(8)
    print("USABLE", bool((t == np.arange(8)).all()))
    ash.aclshmem_free_tensor(t)
    ash.aclshmem_finalize()
""")


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_bad_input_is_refused_and_loses_nothing():
    code = SCRIPT.format(python=str(REPO / "python"), port=_free_port())
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    bad = [ln for ln in lines if ln.startswith(("ACCEPTED", "WRONG"))]
    assert not bad, bad
    assert sum(ln.startswith("OK ") for ln in lines) == 9, r.stdout
    assert "HEAP True" in lines and "USABLE True" in lines, r.stdout
