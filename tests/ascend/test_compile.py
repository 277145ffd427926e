"""Kernels written with dl.* / libshmem_device compile with the real triton-ascend 3.2 to the
ttadapter file bishengir-compile takes, every distributed op an aclshmem call with the seed's
attributes (seed 000 sections 3.3-3.5, docs/COMPILE.md section 3)."""
import re

import pytest
import triton
import triton.language as tl

import triton_dist.language as dl
from triton_dist import ascend
from triton_dist.language.extra import libshmem_device as shm

import ring_kernel


def _calls(text):
    """(symbol, attribute text) of every func.call to an aclshmem symbol in a ttadapter file."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"call @(aclshmemx?_\w+)\(.*?\)\s*(\{[^}]*\})?\s*:", text)]


def _compile(fn, sig, cst):
    return ascend.compile_to_ttadapter(fn, sig, cst)


def test_ring_kernel_to_ttadapter():
    name, fn, sig, cst = ring_kernel.compile_cases()[0]
    c = _compile(fn, sig, cst)
    # stage ttir: the front end's marker calls
    for sym in ("tdist_my_pe", "tdist_n_pes", "tdist_ptr_i64", "tdistx_notify_int64", "tdistx_wait_int64",
                "tdistx_consume_token_ptr"):
        assert f'symbol = "{sym}"' in c.ttir, sym
    # raised: the seven ops of the dialect
    for op in ("distributed.get_rank", "distributed.get_num_ranks", "distributed.symm_at", "distributed.notify",
               "distributed.wait", "distributed.consume_token"):
        assert op in c.dist, op
    calls = dict(_calls(c.ttadapter))
    for sym in ("aclshmem_my_pe", "aclshmem_n_pes", "aclshmem_ptr_float", "aclshmem_int64_p", "aclshmem_wait_int64",
                "aclshmem_consume_token_float_ptr"):
        assert sym in calls, (sym, sorted(calls))
        attrs = calls[sym] or ""
        assert "hivm.is_distributed" in attrs and "#hivm.pipe<PIPE_S>" in attrs, (sym, attrs)
        assert "#hivm.tcore_type<VECTOR>" in attrs, (sym, attrs)  # no tl.dot: a pure AIV kernel
        assert f'symbol = "{sym}"' in attrs
    # pure ops carry no_side_effect, the others do not (table 2.4)
    assert "no_side_effect" in calls["aclshmem_my_pe"] and "no_side_effect" not in calls["aclshmem_wait_int64"]
    # the symm_at of the kernel argument `inbox` (operand 0) is a GM address argument
    assert "gm_addr_args_indices = array<i32: 0>" in calls["aclshmem_ptr_float"]
    # the link-time declarations (seed 4.2: _mlir_ciface_ names)
    assert re.search(r"func.func private @aclshmem_wait_int64\(i64, i32, i64\) -> i32 "
                     r"attributes \{[^}]*llvm.emit_c_interface",
                     c.ttadapter)
    assert "libtdist_device" not in c.ttadapter  # no marker left


@triton.jit
def _dot_kernel(a, b, c, sig, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(a + offs[:, None] * BLOCK + offs[None, :])
    y = tl.load(b + offs[:, None] * BLOCK + offs[None, :])
    tok = dl.wait(sig, 1, "gpu", "acquire", waitValue=1)
    z = tl.dot(x, y)
    cc = dl.consume_token(c, tok)
    tl.store(cc + offs[:, None] * BLOCK + offs[None, :], z)
    shm.barrier_all()
    shm.putmem(c, a, 64, dl.rank())


def test_tcore_type_with_dot_and_prefix_table():
    c = _compile(_dot_kernel, {"a": "*fp16", "b": "*fp16", "c": "*fp32", "sig": "*i32"}, {"BLOCK": 16})
    calls = dict(_calls(c.ttadapter))
    assert "#hivm.tcore_type<CUBE_AND_VECTOR>" in calls["aclshmem_wait_int32"]  # existDot
    assert "#hivm.tcore_type<CUBE_AND_VECTOR>" in calls["aclshmem_barrier_all"]  # prefix table
    assert "#hivm.tcore_type<VECTOR>" in calls["aclshmem_putmem"]  # prefix table
    assert "gm_addr_args_indices = array<i32: 0, 1>" in calls["aclshmem_putmem"]


@triton.jit
def _block_symm_at(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    q = dl.symm_at(p + offs, 1)
    tl.store(q, tl.zeros([BLOCK], tl.float32))


def test_block_of_pointers_is_a_named_error():
    with pytest.raises(Exception, match=r"dl.symm_at: ptr is a block of shape \[16\]; on ascend"):
        _compile(_block_symm_at, {"p": "*fp32", "n": "i32"}, {"BLOCK": 16})


@triton.jit
def _wait32(sig):
    shm.signal_wait_until(sig, shm.CMP_GE, 1)


def test_32bit_signal_wait_until_is_a_named_error():
    with pytest.raises(Exception, match="signal_wait_until: the signal must be 64-bit"):
        _compile(_wait32, {"sig": "*i32"}, {})


@triton.jit
def _add64(sig):
    dl.notify(sig, 0, 1, sig_op="add")


def test_64bit_add_is_refused_on_ascend():
    with pytest.raises(Exception, match="on Ascend a int64 signal supports sig_op='set' only"):
        _compile(_add64, {"sig": "*i64"}, {})


def test_cli_writes_the_files(tmp_path):
    import subprocess
    import sys
    from conftest import REPO
    r = subprocess.run([sys.executable, "-m", "triton_dist.compile", str(REPO / "examples" / "ring_kernel.py"), "-o",
                        str(tmp_path)], capture_output=True, text=True, cwd=REPO / "python")
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["ring_kernel.dist.ttir", "ring_kernel.hivm.ttir", "ring_kernel.ttadapter", "ring_kernel.ttir"]
    assert "aclshmem_wait_int64" in (tmp_path / "ring_kernel.ttadapter").read_text()


def _kernel_cases():
    import tdist_kernels
    return {c[0]: c for c in tdist_kernels.all_compile_cases("fp16")}


# The aclshmem symbols each kernel's ttadapter file calls (fp16 data, int64 signals): exactly these.
_BASE = {"aclshmem_fence", "aclshmem_int64_p", "aclshmem_ptr_half"}
EXPECTED_CALLS = {
    "reverse_a2a_mte": _BASE | {"aclshmem_wait_int64", "aclshmem_consume_token_half_ptr", "aclshmem_ptr_int64"},
    "reverse_a2a_bulk": _BASE | {"aclshmem_signal_wait_until"},
    "reverse_a2a_wait_notify": _BASE | {"aclshmem_wait_int64", "aclshmem_consume_token_half_ptr"},
    "reverse_a2a_direct": _BASE | {"aclshmem_wait_int64", "aclshmem_consume_token_half_ptr", "aclshmem_ptr_int64"},
    "dispatch_a2a": _BASE | {"aclshmem_signal_wait_until"},
    "dispatch_a2a_direct": _BASE | {"aclshmem_wait_int64", "aclshmem_consume_token_half_ptr", "aclshmem_ptr_int64"},
    "allreduce_one_shot": _BASE | {"aclshmem_signal_wait_until"},
    "allreduce_two_shot": _BASE | {"aclshmem_signal_wait_until"},
    "allreduce_ring": _BASE | {"aclshmem_wait_int64", "aclshmem_consume_token_half_ptr"},
    "ag_gemm": {"aclshmem_wait_int64", "aclshmem_consume_token_half_ptr"},
    "gemm_rs": {"aclshmem_fence", "aclshmem_int64_p", "aclshmem_ptr_float", "aclshmem_wait_int64",
                "aclshmem_consume_token_float_ptr"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_CALLS))
def test_tdist_kernels_to_ttadapter(name):
    """Every communication kernel of tdist_kernels compiles with the real triton-ascend to the
    ttadapter file, each distributed op an aclshmem call with the seed's attributes."""
    _, fn, sig, cst, _ = _kernel_cases()[name]
    c = _compile(fn, sig, cst)
    calls = _calls(c.ttadapter)
    seen = {s for s, _ in calls}
    assert seen == EXPECTED_CALLS[name], (name, sorted(seen))
    dot = "tt.dot" in c.ttir
    for sym, attrs in calls:
        attrs = attrs or ""
        assert "hivm.is_distributed" in attrs and "#hivm.pipe<PIPE_S>" in attrs and f'symbol = "{sym}"' in attrs, \
            (sym, attrs)
        if sym.startswith(("aclshmem_putmem", "aclshmem_getmem", "aclshmemx_barrier_all_vec")):
            want = "VECTOR"
        elif sym.startswith("aclshmem_barrier_all"):
            want = "CUBE_AND_VECTOR"
        else:
            want = "CUBE_AND_VECTOR" if dot else "VECTOR"
        assert f"#hivm.tcore_type<{want}>" in attrs, (sym, attrs)
    assert "libtdist_device" not in c.ttadapter and "libshmem_device" not in c.ttadapter


