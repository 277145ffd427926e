"""``from triton_dist.language.extra.language_extra import tid, ld, st, ...``: the SIMT layer of
kernels written for Triton-distributed (thread index, scoped loads and stores, atomics, shuffles,
timers, ``wait_eq``).

A ModuleProxy picks the platform's module when this module is imported (``triton_dist.utils``
predicates): CUDA -> ``extra.cuda.language_extra`` (inline PTX of the primitives, the device ABI's
wait). There is no SIMT layer on the other platforms: an Ascend program is one vector core, and CPU
ranks run the Ascend lowering; every name fails at compile time naming itself and the platform.
"""
from ...utils import is_ascend, is_cpu, is_cuda, is_hip, is_maca
from . import unsupported as _unsupported
from ._proxy import ModuleProxy


def _cuda():
    from .cuda import language_extra as m
    return m


def _none(platform):
    return lambda: _unsupported.make(platform, "language_extra is the CUDA SIMT layer (thread indices, scoped PTX "
                                     "loads and stores); tdist has none for this platform", "language_extra")


_CANDIDATES = [(is_cuda, _cuda), (is_ascend, _none("ascend")), (is_hip, _none("hip")), (is_maca, _none("maca")),
               (is_cpu, _none("cpu"))]


def _select():
    hits = [make for p, make in _CANDIDATES if p()]
    module = hits[0]() if len(hits) == 1 else None
    return ModuleProxy([(p, module) for p, _ in _CANDIDATES])


_proxy = _select()
__all__ = list(getattr(_proxy.active_module, "__all__", []))


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return getattr(_proxy, name)
