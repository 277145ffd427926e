"""Triton-distributed's device and host names on tdist (docs/PORTING.md): every name exists, each
compiles to what its scope and semantics promise, and a name tdist lacks fails naming itself."""
import re
import warnings

import pytest

import triton
import triton.language as tl

import triton_dist
import triton_dist.language as dl
from triton_dist.language.extra import language_extra as le
from triton_dist.language.extra import libshmem_device as shm
from conftest import body

LIBSHMEM_NAMES = [
    "my_pe", "n_pes", "team_my_pe", "team_n_pes", "team_translate_pe", "int_p", "int_g", "remote_ptr",
    "barrier_all", "barrier_all_block", "barrier_all_warp", "barrier", "barrier_block", "barrier_warp", "sync_all",
    "sync_all_block", "sync_all_warp", "sync", "team_sync_block", "team_sync_warp", "quiet", "quiet_pe", "fence",
    "signal_op", "signal_wait_until", "uint64_wait_until_equals", "int64_wait_until_equals", "int32_wait_until_equals",
    "broadcast", "broadcast_warp", "broadcast_block", "broadcastmem", "broadcastmem_warp", "broadcastmem_block",
    "fcollect", "fcollect_warp", "fcollect_block", "fcollectmem", "fcollectmem_warp", "fcollectmem_block",
    "NVSHMEM_TEAM_WORLD", "NVSHMEMX_TEAM_NODE", "NVSHMEM_TEAM_SHARED", "NVSHMEM_CMP_EQ", "NVSHMEM_SIGNAL_SET",
] + [f"{op}{nbi}{scope}" for op in ("putmem", "getmem", "putmem_signal") for nbi in ("", "_nbi")
     for scope in ("", "_warp", "_block")]
LANGUAGE_EXTRA_NAMES = [
    "tid", "ntid", "laneid", "num_warps", "num_threads", "__syncthreads", "ld", "st", "ld_acquire", "red_release",
    "atomic_add", "atomic_cas", "wait_eq", "__shfl_sync_i32", "__shfl_up_sync_i32", "__shfl_down_sync_i32",
    "__shfl_xor_sync_i32", "__ballot_sync", "globaltimer", "smid", "membar", "pack", "unpack",
]
UTILS_NAMES = ["initialize_distributed", "finalize_distributed", "nvshmem_create_tensor", "nvshmem_create_tensors",
               "nvshmem_free_tensor_sync", "nvshmem_barrier_all_on_stream", "NVSHMEM_SIGNAL_DTYPE", "dist_print",
               "perf_func"]


def test_every_name_exists():
    for name in LIBSHMEM_NAMES:
        assert getattr(shm, name) is not None, name
    for name in LANGUAGE_EXTRA_NAMES:
        assert getattr(le, name) is not None, name
    from triton_dist import utils
    for name in UTILS_NAMES:
        assert getattr(utils, name) is not None, name
    from triton_dist.profiler_utils import perf_func
    assert perf_func is utils.perf_func
    assert callable(triton_dist.jit)


def _messages(e):
    out = []
    while e is not None:
        out.append(str(e))
        e = e.__cause__ or e.__context__
    return "\n".join(out)


def _error(compile_ptx, fn, sig, const=None):
    with pytest.raises(triton.compiler.errors.CompilationError) as e:
        compile_ptx(fn, sig, const)
    return _messages(e.value)


# ---- language_extra


