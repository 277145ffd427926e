"""dl.* compile ahead of time to PTX for sm_90; the PTX carries the ordering the contract promises."""
import re

import pytest
import triton
import triton.language as tl

import triton_dist.language as dl
from conftest import body


@triton.jit
def producer_consumer(sig, data, out, peer_sig, N: tl.constexpr):
    pid = tl.program_id(0)
    me = dl.rank()
    peer = (me + 1) % dl.num_ranks()
    if pid == 0:
        remote = dl.symm_at(out, peer)
        x = tl.load(data + tl.arange(0, N))
        tl.store(remote + tl.arange(0, N), x)
        dl.notify(peer_sig, peer, signal=1, sig_op="set", comm_scope="intra_node")
    else:
        tok = dl.wait(sig, 1, "gpu", "acquire", waitValue=1)
        p = dl.consume_token(out, tok)
        y = tl.load(p + tl.arange(0, N))
        tl.store(data + tl.arange(0, N), y + 1)
        dl.notify(sig, me, 0)


SIG = {"sig": "*i64", "data": "*fp32", "out": "*fp32", "peer_sig": "*i64"}


def test_producer_consumer_ptx(compile_ptx):
    ptx = compile_ptx(producer_consumer, SIG, {"N": 256})
    b = body(ptx)
    # wait and notify are the device ABI's (tdistx_wait_int64_i64 / tdistx_notify_int64_i64), linked
    # from the bitcode and inlined: no call into tdist is left
    assert "tdisti_device_state" in ptx
    assert not re.search(r"call\.uni[^;]*tdist", b)
    # wait: system-scope acquire polls, bounded by %globaltimer, the CTA joined by bar.red.or (one
    # status for every thread); an expired wait records the fault (CAS on the record) and traps
    assert "ld.acquire.sys.global.u64" in b
    assert "%globaltimer" in b and "trap;" in b
    assert "bar.red.or.pred" in b and "atom.relaxed.sys.global.cas.b32" in b
    # notify: all threads join bar.sync, then one thread's release store (one per notify)
    assert b.count("st.release.sys.global.u64") >= 2 and b.count("bar.sync 0;") >= 2


def test_consume_token_orders_load_after_wait(compile_ptx):
    b = body(compile_ptx(producer_consumer, SIG, {"N": 256}))
    # consume_token is a zero made by side-effecting inline asm that reads the wait's token (so it
    # stays after the wait's side-effecting polls), and the load's address is computed from it
    token_mov = re.search(r"mov\.b64 (%rd\d+), 0; // consume_token %r\d+", b)
    assert token_mov
    # the consumer's load address is computed from the consume_token result
    # (data flow: every register computed from it, transitively, in program order)
    derived = {token_mov.group(1)}
    after = b[token_mov.end():]
    loads = []
    for line in after.splitlines():
        m = re.match(r"\s*(?:@%p\d+ )?([a-z][\w.]*)\s+(.*);", line)
        if not m:
            continue
        op, args = m.group(1), [a.strip() for a in re.split(r",\s*(?![^{]*})", m.group(2))]
        used = set(re.findall(r"%rd\d+", " ".join(args[1:] if not op.startswith("st") else args)))
        if op.startswith("ld.global") and used & derived:
            loads.append(line)
        elif used & derived and args and re.fullmatch(r"%rd\d+", args[0]):
            derived.add(args[0])
    assert loads, after[:600]


@triton.jit
def many_waits(sig32, sig64, sigu64, n):
    t0 = dl.wait(sig32, 4, "gpu", "acquire", waitValue=7)
    t1 = dl.wait(sig64, n, "sys", "relaxed", waitValue=-1)
    t2 = dl.wait(sigu64, 1, "gpu", "acquire", timeout_ns=0)
    dl.notify(sigu64, 0, t0 + t1 + t2, sig_op="add")


def test_wait_variants(compile_ptx):
    # both multi-slot waits use tdist's default layout, each with its SlotStrideWarning
    with pytest.warns(dl.SlotStrideWarning) as record:
        b = body(compile_ptx(many_waits, {"sig32": "*i32", "sig64": "*i64", "sigu64": "*u64", "n": "i32"}))
    assert len([w for w in record if issubclass(w.category, dl.SlotStrideWarning)]) == 2
    # a thread with one slot polls it with ld.acquire; a thread with several sweeps them relaxed and
    # ends with one acquire fence (4 and n slots here, 128 threads)
    assert "ld.acquire.sys.global.u32" in b and "ld.relaxed.sys.global.b32" in b
    assert "ld.acquire.sys.global.u64" in b and "ld.relaxed.sys.global.b64" in b
    assert b.count("fence.acq_rel.sys;") >= 2
    assert re.search(r"mul\.wide\.s32\s+%rd\d+, %r\d+, 64;", b)  # slots one cache line apart
    assert "red.release.sys.global.add.u64" in b  # notify add


def _compile_error(compile_ptx, fn, sig, **kw):
    with pytest.raises(triton.compiler.errors.CompilationError) as e:
        compile_ptx(fn, sig, **kw)
    return str(e.value)


@triton.jit
def notify_int32(sig):
    dl.notify(sig, 0)


@triton.jit
def notify_int32_add(sig):
    dl.notify(sig, 0, 3, sig_op="add")


