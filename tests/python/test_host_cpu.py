"""Host package on CPU ranks (no GPU): bindings, errors, shmem.InitAttr, numpy tensors on the heap."""
import multiprocessing as mp
import socket
import sys
from pathlib import Path

import pytest

pytest.importorskip("tdist._C", reason="tdist._C not built (cmake -DTDIST_BUILD_PYTHON=ON)")
import tdist  # noqa: E402
import shmem as ash  # noqa: E402


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def test_not_initialized_errors():
    with pytest.raises(tdist.NotInitialized, match="before tdist_init"):
        tdist.malloc(64)
    with pytest.raises(tdist.NotInitialized):
        ash.aclshmem_create_tensor([4], "float32")
    assert issubclass(tdist.TimeoutError_, TimeoutError) and tdist.MallocFailed.code == -8


def test_init_attr_validation():
    a = ash.InitAttr()
    a.my_rank, a.n_ranks, a.local_mem_size = 0, 2, 1 << 20
    for ip, msg in (("127.0.0.1:9000", "must be 'tcp://host:port'"), ("tcp://127.0.0.1:80", "port must be")):
        a.ip_port = ip
        with pytest.raises(tdist.InvalidParam, match=msg):
            a.validate()
    a.ip_port = "tcp://127.0.0.1:9000"
    a.my_rank = 2
    with pytest.raises(tdist.InvalidParam, match=r"my_rank=2 must be in \[0, n_ranks=2\)"):
        a.validate()
    with pytest.raises(tdist.InvalidParam, match="'cert' is not key=value"):
        ash.set_conf_store_tls(True, "cert")
    with pytest.raises(tdist.InvalidParam, match="tls_info must be a str"):
        ash.set_conf_store_tls(True, None)
    assert ash.OpEngineType.MTE == 1 and ash.OpEngineType.UDMA == 8


def test_stream_api_validation_without_a_gpu():
    """The stream forms check their arguments before reaching the CUDA backend, and without it fail
    with a named error (never a crash)."""
    with pytest.raises(tdist.InvalidParam, match="cmp='above' is not one of"):
        ash.signal_wait_until_on_stream(0, "above", 1, stream=0)
    with pytest.raises(tdist.InvalidParam, match="sig_op='xor' is not 'set' or 'add'"):
        ash.signal_op_on_stream(0, 1, 0, sig_op="xor", stream=0)
    with pytest.raises(tdist.InvalidParam, match="nbytes is required"):
        ash.putmem_on_stream(0, 0, 0, stream=0)
    with pytest.raises(tdist.InvalidParam, match="needs a torch CUDA tensor"):
        ash.peer_tensor(object(), 0)
    with pytest.raises(tdist.InvalidParam, match="peer_stack: needs a torch CUDA tensor"):
        ash.peer_stack(object())
    import numpy as np
    with pytest.raises(tdist.InvalidParam, match="src must be contiguous"):
        ash.putmem_on_stream(0, np.zeros((4, 4))[:, ::2], 0, stream=0)
    with pytest.raises(tdist.TdistError, match="tdist_cuda_signal_on_stream"):
        ash.signal_op_on_stream(0, 1, 0, stream=0)  # no CUDA backend here: NotInitialized / NotSupported


def _worker(rank, n, port, q):
    try:
        import numpy as np
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
        import shmem as ash
        import tdist
        ash.set_conf_store_tls(False, "")
        a = ash.InitAttr()
        a.my_rank, a.n_ranks, a.local_mem_size = rank, n, 1 << 20
        a.ip_port = f"tcp://127.0.0.1:{port}"
        a.option_attr.backend = "cpu"
        ash.aclshmem_init(a)
        seed = int.from_bytes(tdist.ctrl_broadcast(np.random.bytes(4), 0), "little")
        t = ash.aclshmem_create_tensor([4, 8], dtype=np.float64)
        t[:] = np.random.default_rng(seed + rank).standard_normal((4, 8))
        ash.barrier_all()
        results = {}
        import ctypes
        peer = (rank + 1) % n
        raw = (ctypes.c_double * 32).from_address(ash.aclshmem_ptr(ash.data_ptr(t), peer))
        results["peer_read"] = np.array_equal(np.frombuffer(raw, dtype=np.float64).reshape(4, 8),
                                              np.random.default_rng(seed + peer).standard_normal((4, 8)))
        try:
            ash.aclshmem_create_tensor([4 + rank], dtype=np.float32)
            results["mismatch"] = False
        except tdist.CollectiveMismatch as e:
            results["mismatch"] = "mismatch" in str(e)
        try:
            ash.check_symmetric(np.zeros(4))
            results["check_symmetric"] = False
        except tdist.InvalidParam:
            results["check_symmetric"] = True
        ash.barrier_all()
        ash.aclshmem_free_tensor(t)
        ash.aclshmem_finalize()
        q.put((rank, results))
    except Exception as e:  # report, never hang the parent
        q.put((rank, repr(e)))


@pytest.mark.parametrize("n", [2, 3])
def test_cpu_ranks(n):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    ps = [ctx.Process(target=_worker, args=(r, n, port, q)) for r in range(n)]
    for p in ps:
        p.start()
    got = dict(q.get(timeout=120) for _ in ps)
    for p in ps:
        p.join(30)
    for r in range(n):
        assert got[r] == {"peer_read": True, "mismatch": True, "check_symmetric": True}, got


def test_exit_without_finalize_keeps_the_exit_code(tmp_path):
    """A rank that raises after tdist_init (no finalize) exits with Python's code 1, not a signal from
    tearing the runtime down during static destruction."""
    import subprocess
    repo = Path(__file__).resolve().parents[2]
    script = tmp_path / "noexit.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(repo / 'python')!r})\n"
        "import shmem as ash, tdist\n"
        "ash.init_from_env(local_mem_size=1 << 24)\n"
        "t = ash.aclshmem_create_tensor([16], 'float32')\n"
        "ash.barrier_all()\n"
        "if tdist.my_pe() == 1:\n"
        "    raise RuntimeError('deliberate: exit without finalize')\n"
        "print('rank', tdist.my_pe(), 'left without finalize', flush=True)\n")
    r = subprocess.run([sys.executable, str(repo / "tools" / "tdist-run"), "-n", "2", "--", sys.executable,
                        str(script)], capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "rank 1 failed (code 1)" in out and "signal" not in out, out
