"""tdist's Triton front end: ``triton_dist.language`` (dl.*) and ``language.extra.libshmem_device``."""
from . import utils  # noqa: F401
from ._bitcode import find_bitcode, BitcodeNotFound, LIB_NAME  # noqa: F401


def extern_libs():
    """``{"libtdist_device": path}``: pass as ``kernel[grid](..., extern_libs=triton_dist.extern_libs())``
    to put the device bitcode into Triton's cache key (otherwise dl.* add it during compilation)."""
    return {LIB_NAME: find_bitcode()}