@triton.jit
def simt_kernel(p32, p64, pf, p8, out64):
    t = le.tid(0)
    if t == 0:
        le.st(p32, 5, "sys", "release")
        v = le.ld(p64, "sys", "acquire")
        le.st(p64 + 1, v + 1)
        x = le.ld_acquire(p32 + 1, "gpu")
        le.red_release(p32 + 2, 1, "sys")
        o = le.atomic_add(p64 + 2, 3, "sys", "acq_rel")
        c = le.atomic_cas(p32 + 3, 0, 1, "gpu", "relaxed")
        f = le.ld(pf, "gpu", "relaxed")
        le.st(pf + 1, f * 2.0, "sys", "relaxed")
        b = le.ld(p8)
        le.st(p8 + 1, b + 1)
        le.st(out64, le.pack((x, c), tl.uint64) + o.to(tl.uint64))
    s = le.__shfl_sync_i32(0xFFFFFFFF, t, 0) + le.__shfl_xor_sync_i32(0xFFFFFFFF, t, 1)
    s += le.__shfl_up_sync_i32(0xFFFFFFFF, t, 1) + le.__shfl_down_sync_i32(0xFFFFFFFF, t, 1)
    bal = le.__ballot_sync(0xFFFFFFFF, t > 3)
    lo, hi = le.unpack(le.globaltimer(), tl.uint32)
    le.membar("sys")
    if t == 1:
        le.st(p32 + 4, s + bal + le.num_warps() + le.smid().to(tl.int32) + le.laneid() + le.ntid(0))
        le.st(out64 + 1, (lo + hi).to(tl.uint64))
    le.__syncthreads()


def test_language_extra_ptx(compile_ptx):
    b = body(compile_ptx(simt_kernel, {"p32": "*i32", "p64": "*i64", "pf": "*fp32", "p8": "*i8", "out64": "*u64"}))
    for instr in ["st.global.release.sys.b32", "ld.global.acquire.sys.b64",
                  "ld.global.acquire.gpu.b32", "red.release.sys.global.add.s32", "atom.acq_rel.sys.global.add.u64",
                  "atom.relaxed.gpu.global.cas.b32", "ld.global.relaxed.gpu.b32", "st.global.relaxed.sys.b32",
                  "ld.global.relaxed.gpu.u8", "st.global.relaxed.gpu.u8", "shfl.sync.idx.b32", "shfl.sync.bfly.b32",
                  "shfl.sync.up.b32", "shfl.sync.down.b32", "vote.sync.ballot.b32", "%globaltimer", "%smid",
                  "%laneid", "%ntid.x", "membar.sys", "bar.sync"]:
        assert instr in b, instr


@triton.jit
def wait_eq_kernel(sig, out):
    le.wait_eq(sig, le.tid(0), 7, "sys")
    tl.store(out, 1)


def test_wait_eq_is_the_abi_wait(compile_ttir, compile_ptx):
    ir = compile_ttir(wait_eq_kernel, {"sig": "*i64", "out": "*i32"})
    assert "tdist_int64_wait_until_i64" in ir and "scf.if" in ir  # thread 0 only, through the device ABI
    b = body(compile_ptx(wait_eq_kernel, {"sig": "*i64", "out": "*i32"}))
    assert "ld.acquire.sys.global.u64" in b and "%globaltimer" in b and "bar.sync" in b


@triton.jit
def bad_scope_kernel(p):
    le.st(p, 1, "cluster", "relaxed")


@triton.jit
def bad_semantic_kernel(p):
    le.ld(p, "gpu", "release")


def test_language_extra_errors(compile_ptx):
    assert "st: scope='cluster' is not one of" in _error(compile_ptx, bad_scope_kernel, {"p": "*i32"})
    assert "ld: semantic='release' is not one of 'relaxed', 'acquire'" in _error(compile_ptx, bad_semantic_kernel,
                                                                                {"p": "*i32"})


# ---- libshmem_device scopes


@triton.jit
def put_kernel(dst, src, nbytes, FORM: tl.constexpr):
    peer = (shm.my_pe() + 1) % shm.n_pes()
    if FORM == "block":
        shm.putmem_block(dst, src, nbytes, peer)
    elif FORM == "nbi_block":
        shm.putmem_nbi_block(dst, src, nbytes, peer)
    elif FORM == "thread":
        shm.putmem(dst, src, nbytes, peer)
    else:
        shm.putmem_nbi(dst, src, nbytes, peer)


