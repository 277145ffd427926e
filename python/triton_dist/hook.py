"""Patch tdist's device state into every module Triton loads (the seed's GPU "patching", seed 000 1.2).

``install()`` adds a ``kernel_load_end_hook`` that hands each loaded CUmodule to
``tdist_cuda_register_module``. The runtime keeps the modules that reference its device state (the
``tdisti_device_state`` global; kernels that use no dl.* call have none and are ignored), patches
them at once while a CUDA heap is initialised, patches them all at every later init and clears them
at finalize. Importing ``triton_dist`` on stock Triton installs the hook, so a kernel decorated with
plain ``@triton.jit`` is patched like one decorated with ``@triton_dist.jit``, whenever it is loaded.
"""
import triton

_installed = False


def _on_load(module, function, name, metadata_group, hash):
    if module is None:
        return
    import tdist
    if not tdist.cuda_available():
        return
    tdist.cuda_register_module(int(module))


def installed():
    return _installed and _on_load in triton.knobs.runtime.kernel_load_end_hook.calls


def install():
    global _installed
    if not _installed:
        triton.knobs.runtime.kernel_load_end_hook.add(_on_load)
        _installed = True


def uninstall():
    global _installed
    if _installed:
        triton.knobs.runtime.kernel_load_end_hook.remove(_on_load)
        _installed = False