def test_ll_allreduce_is_refused_on_ascend():
    _, fn, sig, cst, _ = _kernel_cases()["allreduce_ll"]
    with pytest.raises(Exception, match="all_reduce one_shot_ll is not available on ascend"):
        _compile(fn, sig, cst)


def test_a_tool_killed_by_a_signal_is_run_again_and_an_error_exit_is_not(capsys):
    """ascend._retry_tool_crash: a triton-ascend tool that dies by a signal (SIGSEGV) runs again, at
    most TOOL_CRASH_RETRIES times, each retry said on stderr; an error exit is raised at once."""
    import subprocess
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise subprocess.CalledProcessError(-11, ["/x/triton-adapter-opt", "in.mlir"])
        return "ttadapter text"

    assert ascend._retry_tool_crash("k", flaky) == "ttadapter text" and len(calls) == 2
    assert "compiling k: triton-adapter-opt died by signal 11; running it again (1 of" in capsys.readouterr().err

    def broken():
        calls.append(1)
        raise subprocess.CalledProcessError(1, ["triton-adapter-opt"])

    calls.clear()
    with pytest.raises(subprocess.CalledProcessError):
        ascend._retry_tool_crash("k", broken)
    assert len(calls) == 1  # a compile error is not retried

    def dead():
        calls.append(1)
        raise subprocess.CalledProcessError(-11, ["triton-adapter-opt"])

    calls.clear()
    with pytest.raises(subprocess.CalledProcessError):
        ascend._retry_tool_crash("k", dead)
    assert len(calls) == ascend.TOOL_CRASH_RETRIES + 1