def _put(compile_ptx, form):
    return body(compile_ptx(put_kernel, {"dst": "*u8", "src": "*u8", "nbytes": "i64"}, {"FORM": form}))


def test_nbi_puts_skip_the_completion_fence(compile_ptx):
    # blocking: every participant fences (fence.sc.sys) before the exit join; _nbi returns once issued
    # (the fault path of an address translation has its own fence.sc.sys in both)
    blocking, nbi = _put(compile_ptx, "block"), _put(compile_ptx, "nbi_block")
    assert blocking.count("fence.sc.sys") == nbi.count("fence.sc.sys") + 1
    assert blocking.count("bar.sync") == nbi.count("bar.sync") == 2  # entry and exit joins in both
    thread, thread_nbi = _put(compile_ptx, "thread"), _put(compile_ptx, "nbi")
    assert "bar.sync" not in thread and "bar.sync" not in thread_nbi  # thread forms: no CTA barrier
    assert thread.count("fence.sc.sys") == thread_nbi.count("fence.sc.sys") + 1


@triton.jit
def thread_signal_kernel(sig, flag):
    if le.tid(0) == 0:
        shm.signal_op(sig, 1, shm.NVSHMEM_SIGNAL_ADD, 0)
        shm.int_p(flag, 2, 0)
        shm.quiet()


def test_thread_forms_under_a_tid_branch(compile_ptx):
    b = body(compile_ptx(thread_signal_kernel, {"sig": "*u64", "flag": "*i32"}))
    assert "bar.sync" not in b, "a thread-scope call joins the CTA: it would hang under `if tid == 0`"
    assert "red.release.sys.global.add.u64" in b and "fence.sc.sys" in b
    # int_p: the ABI's thread-form release store
    assert re.search(r"st\.(global\.release\.sys|release\.sys\.global)\.(b|u)32", b)


@triton.jit
def barriers_kernel(team):
    if tl.program_id(0) == 0:
        shm.barrier_all_block()
        if le.tid(0) == 0:
            shm.barrier(team)
        if le.tid(0) // 32 == 0:
            shm.sync_all_warp()


def test_pe_barriers(compile_ptx):
    b = body(compile_ptx(barriers_kernel, {"team": "i32"}))
    # one participant per PE: the epoch at TDIST_SYNC_DEVICE_BARRIER_OFF, no grid arrival counter
    assert "st.release.sys.global.u64" in b and "atom.acq_rel.gpu.global.add.u64" not in b
    assert "activemask.b32" in b and "bar.warp.sync" in b and "bar.sync" in b


@triton.jit
def teams_kernel(out, team):
    tl.store(out, shm.team_my_pe(shm.NVSHMEM_TEAM_WORLD) + shm.team_n_pes(team)
             + shm.team_translate_pe(team, 1, shm.NVSHMEMX_TEAM_NODE))


@triton.jit
def split_team_kernel(out):
    tl.store(out, shm.team_my_pe(3))


@triton.jit
def int_p_wrong_type(p):
    shm.int_p(p, 1, 0)


@triton.jit
def signal_op_i32(p):
    shm.signal_op(p, 1, shm.NVSHMEM_SIGNAL_SET, 0)


def test_teams_and_type_errors(compile_ptx):
    compile_ptx(teams_kernel, {"out": "*i32", "team": "i32"})
    assert "team 3 has no device-side state in tdist" in _error(compile_ptx, split_team_kernel, {"out": "*i32"})
    assert "int_p: the pointer must be to int32" in _error(compile_ptx, int_p_wrong_type, {"p": "*fp32"})
    assert "sig_addr must point to a 64-bit signal" in _error(compile_ptx, signal_op_i32, {"p": "*i32"})


# ---- dl.wait's slot stride, dl.notify's widths


@triton.jit
def wait_n(sig, n, STRIDE: tl.constexpr):
    dl.wait(sig, n, "gpu", "acquire", waitValue=1, slot_stride=STRIDE)