@triton.jit
def wait_float(sig):
    dl.wait(sig, 1, "gpu", "acquire")


@triton.jit
def wait_block(sig):
    dl.wait(sig + tl.arange(0, 4), 1, "gpu", "acquire")


@triton.jit
def wait_bad_scope(sig):
    dl.wait(sig, 1, "cluster", "acquire")


@triton.jit
def notify_bad_op(sig):
    dl.notify(sig, 0, 1, sig_op="xor")


@triton.jit
def wait_zero(sig):
    dl.wait(sig, 0, "gpu", "acquire")


@triton.jit
def wait_negative_timeout(sig):
    dl.wait(sig, 1, "gpu", "acquire", timeout_ns=-5)


def test_validation_errors(compile_ptx):
    assert "on cuda the signal must be int32, int64 or uint64, got uint32" in _compile_error(
        compile_ptx, notify_int32, {"sig": "*u32"})
    assert "signal slots must be int32, int64 or uint64, got a pointer to fp32" in _compile_error(
        compile_ptx, wait_float, {"sig": "*fp32"})
    assert "barrierPtrs must be a scalar pointer" in _compile_error(compile_ptx, wait_block, {"sig": "*i64"})
    assert "scope='cluster' is not one of" in _compile_error(compile_ptx, wait_bad_scope, {"sig": "*i64"})
    assert "sig_op='xor' is not one of 'set', 'add'" in _compile_error(compile_ptx, notify_bad_op, {"sig": "*i64"})
    assert "numBarriers must be >= 1, got 0" in _compile_error(compile_ptx, wait_zero, {"sig": "*i64"})
    assert "timeout_ns must be None (the runtime's budget) or a constant int >= 0" in _compile_error(
        compile_ptx, wait_negative_timeout, {"sig": "*i64"})


@pytest.mark.parametrize("platform,dtype,op,ok", [
    ("ascend", "int32", "set", True), ("ascend", "int32", "add", True),
    ("ascend", "int64", "set", True), ("ascend", "uint64", "set", True),
    ("ascend", "int64", "add", False), ("ascend", "uint64", "add", False), ("ascend", "fp32", "set", False),
    ("cuda", "int64", "add", True), ("cuda", "uint64", "set", True), ("cuda", "int32", "set", True),
    ("cuda", "int32", "add", True), ("cuda", "uint32", "set", False), ("cuda", "fp32", "set", False),
    ("hip", "int32", "add", False),
])
def test_notify_dtype_rules(platform, dtype, op, ok):
    if ok:
        dl.check_notify_dtype(dtype, op, platform)
    else:
        with pytest.raises(dl.DistributedError, match=dtype):
            dl.check_notify_dtype(dtype, op, platform)


def test_notify_int32_on_cuda(compile_ptx):
    # the device ABI's tdistx_notify_int32_i64: a 32-bit release store (set) / release add
    b = body(compile_ptx(notify_int32, {"sig": "*i32"}))
    assert re.search(r"st\.release\.sys\.global\.(u|b|s)32", b), b
    b = body(compile_ptx(notify_int32_add, {"sig": "*i32"}))
    assert re.search(r"red\.release\.sys\.global\.add\.u32", b), b


PTR_I64 = tl.constexpr({(tl.int64, tl.int32): ("tdist_ptr_i64", tl.int64)})


@triton.jit
def uses_extern_call(x, out):
    v = tl.load(x)
    r = dl.extern_call("libtdist_device", "", [v, 1], PTR_I64, True)
    tl.store(out, r)


def test_extern_call(compile_ptx):
    b = body(compile_ptx(uses_extern_call, {"x": "*i64", "out": "*i64"}))
    assert "tdisti_device_state" in b  # inlined from the bitcode


def test_bitcode_env_must_exist(monkeypatch, tmp_path):
    from triton_dist import _bitcode
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", str(tmp_path / "missing.bc"))
    with pytest.raises(_bitcode.BitcodeNotFound, match="does not name a file"):
        _bitcode.find_bitcode()


def test_real_bitcode_links(compile_ptx_real):
    """Against device/NVIDIA's libtdist_device.bc: the symbols dl.* call exist and inline."""
    b = body(compile_ptx_real(producer_consumer, SIG, {"N": 256}))
    assert "tdisti_device_state" in b
    assert not re.search(r"call\.uni[^;]*tdist", b)


def test_import_installs_the_module_hook_for_plain_triton_jit():
    # A kernel decorated with plain @triton.jit gets tdist's device state only through the load hook:
    # importing triton_dist (which every dl.* kernel does) must install it, before any tdist init, and
    # the hook must hand the loaded module to the runtime whether or not tdist is initialised yet.
    from triton_dist import hook
    assert hook.installed(), "importing triton_dist did not add its kernel_load_end_hook"
    seen = []
    import tdist
    real = tdist.cuda_register_module, tdist.cuda_available
    try:
        tdist.cuda_register_module, tdist.cuda_available = seen.append, lambda: True
        triton.knobs.runtime.kernel_load_end_hook(0x1234, 0x5678, "k", None, "h")
        hook._on_load(None, None, "k", None, "h")  # nothing loaded: nothing registered
    finally:
        tdist.cuda_register_module, tdist.cuda_available = real
    assert seen == [0x1234] and not tdist.initialized()
