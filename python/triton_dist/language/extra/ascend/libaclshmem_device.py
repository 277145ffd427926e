"""libshmem_device names on Ascend (seed 000 section 7.4: the proxy's Ascend entry).

Stock Triton has no Ascend target, so these cannot be compiled here; the table says which
aclshmem template-library symbol each function becomes (docs/CONTRACT.md section 3), and a call
fails at compile time naming it. Ascend kernels compile through the MLIR path (tdist-opt).
"""
from triton.language import core as tlc

SYMBOLS = {
    "my_pe": "aclshmem_my_pe", "n_pes": "aclshmem_n_pes", "remote_ptr": "aclshmem_ptr",
    "putmem": "aclshmem_putmem", "getmem": "aclshmem_getmem", "putmem_nbi": "aclshmem_putmem_nbi",
    "getmem_nbi": "aclshmem_getmem_nbi", "putmem_signal": "aclshmem_putmem_signal",
    "putmem_signal_nbi": "aclshmem_putmem_signal_nbi", "signal_op": "aclshmemx_signal_op",
    "signal_wait_until": "aclshmem_signal_wait_until", "barrier_all": "aclshmem_barrier_all",
    "barrier_all_vec": "aclshmemx_barrier_all_vec", "fence": "aclshmem_fence", "quiet": "aclshmem_quiet",
}


def _make(name, symbol):

    @tlc.builtin
    def fn(*args, _semantic=None, **kwargs):
        raise NotImplementedError(f"libshmem_device.{name} -> {symbol}: Ascend kernels are compiled by the MLIR "
                                  "path (tdist-opt --convert-distributed-to-hivm), not by stock Triton")

    fn.__name__ = name
    return fn


for _n, _s in SYMBOLS.items():
    globals()[_n] = _make(_n, _s)
