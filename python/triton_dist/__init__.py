"""tdist's Triton front end: ``triton_dist.language`` (dl.*) and ``language.extra.libshmem_device``."""
from . import utils  # noqa: F401
from ._bitcode import find_bitcode, BitcodeNotFound, LIB_NAME  # noqa: F401


def extern_libs():
    """``{"libtdist_device": path}``: pass as ``kernel[grid](..., extern_libs=triton_dist.extern_libs())``
    to put the device bitcode into Triton's cache key (otherwise dl.* add it during compilation)."""
    return {LIB_NAME: find_bitcode()}


def _insert_into_triton_ascend():
    # Seed 000 4.1: the distributed pass is optional to the compiler; here it is inserted when the
    # Triton in use is triton-ascend (its ttadapter stage), and nothing happens on stock Triton.
    from . import ascend
    if ascend.triton_is_ascend():
        ascend.install()


_insert_into_triton_ascend()
