"""tdist's Triton front end: ``triton_dist.language`` (dl.*) and ``language.extra.libshmem_device``;
``triton_dist.jit`` and ``triton_dist.utils``'s host helpers under Triton-distributed's names."""
from . import utils  # noqa: F401
from . import _bitcode
from ._bitcode import find_bitcode, BitcodeNotFound, LIB_NAME  # noqa: F401
from .jit import jit  # noqa: F401


def extern_libs():
    """``{"libtdist_device": path}`` (and NVSHMEM's device library in a job that runs the NVSHMEM
    engine): pass as ``kernel[grid](..., extern_libs=triton_dist.extern_libs())`` to put the device
    bitcode into Triton's cache key (otherwise dl.* add it during compilation)."""
    return _bitcode.extern_libs()


def _insert_into_triton_ascend():
    # Seed 000 4.1: the distributed pass is optional to the compiler; here it is inserted when the
    # Triton in use is triton-ascend (its ttadapter stage), and nothing happens on stock Triton.
    from . import ascend
    if ascend.triton_is_ascend():
        ascend.install()


class _ImportAlias:
    """Ascend kernels import ``triton.language.extra.cann.extension``, which the Triton in use may not
    have (triton-ascend 3.2 and stock Triton do not): while no real module of that name exists, it
    and its package resolve to tdist's ``triton_dist.language.extra.cann`` (one portable source)."""

    ALIASES = {"triton.language.extra.cann": "triton_dist.language.extra.cann",
               "triton.language.extra.cann.extension": "triton_dist.language.extra.cann.extension"}

    def find_spec(self, name, path=None, target=None):
        if name not in self.ALIASES:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(name, self, is_package=name == "triton.language.extra.cann")

    def create_module(self, spec):
        import importlib
        return importlib.import_module(self.ALIASES[spec.name])

    def exec_module(self, module):
        pass


def _alias_cann_extension():
    import importlib.util
    import sys
    if any(isinstance(f, _ImportAlias) for f in sys.meta_path):
        return
    try:
        real = importlib.util.find_spec("triton.language.extra.cann")
    except (ImportError, ValueError):
        real = None
    if real is None:
        sys.meta_path.insert(0, _ImportAlias())  # before the path finder, which would load the file twice


def _install_module_hook():
    # On stock Triton every module Triton loads from now on goes to tdist's CUDA runtime, which
    # patches those that use dl.* (triton_dist.hook); triton-ascend has no such hook and needs none.
    from . import ascend
    import triton
    if not ascend.triton_is_ascend() and hasattr(getattr(triton, "knobs", None), "runtime"):
        from . import hook
        hook.install()


_insert_into_triton_ascend()
_alias_cann_extension()
_install_module_hook()
