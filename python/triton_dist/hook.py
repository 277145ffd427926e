"""Patch tdist's device state into every module Triton loads (the seed's GPU "patching", seed 000 1.2).

``install()`` adds a ``kernel_load_end_hook`` that hands each loaded CUmodule to
``tdist_cuda_register_module``; modules without the ``tdisti_device_state`` global (kernels that
use no dl.* call) are accepted and ignored by the runtime. ``shmem.aclshmem_init`` installs it on
the CUDA backend. Modules loaded before ``install()`` were not patched: install before the first
launch of a kernel that uses dl.*.
"""
import triton

_installed = False


def _on_load(module, function, name, metadata_group, hash):
    import tdist
    if module is None or not tdist.initialized():
        return
    tdist.cuda_register_module(int(module))


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
