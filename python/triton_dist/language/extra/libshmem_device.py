"""``from triton_dist.language.extra import libshmem_device``: SHMEM calls inside Triton kernels.

Dynamic path of seed 000 section 7.1: the platforms' SHMEM libraries differ, so a ModuleProxy picks
one backend module when this module is imported (``triton_dist.utils`` predicates; exactly one must
hold), and each public function below is a ``dispatch`` stub that resolves the same-named function
of that module when a kernel calling it is compiled. Names not listed here are forwarded too
(module ``__getattr__``), so backend-specific extras stay reachable.

Scopes are NVSHMEM's on CUDA (the plain form is one thread's call, ``_warp`` a warp's, ``_block``
the program's; docs/CONTRACT.md section 3 "libshmem_device scopes", docs/PORTING.md). A name tdist
does not provide fails when the kernel is compiled, naming itself and the backend module.

Backends: CUDA -> ``extra.cuda.libshmem_device`` (stock Triton, inline PTX + tdist bitcode);
Ascend and CPU ranks -> ``extra.ascend.libaclshmem_device`` (aclshmem calls under triton-ascend; CPU
ranks run the Ascend lowering, docs/COMPILE.md); HIP, MACA -> not provided (calls fail at compile
time naming the platform).
"""
from ...utils import is_ascend, is_cpu, is_cuda, is_hip, is_maca
from . import unsupported as _unsupported
from ._proxy import ModuleProxy, dispatch


def _cuda():
    from .cuda import libshmem_device as m
    return m


def _ascend():
    from .ascend import libaclshmem_device as m
    return m


_CANDIDATES = [
    (is_cuda, _cuda),
    (is_ascend, _ascend),
    (is_hip, lambda: _unsupported.make("hip", "tdist has no HIP backend")),
    (is_maca, lambda: _unsupported.make("maca", "tdist has no MACA backend")),
    # CPU ranks run the Ascend lowering (docs/COMPILE.md section 4): the same aclshmem calls.
    (is_cpu, _ascend),
]


def _select():
    # Only the selected platform's module is imported (seed 7.4: no other vendor's code is loaded);
    # ModuleProxy re-checks that exactly one predicate holds and names them if not.
    hits = [make for p, make in _CANDIDATES if p()]
    module = hits[0]() if len(hits) == 1 else None
    return ModuleProxy([(p, module) for p, _ in _CANDIDATES])


_proxy = _select()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_proxy, name)


@dispatch(_proxy)
def my_pe():
    """This PE's id."""


@dispatch(_proxy)
def n_pes():
    """Number of PEs."""


@dispatch(_proxy)
def remote_ptr(ptr, pe):
    """Address of symmetric ``ptr`` on PE ``pe``."""


@dispatch(_proxy)
def putmem(dst, src, nbytes, pe):
    """Copy ``nbytes`` from local ``src`` to symmetric ``dst`` on ``pe``."""


@dispatch(_proxy)
def getmem(dst, src, nbytes, pe):
    """Copy ``nbytes`` from symmetric ``src`` on ``pe`` to local ``dst``."""


def _variants(base):
    out = {}
    for suffix in ("_block", "_warp", "_nbi", "_nbi_block", "_nbi_warp"):
        name = base + suffix

        def stub(*args):
            pass

        stub.__name__ = name
        stub.__qualname__ = name
        stub.__doc__ = f"{base} variant; see the backend module for its scope."
        out[name] = dispatch(_proxy)(stub)
    return out


globals().update(_variants("putmem"))
globals().update(_variants("getmem"))


@dispatch(_proxy)
def putmem_signal(dst, src, nbytes, sig_addr, signal, sig_op, pe):
    """``putmem`` then a release update of the signal at ``sig_addr`` on ``pe``."""


globals().update(_variants("putmem_signal"))


@dispatch(_proxy)
def signal_op(sig_addr, signal, sig_op, pe):
    """Release update (SET / ADD) of the signal at ``sig_addr`` on ``pe``."""


@dispatch(_proxy)
def signal_wait_until(sig_addr, cmp, cmp_val):
    """Acquire wait until ``*sig_addr <cmp> cmp_val``; returns the value seen."""


@dispatch(_proxy)
def barrier_all():
    """Barrier across all PEs, one participant per PE (CUDA: the calling thread; see the backend)."""


@dispatch(_proxy)
def fence():
    """Order earlier puts before later ones."""


@dispatch(_proxy)
def quiet():
    """Complete outstanding puts."""


def _stubs(names, doc):
    out = {}
    for name in names:
        def stub(*args):
            pass

        stub.__name__ = stub.__qualname__ = name
        stub.__doc__ = doc
        out[name] = dispatch(_proxy)(stub)
    return out


globals().update(_stubs(["team_my_pe", "team_n_pes", "team_translate_pe"],
                        "Device-side teams (the world team; node and shared are the world team)."))
globals().update(_stubs(["barrier_all_block", "barrier_all_warp", "barrier", "barrier_block", "barrier_warp",
                         "sync_all", "sync_all_block", "sync_all_warp", "sync", "team_sync_block", "team_sync_warp",
                         "barrier_all_grid"], "Barriers across PEs; see the backend module for their scope."))
globals().update(_stubs(["quiet_pe"], "Complete outstanding puts (to every PE)."))
globals().update(_stubs(["int_p", "int_g", "int32_p", "int64_p", "uint64_p", "int32_g", "int64_g", "uint64_g"],
                        "Single-element put (release) / get; other NVSHMEM type names are forwarded too."))
globals().update(_stubs([f"{t}_wait_until{e}" for t in ("int32", "int64", "uint64") for e in ("", "_equals")],
                        "Typed wait (the device ABI's one wait); returns the value seen."))
globals().update(_stubs([f"{c}{m}{s}" for c in ("broadcast", "fcollect") for m in ("", "mem")
                         for s in ("", "_warp", "_block")],
                        "Collective over a team: every PE of the team calls it."))
