"""The portable Triton-Ascend extensions (extract_slice, insert_slice, get_element) compile for
sm_90 through the whole NVIDIA pipeline (a tl.gather-based version broke in TritonGPU passes), and
bad arguments are refused at compile time with the reason."""
import pytest
import triton
import triton.language as tl

from triton_dist.language.extra.cann import extension as ext


@triton.jit
def slices_2d(x, out_ex, out_in, out_el, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    full = tl.load(x + r * C + c)
    sub = ext.extract_slice(full, (2, 4), (4, 8), (1, 2))
    tl.store(out_ex + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :], sub)
    ins = ext.insert_slice(full, sub * 0 - 1, (1, 0), (4, 8), (2, 1))
    tl.store(out_in + r * C + c, ins)
    tl.store(out_el, ext.get_element(full, (3, 5)))


@triton.jit
def slices_1d(x, out, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    s = ext.extract_slice(v, (1,), (8,), (3,))
    tl.store(out + tl.arange(0, 8), s)
    tl.store(out + 8, ext.get_element(v, (N - 1,)))


@triton.jit
def bad_extract(x, out):
    v = tl.load(x + tl.arange(0, 16))
    tl.store(out + tl.arange(0, 8), ext.extract_slice(v, (10,), (8,), (1,)))


@triton.jit
def bad_element(x, out):
    v = tl.load(x + tl.arange(0, 16))
    tl.store(out, ext.get_element(v, (16,)))


@pytest.mark.parametrize("dtype", ["*fp32", "*fp16", "*bf16"])
def test_slices_2d_compile(compile_ptx, dtype):
    ptx = compile_ptx(slices_2d, {"x": dtype, "out_ex": dtype, "out_in": dtype, "out_el": dtype},
                      {"R": 16, "C": 32})
    assert ".entry slices_2d" in ptx


def test_slices_1d_compile(compile_ptx):
    ptx = compile_ptx(slices_1d, {"x": "*i32", "out": "*i32"}, {"N": 32})
    assert ".entry slices_1d" in ptx


@pytest.mark.parametrize("fn, msg", [(bad_extract, "offset 10, size 8, stride 1 leave [0, 16)"),
                                     (bad_element, "offset [16] is outside a tensor of shape [16]")])
def test_bad_arguments(compile_ptx, fn, msg):
    with pytest.raises(Exception) as e:
        compile_ptx(fn, {"x": "*fp32", "out": "*fp32"})
    assert msg in str(e.value)


@triton.jit
def block_sync(buf, out, flags, P: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(buf + pid, pid * 10 + 1)
    ext.sync_block_all("all", 0, flags=flags)
    v = tl.load(buf + (pid + 1) % P)
    if pid == 0:
        tl.store(out + P, 7)
        ext.sync_block_set("cube", "vector", 1, flags=flags)
    if pid == 1:
        ext.sync_block_wait("cube", "vector", 1, flags=flags)
        tl.store(out + P + 1, tl.load(out + P))
    tl.store(out + pid, v)


@triton.jit
def block_sync_no_flags(out):
    ext.sync_block_all("all", 0)


def test_block_sync_compiles_with_bounded_waits(compile_ptx):
    ptx = compile_ptx(block_sync, {"buf": "*i32", "out": "*i32", "flags": "*i32"}, {"P": 8})
    assert ptx.count("atom.acq_rel.gpu.global.add.u32") == 1  # one arrival per program (thread 0)
    assert "red.release.gpu.global.add.u32" in ptx  # generation bump / event set
    assert ptx.count("%globaltimer") >= 2 and ptx.count("trap;") >= 2  # both waits bounded


def test_block_sync_needs_flags(compile_ptx):
    with pytest.raises(Exception) as e:
        compile_ptx(block_sync_no_flags, {"out": "*i32"})
    assert "events live in memory: pass flags=" in str(e.value)