@triton.jit
def wait_n_default(sig, n):
    dl.wait(sig, n, "gpu", "acquire", waitValue=1)


@triton.jit
def wait_one(sig):
    dl.wait(sig, 1, "gpu", "acquire", waitValue=1)


def test_wait_slot_stride(compile_ttir):
    ir = compile_ttir(wait_n, {"sig": "*i32", "n": "i32"}, {"STRIDE": 1})
    assert "tdistx_wait_int32_strided_i64" in ir and "arith.constant 4 : i64" in ir  # int32 slots 4 bytes apart
    ir = compile_ttir(wait_n, {"sig": "*i64", "n": "i32"}, {"STRIDE": 8})  # tdist's layout said explicitly
    assert "tdistx_wait_int64_i64" in ir and "strided" not in ir
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ir = compile_ttir(wait_n_default, {"sig": "*i64", "n": "i32"})
        compile_ttir(wait_one, {"sig": "*i64"})
    assert "tdistx_wait_int64_i64" in ir  # the default is tdist's 64-byte layout ...
    msgs = [str(x.message) for x in w if issubclass(x.category, dl.SlotStrideWarning)]
    assert len(msgs) == 1 and "pass slot_stride=1" in msgs[0] and "wait_n_default" in msgs[0], msgs  # ... said


@triton.jit
def wait_bad_stride(sig):
    dl.wait(sig, 2, "gpu", "acquire", slot_stride=0)


def test_wait_bad_stride(compile_ptx):
    assert "slot_stride must be None (64-byte slots) or a constant int >= 1" in _error(compile_ptx, wait_bad_stride,
                                                                                      {"sig": "*i64"})


# ---- names tdist does not have


@triton.jit
def uses_multicast(p):
    q = shm.remote_mc_ptr(shm.NVSHMEM_TEAM_WORLD, p)
    tl.store(q, 1)


@triton.jit
def uses_vector(p):
    v = dl.make_vector([tl.load(p), tl.load(p + 1)])
    tl.store(p, v)


@triton.jit
def uses_ld_vector(p):
    v = le.ld_vector(p, 4)
    tl.store(p, v)


def _any_error(compile_ptx, fn, sig):
    # Triton lets an AttributeError of a module lookup through as it is, other errors as CompilationError
    with pytest.raises((triton.compiler.errors.CompilationError, AttributeError)) as e:
        compile_ptx(fn, sig)
    return _messages(e.value)


def test_missing_names_fail_naming_themselves(compile_ptx):
    assert "libshmem_device (selected by is_cuda) has no 'remote_mc_ptr'" in _any_error(compile_ptx, uses_multicast,
                                                                                         {"p": "*i32"})
    assert "triton_dist.language.make_vector: Triton-distributed's SIMT vectors" in _any_error(
        compile_ptx, uses_vector, {"p": "*i32"})
    assert "language_extra (selected by is_cuda) has no 'ld_vector'" in _any_error(compile_ptx, uses_ld_vector,
                                                                                   {"p": "*i32"})


# ---- @triton_dist.jit


@triton_dist.jit
def jit_kernel(x):
    tl.store(x, dl.rank())


def test_triton_dist_jit_links_the_bitcode(device_bitcode, monkeypatch):
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", device_bitcode)
    assert isinstance(jit_kernel, triton.runtime.JITFunction)
    import importlib
    jit_mod = importlib.import_module("triton_dist.jit")
    kwargs = {}
    jit_mod._prepare(kwargs)
    assert kwargs["extern_libs"] == {"libtdist_device": device_bitcode}
    kwargs = {"extern_libs": {"libdevice": "/x.bc"}}
    jit_mod._prepare(kwargs)
    assert kwargs["extern_libs"] == {"libdevice": "/x.bc", "libtdist_device": device_bitcode}
    tuned = triton.autotune(configs=[triton.Config({}, num_warps=4)], key=[])(jit_kernel)
    assert tuned.fn is jit_kernel
