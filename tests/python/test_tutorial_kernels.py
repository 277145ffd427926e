"""The Triton-distributed tutorial-style kernels of tutorial_kernels.py compile for sm_90 against the
device bitcode built from the current sources, with the synchronisation their scopes promise (the
GPU worker gpu_compat_worker.py runs them)."""
import re
import warnings

import pytest

import tutorial_kernels as tk
from conftest import body

CASES = {
    "queue": (tk.queue_kernel, {"input_ptr": "*fp32", "output_ptr": "*fp32", "num_inputs": "i32", "queue_ptr": "*fp32",
                                "signal_ptr": "*i64"},
              {"rank": 0, "num_ranks": 2, "QUEUE_SIZE": 8, "BLOCK_SIZE": 128, "NUM_PRODUCERS": 4, "NUM_CONSUMERS": 2}),
    "allgather": (tk.allgather_push_kernel, {"ag_buffer_ptr": "*bf16", "signal_ptr": "*i64", "elem_per_rank": "i32",
                                             "size_per_elem": "i32", "signal_target": "i64", "rank": "i32",
                                             "world_size": "i32"}, {}),
    "reduce_scatter": (tk.reduce_scatter_kernel, {"input_ptr": "*fp16", "recv_ptr": "*fp16", "signal_ptr": "*i64",
                                                  "output_ptr": "*fp16", "call_count": "i64", "rank": "i32",
                                                  "world_size": "i32", "M_per_rank": "i32", "N": "i32"},
                       {"BLOCK_M": 16, "BLOCK_N": 128}),
    "ag_producer": (tk.ag_producer_kernel, {"ag_buffer_ptr": "*fp16", "ready_ptr": "*i64", "ready_value": "i64",
                                            "M_per_rank": "i32", "K": "i32", "rank": "i32", "world_size": "i32"}, {}),
    "ag_gemm": (tk.ag_consumer_gemm_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32",
                                             "N": "i32", "K": "i32", "rank": "i32", "num_ranks": "i32",
                                             "ready_ptr": "*i64", "ready_value": "i64"},
                {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}),
    "gemm_rs": (tk.gemm_rs_producer_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "scatter_ptr": "*fp32",
                                             "counter_ptr": "*i64", "M": "i32", "N": "i32", "K": "i32"},
                {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}),
    "rs_reduce": (tk.gemm_rs_reduce_kernel, {"scatter_ptr": "*fp32", "counter_ptr": "*i64", "out_ptr": "*fp32",
                                             "expected": "i64", "M_per_rank": "i32", "N": "i32"},
                  {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64}),
    "all_to_all": (tk.all_to_all_kernel, {"send_tensor": "*fp16", "data_src": "*fp16", "data_dst": "*fp16",
                                          "splits_src": "*i32", "splits_dst": "*i32", "signal": "*i64",
                                          "send_splits_cumsum": "*i32", "rank": "i32", "call_count": "i64",
                                          "act_pos": "i32"}, {"WORLD_SIZE": 4, "HIDDEN": 128, "MAX_M": 64, "BM": 16}),
    "api_basic": (tk.api_basic_kernel, {"output": "*i32", "flag": "*i32", "symm_i32": "*i32", "counter": "*i32"}, {}),
}
for _scope in ("block", "warp", "thread"):
    for _nbi in (False, True):
        CASES[f"api_rma_{_scope}{'_nbi' if _nbi else ''}"] = (
            tk.api_rma_kernel, {"dst": "*u8", "src": "*u8", "nbytes": "i64", "sig": "*u64", "call_count": "i64"},
            {"scope": _scope, "nbi": _nbi})
    CASES[f"api_get_{_scope}"] = (tk.api_get_kernel, {"dst": "*u8", "src": "*u8", "nbytes": "i64"}, {"scope": _scope})
    for _kind in ("broadcast", "fcollect"):
        CASES[f"api_{_kind}_{_scope}"] = (tk.api_collective_kernel, {"dst": "*i32", "src": "*i32", "nelems": "i32",
                                                                     "root": "i32"}, {"scope": _scope, "kind": _kind})


def _ptx(compile_ptx, name):
    fn, sig, const = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SlotStrideWarning: every multi-slot wait says its stride
        return body(compile_ptx(fn, sig, const))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles(compile_ptx, name):
    b = _ptx(compile_ptx, name)
    assert not re.search(r"call\.uni[^;]*tdist", b), "a device-ABI call was not inlined"


def test_queue_waits_and_notifies(compile_ptx):
    b = _ptx(compile_ptx, "queue")
    assert re.search(r"ld\.acquire\.sys\.global\.(u|b)64", b)  # dl.wait (also on the peer's slot)
    assert re.search(r"st\.release\.sys\.global\.(u|b)64", b)  # dl.notify set
    assert "fence.acq_rel.sys" in b  # libshmem_device.fence


def test_thread_scope_calls_have_no_cta_barrier(compile_ptx):
    # the thread forms run under `if tid == 0`: only the kernel's own __syncthreads join the CTA
    assert body(compile_ptx(*CASES["api_rma_thread"][:2], CASES["api_rma_thread"][2])).count("bar.sync") == 2
    assert _ptx(compile_ptx, "api_get_thread").count("bar.sync") == 0
    assert _ptx(compile_ptx, "api_get_warp").count("bar.sync") == 0
    b = _ptx(compile_ptx, "api_broadcast_thread")
    assert b.count("bar.sync") == 1 and "activemask.b32" in b  # the thread-form barrier checks its caller


def test_ag_gemm_waits_contiguous_slots(compile_ttir):
    fn, sig, const = CASES["ag_gemm"]
    ir = compile_ttir(fn, sig, const)
    calls = [ln for ln in ir.splitlines() if "tdistx_wait_int64_strided_i64" in ln]
    assert len(calls) == 1, "the multi-slot wait with slot_stride=1 is not the strided ABI wait"
    assert re.search(r"arith\.constant 8 : i64", ir), "int64 slots one element apart: a stride of 8 bytes"
