"""libshmem_device (CUDA backend) compiles to PTX with the promised ordering. Scopes are NVSHMEM's
(test_libshmem_scopes.py checks them): the kernels here call the program-scope (_block) forms from
every thread."""
import re

import triton
import triton.language as tl

from triton_dist.language.extra import libshmem_device as shm
from conftest import body


@triton.jit
def all_calls(sig, src, dst, nbytes):
    pe = shm.my_pe()
    peer = (pe + 1) % shm.n_pes()
    shm.putmem_block(dst, src, nbytes, peer)
    shm.getmem_nbi_block(dst, src, nbytes, peer)
    shm.fence()
    shm.signal_op(sig, 1, shm.SIGNAL_SET, peer)
    v = shm.signal_wait_until(sig, shm.NVSHMEM_CMP_GE, 1)
    shm.quiet()
    shm.barrier_all_grid()
    shm.putmem_signal_nbi_block(dst, src, nbytes, sig, v, shm.NVSHMEM_SIGNAL_ADD, peer)
    r = shm.remote_ptr(dst, peer)
    tl.store(r, 0.0)


def test_all_calls_ptx(compile_ptx):
    b = body(compile_ptx(all_calls, {"sig": "*i64", "src": "*fp32", "dst": "*fp32", "nbytes": "i64"}))
    assert "fence.acq_rel.sys;" in b
    # signal_wait_until on an int64 signal: the ABI's tdist_int64_wait_until_i64, an acquire poll with
    # a signed comparison of the value it loaded (>= 1 may come out as > 0: Triton 3.6 and 3.9 differ)
    assert re.search(r"ld\.acquire\.sys\.global\.u64 (%rd\d+), [^;]*;\s*setp\.(ge|gt|le|lt)\.s64\s+%p\d+, \1,", b)
    assert "st.release.sys.global.u64" in b  # signal_op SET
    assert "red.release.sys.global.add.u64" in b  # putmem_signal ADD
    # barrier_all_grid: every thread calls the bitcode's grid barrier (its arrival counter)
    assert "atom.acq_rel.gpu.global.add.u64" in b
    assert not re.search(r"call\.uni[^;]*tdist", b)  # everything inlined
    # copies (the device ABI's tdisti_nv_copy): 16-byte vectors and the byte path both present
    assert "ld.v4.u32" in b and "st.v4.u32" in b and re.search(r"ld\.(global\.)?(b8|u8)", b)


@triton.jit
def bad_sig_op(sig):
    shm.signal_op(sig, 1, 7, 0)


def _messages(e):
    out = []
    while e is not None:
        out.append(str(e))
        e = e.__cause__
    return "\n".join(out)


def test_bad_sig_op(compile_ptx):
    import pytest
    with pytest.raises(triton.compiler.errors.CompilationError) as e:
        compile_ptx(bad_sig_op, {"sig": "*i64"})
    assert "sig_op=7 is not SIGNAL_SET (1) / SIGNAL_ADD (2)" in _messages(e.value)


@triton.jit
def barrier_only(x):
    shm.barrier_all_grid()
    tl.store(x, 1)


def test_barrier_all_grid_called_by_every_thread(compile_ttir):
    # tdist_barrier_all is CTA-collective (its own bar.sync pairs): every thread must call it, so the
    # call must not sit under a branch (a tid == 0 guard hung the GPU run that found this)
    ir = compile_ttir(barrier_only, {"x": "*i32"})
    calls = [ln for ln in ir.splitlines() if "tdist_barrier_all_i64" in ln]
    assert len(calls) == 1, ir
    assert "scf.if" not in ir, "barrier_all's bitcode call is guarded: only some threads would reach its bar.sync"


@triton.jit
def wait_negative_is_refused(sig):
    shm.signal_wait_until(sig, shm.CMP_EQ, 1, timeout_ns=-1)


@triton.jit
def wait_short(sig):
    shm.signal_wait_until(sig, shm.CMP_NE, 0, timeout_ns=5_000_000)


def test_signal_wait_until_is_bounded(compile_ptx):
    import pytest
    b = body(compile_ptx(wait_short, {"sig": "*i32"}))
    assert "ld.acquire.sys.global.u32" in b
    assert "%globaltimer" in b and re.search(r"\b500000[01]\b", b), "the spin reads no timer against its budget"
    assert "trap;" in b and "vprintf" in b, "an expired wait neither reports nor traps"
    with pytest.raises(triton.compiler.errors.CompilationError) as e:
        compile_ptx(wait_negative_is_refused, {"sig": "*i64"})
    assert "timeout_ns must be None (the runtime's budget) or a constant int >= 0" in _messages(e.value)


@triton.jit
def pg_half_bf16(h, b, out_h, out_b):
    peer = (shm.my_pe() + 1) % shm.n_pes()
    shm.half_p(h, tl.load(out_h), peer)
    shm.bfloat16_p(b, tl.load(out_b), peer)
    tl.store(out_h, shm.half_g(h, peer))
    tl.store(out_b, shm.bfloat16_g(b, peer))


@triton.jit
def pg_int(x, out):
    peer = (shm.my_pe() + 1) % shm.n_pes()
    shm.int_p(x, 7, peer)
    tl.store(out, shm.int_g(x, peer))


def test_pg_through_the_abi(compile_ptx):
    # single-element p / g are the ABI's thread forms (a PE behind the ROCE engine gets the same call):
    # a release store and a relaxed system-scope load after the translation, inlined; half and
    # bfloat16 as their 16-bit patterns
    b = body(compile_ptx(pg_int, {"x": "*i32", "out": "*i32"}))
    assert "st.release.sys.global.b32" in b or "st.release.sys.global.u32" in b
    assert re.search(r"ld\.relaxed\.sys\.global\.(b|u|s)32", b)
    assert not re.search(r"call\.uni[^;]*tdist", b)
    b = body(compile_ptx(pg_half_bf16, {"h": "*fp16", "b": "*bf16", "out_h": "*fp16", "out_b": "*bf16"}))
    assert len(re.findall(r"st\.release\.sys\.global\.(b|u)16", b)) == 2
    assert len(re.findall(r"ld\.relaxed\.sys\.global\.(b|u|s)16", b)) == 2
