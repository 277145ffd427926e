"""Kernels written the way Triton-distributed's tutorials write them (same imports, same dl.* and
libshmem_device signatures, keyword spellings included) compile unchanged for sm_90 against the
real device bitcode. Only host-side set-up differs on tdist (shmem / tdist-run instead of
NVSHMEM); these kernels carry no tdist-specific code."""
import re

import triton
import triton.language as tl

import triton_dist.language as dl
from triton_dist.language.extra import libshmem_device
from conftest import body


@triton.jit
def producer_consumer_kernel(input_ptr, queue_ptr, signal_ptr, output_ptr, N: tl.constexpr,
                             BLOCK: tl.constexpr):
    # program 0 produces into the next rank's queue, program 1 consumes what the previous rank sent
    pid = tl.program_id(0)
    rank = dl.rank()
    world = dl.num_ranks()
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        peer = (rank + 1) % world
        data = tl.load(input_ptr + offs, mask=offs < N)
        remote_queue = dl.symm_at(queue_ptr, peer)
        tl.store(remote_queue + offs, data, mask=offs < N)
        libshmem_device.fence()
        dl.notify(signal_ptr, peer, signal=1, sig_op="set", comm_scope="intra_node")
    else:
        token = dl.wait(signal_ptr, 1, "gpu", "acquire", waitValue=1)
        queue_ptr = dl.consume_token(queue_ptr, token)
        data = tl.load(queue_ptr + offs, mask=offs < N)
        tl.store(output_ptr + offs, data, mask=offs < N)
        dl.notify(signal_ptr, rank, signal=0, sig_op="set")  # return the credit (seed 002)


@triton.jit
def allgather_push_kernel(symm_buf, signal_ptr, local_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    rank = dl.rank()
    world = dl.num_ranks()
    offs = tl.arange(0, BLOCK)
    data = tl.load(local_ptr + offs, mask=offs < N)
    for peer in range(0, world):
        remote = dl.symm_at(symm_buf, peer)
        tl.store(remote + rank * N + offs, data, mask=offs < N)
    libshmem_device.fence()
    for peer in range(0, world):
        dl.notify(signal_ptr + rank * 8, peer, signal=1, sig_op="add", comm_scope="intra_node")
    # tdist's layout (one slot per 64 bytes, as the notifies above address them), said explicitly
    token = dl.wait(signal_ptr, world, "sys", "acquire", waitValue=1, slot_stride=8)
    symm_buf = dl.consume_token(symm_buf, token)
    tl.store(local_ptr + offs, tl.load(symm_buf + offs, mask=offs < N), mask=offs < N)


@triton.jit
def shmem_put_signal_kernel(dst, src, sig, nbytes):
    me = libshmem_device.my_pe()
    peer = (me + 1) % libshmem_device.n_pes()
    libshmem_device.putmem_signal_nbi_block(dst, src, nbytes, sig, 1, libshmem_device.NVSHMEM_SIGNAL_SET, peer)
    libshmem_device.quiet()
    libshmem_device.signal_wait_until(sig, libshmem_device.NVSHMEM_CMP_EQ, 1)
    libshmem_device.barrier_all_block()


def test_producer_consumer_tutorial(compile_ptx_real):
    b = body(compile_ptx_real(producer_consumer_kernel,
                              {"input_ptr": "*fp16", "queue_ptr": "*fp16", "signal_ptr": "*i64",
                               "output_ptr": "*fp16"}, {"N": 1000, "BLOCK": 1024}))
    assert re.search(r"ld\.acquire\.sys\.global\.(u|b|s)64", b), "wait is not a system-scope acquire"
    assert re.search(r"st\.release\.sys\.global\.(u|b|s)64", b), "notify is not a release store"
    assert "fence.acq_rel.sys" in b or "fence.sc.sys" in b, "libshmem_device.fence() left no fence"


def test_allgather_push_tutorial(compile_ptx_real):
    b = body(compile_ptx_real(allgather_push_kernel,
                              {"symm_buf": "*bf16", "signal_ptr": "*i64", "local_ptr": "*bf16"},
                              {"N": 256, "BLOCK": 256}))
    assert re.search(r"(red|atom)\.release\.sys\.global\.add", b), "add-notify is not a release atomic"
    assert re.search(r"ld\.acquire\.sys\.global", b)


def test_libshmem_device_tutorial(compile_ptx_real):
    b = body(compile_ptx_real(shmem_put_signal_kernel,
                              {"dst": "*fp32", "src": "*fp32", "sig": "*u64", "nbytes": "i64"}))
    assert "ld.acquire.sys" in b, "signal_wait_until is not an acquire"
    assert "st.release.sys" in b, "the put's signal is not a release store"
    assert "bar.sync" in b, "block-wide put / barrier_all left no CTA barrier"
    assert "ld.const" in b, "the device state is not read from constant memory"
