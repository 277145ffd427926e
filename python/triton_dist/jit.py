"""``@triton_dist.jit``: ``triton.jit`` plus what tdist's kernels need at launch.

The decorator takes ``triton.jit``'s arguments and returns a ``JITFunction`` (a subclass of the one
``triton.jit`` makes: autotune, heuristics and calls from other kernels work as with ``triton.jit``).
On CUDA with stock Triton each launch

* links the device bitcode: ``extern_libs`` gets ``{"libtdist_device": <libtdist_device.bc>}``
  unless the launch passes that library itself, so the bitcode's path is part of Triton's cache key
  (a kernel that calls no tdist primitive links nothing from it);
* installs the module hook (``triton_dist.hook``) that patches tdist's device state into every
  module Triton loads, once the heap is initialized.

Under triton-ascend (Ascend, CPU ranks) tdist inserts itself into the compiler when ``triton_dist``
is imported; the decorator then adds nothing. Kernels decorated with plain ``@triton.jit`` work too
(the first dl.* call links the bitcode during compilation); this decorator exists so that kernels
written for Triton-distributed run unchanged.
"""
import triton

from . import _bitcode

_SUBCLASSES = {}


def _prepare(kwargs):
    from . import ascend, utils
    if ascend.triton_is_ascend() or not utils.is_cuda():
        return
    libs = kwargs.get("extern_libs") or {}
    if _bitcode.LIB_NAME not in dict(libs):
        try:
            ours = _bitcode.extern_libs()
        except _bitcode.BitcodeNotFound:
            return  # compiling a kernel that calls dl.* raises it with the places tried
        libs = dict(libs)
        libs.update(ours)
        kwargs["extern_libs"] = libs
    try:
        import tdist
        if tdist.initialized():
            from . import hook
            hook.install()
    except ImportError:
        pass


def _subclass(base):
    cls = _SUBCLASSES.get(base)
    if cls is None:
        def run(self, *args, grid, warmup, **kwargs):
            _prepare(kwargs)
            return base.run(self, *args, grid=grid, warmup=warmup, **kwargs)

        cls = type("TdistJITFunction", (base, ), {"run": run, "__doc__": __doc__})
        _SUBCLASSES[base] = cls
    return cls


def jit(fn=None, **kwargs):
    """``@triton_dist.jit`` / ``@triton_dist.jit(...)``: ``triton.jit`` with the tdist launch set-up."""

    def decorate(f):
        jf = triton.jit(f, **kwargs)
        if isinstance(jf, triton.runtime.JITFunction):
            jf.__class__ = _subclass(type(jf))
        return jf

    return decorate(fn) if fn is not None else decorate
