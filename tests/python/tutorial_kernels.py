"""Kernels in the style of Triton-distributed's public tutorials, written against its public names
only: ``triton_dist.jit``, ``triton_dist.language`` (dl), ``triton_dist.language.extra.libshmem_device``
(NVSHMEM's thread / warp / block scopes) and ``triton_dist.language.extra.language_extra`` (the SIMT
layer). The host side (tests/python/gpu_compat_worker.py) uses ``triton_dist.utils``.

The one tdist-specific spelling is ``slot_stride=1`` on a multi-slot ``dl.wait`` (Triton-distributed
reads consecutive slots; tdist reads 64-byte slots unless told: docs/PORTING.md).

test_tutorial_kernels.py compiles each for sm_90 in CI; the GPU worker runs each against exact
references at 2, 4 and 8 ranks.
"""
import triton
import triton.language as tl

import triton_dist
import triton_dist.language as dl
from triton_dist.language.extra import libshmem_device
from triton_dist.language.extra.language_extra import __syncthreads, atomic_add, st, tid


# ---------------------------------------------------------------------------------------------
# 1. notify / wait: a producer-consumer queue into the next rank (tutorial 01)


@triton_dist.jit
def queue_kernel(
    rank: tl.constexpr,
    num_ranks: tl.constexpr,
    input_ptr,
    output_ptr,
    num_inputs,
    queue_ptr,  # symmetric: QUEUE_SIZE blocks of BLOCK_SIZE
    signal_ptr,  # symmetric int64, one per queue slot, 0 at the start
    QUEUE_SIZE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    NUM_PRODUCERS: tl.constexpr,
    NUM_CONSUMERS: tl.constexpr,
):
    """Producers push block i into slot i % QUEUE_SIZE of the next rank's queue; that rank's
    consumers copy it out. Slot s holds 2 * lap while free for lap ``lap``, 2 * lap + 1 once full."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    if pid < NUM_PRODUCERS:
        peer = (rank + 1) % num_ranks
        for i in range(pid, num_inputs, NUM_PRODUCERS):
            slot = i % QUEUE_SIZE
            lap = i // QUEUE_SIZE
            token = dl.wait(dl.symm_at(signal_ptr, peer) + slot, 1, "gpu", "acquire", waitValue=lap * 2)
            src = dl.consume_token(input_ptr, token)
            data = tl.load(src + i * BLOCK_SIZE + offs)
            tl.store(dl.symm_at(queue_ptr, peer) + slot * BLOCK_SIZE + offs, data)
            __syncthreads()
            libshmem_device.fence()
            dl.notify(signal_ptr + slot, peer, signal=lap * 2 + 1, sig_op="set", comm_scope="intra_node")
    elif pid < NUM_PRODUCERS + NUM_CONSUMERS:
        pid = pid - NUM_PRODUCERS
        for i in range(pid, num_inputs, NUM_CONSUMERS):
            slot = i % QUEUE_SIZE
            lap = i // QUEUE_SIZE
            token = dl.wait(signal_ptr + slot, 1, "gpu", "acquire", waitValue=lap * 2 + 1)
            queue = dl.consume_token(queue_ptr, token)
            tl.store(output_ptr + i * BLOCK_SIZE + offs, tl.load(queue + slot * BLOCK_SIZE + offs))
            __syncthreads()
            libshmem_device.fence()
            dl.notify(signal_ptr + slot, rank, signal=lap * 2 + 2, sig_op="set", comm_scope="intra_node")


# ---------------------------------------------------------------------------------------------
# 2. intra-node all-gather: block puts with a signal per segment (tutorial 02)


@triton_dist.jit
def allgather_push_kernel(
    ag_buffer_ptr,  # symmetric [world * elem_per_rank]; this rank's segment filled by the host
    signal_ptr,  # symmetric NVSHMEM_SIGNAL_DTYPE [world]
    elem_per_rank,
    size_per_elem,
    signal_target,
    rank,
    world_size,
):
    """Program p sends this rank's segment to rank ``rank + p + 1`` and sets its signal there, then
    waits (thread 0) for the segment of rank ``rank - p - 1``."""
    pid = tl.program_id(0)
    peer = (rank + pid + 1) % world_size
    libshmem_device.putmem_signal_block(
        ag_buffer_ptr + rank * elem_per_rank,
        ag_buffer_ptr + rank * elem_per_rank,
        elem_per_rank * size_per_elem,
        signal_ptr + rank,
        signal_target,
        libshmem_device.NVSHMEM_SIGNAL_SET,
        peer,
    )
    src = (rank - pid - 1 + world_size) % world_size
    if tid(0) == 0:
        libshmem_device.signal_wait_until(signal_ptr + src, libshmem_device.NVSHMEM_CMP_EQ, signal_target)
    __syncthreads()


# ---------------------------------------------------------------------------------------------
# 3. intra-node reduce-scatter: nbi pushes, then a contiguous multi-slot wait (tutorial 05)


@triton_dist.jit
def reduce_scatter_kernel(
    input_ptr,  # symmetric [world, M_per_rank, N]: chunk r goes to rank r
    recv_ptr,  # symmetric [world, M_per_rank, N]: slot s holds what rank s sent here
    signal_ptr,  # symmetric int64 [world]
    output_ptr,  # [M_per_rank, N]
    call_count,
    rank,
    world_size,
    M_per_rank,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Program p pushes chunk p to rank p (putmem_nbi_block, quiet, then thread 0 signals), then every
    program waits for all ranks' chunks and reduces its rows."""
    pid = tl.program_id(0)
    npid = tl.num_programs(0)
    chunk = M_per_rank * N
    for peer in range(pid, world_size, npid):
        libshmem_device.putmem_nbi_block(recv_ptr + rank * chunk, input_ptr + peer * chunk,
                                         chunk * input_ptr.dtype.element_ty.primitive_bitwidth // 8, peer)
        libshmem_device.quiet()
        if tid(0) == 0:
            libshmem_device.signal_op(signal_ptr + rank, call_count, libshmem_device.NVSHMEM_SIGNAL_SET, peer)
        __syncthreads()
    token = dl.wait(signal_ptr, world_size, "gpu", "acquire", waitValue=call_count, slot_stride=1)
    recv = dl.consume_token(recv_ptr, token)
    rn = tl.arange(0, BLOCK_N)
    for m0 in range(pid * BLOCK_M, M_per_rank, npid * BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        mask = (rm[:, None] < M_per_rank) & (rn[None, :] < N)
        offs = rm[:, None] * N + rn[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in range(0, world_size):
            acc += tl.load(recv + s * chunk + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(output_ptr + offs, acc.to(output_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------------------------
# 4. AG + GEMM: a producer pushing A's row blocks with signals, a GEMM waiting per tile (tutorial 07)


@triton_dist.jit
def ag_producer_kernel(
    ag_buffer_ptr,  # symmetric [M, K]: rows rank * M_per_rank.. filled by the host
    ready_ptr,  # symmetric int64 [world]
    ready_value,
    M_per_rank,
    K,
    rank,
    world_size,
):
    pid = tl.program_id(0)
    peer = (rank + pid + 1) % world_size
    libshmem_device.putmem_signal_nbi_block(
        ag_buffer_ptr + rank * M_per_rank * K,
        ag_buffer_ptr + rank * M_per_rank * K,
        M_per_rank * K * 2,
        ready_ptr + rank,
        ready_value,
        libshmem_device.NVSHMEM_SIGNAL_SET,
        peer,
    )


@triton.jit
def ag_consumer_gemm_kernel(
    a_ptr,  # the gather buffer [M, K] (fp16)
    b_ptr,  # [K, N] (fp16)
    c_ptr,  # [M, N] (fp32)
    M,
    N,
    K,
    rank,
    num_ranks,
    ready_ptr,
    ready_value,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
):
    """Tiles start at this rank's own rows (swizzled by rank) and wait for the row blocks they read."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    M_per_rank = M // num_ranks
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    pid_m = (pid_m + rank * tl.cdiv(M_per_rank, BLOCK_SIZE_M)) % num_pid_m
    offs_am = pid_m * BLOCK_SIZE_M
    rank_beg = offs_am // M_per_rank
    rank_end = (tl.minimum(offs_am + BLOCK_SIZE_M, M) - 1) // M_per_rank
    token = dl.wait(ready_ptr + rank_beg, rank_end - rank_beg + 1, "gpu", "acquire", waitValue=ready_value,
                    slot_stride=1)
    a_ptr = dl.consume_token(a_ptr, token)
    rm = offs_am + tl.arange(0, BLOCK_SIZE_M)
    rn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    rk = tl.arange(0, BLOCK_SIZE_K)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_SIZE_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# ---------------------------------------------------------------------------------------------
# 5. GEMM + RS: tiles stored into their owner's buffer, counted by add-notifies; a reduction kernel
# (tutorial 08)


@triton_dist.jit
def gemm_rs_producer_kernel(
    a_ptr,  # [M, K] this rank's activations (fp16)
    b_ptr,  # [K, N] this rank's weight shard (fp16)
    scatter_ptr,  # symmetric [world, M_per_rank, N] fp32: slot s holds rank s's partial of my rows
    counter_ptr,  # symmetric int64 [tiles of M_per_rank x N], counts the ranks whose tile arrived
    M,
    N,
    K,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
):
    rank = dl.rank()
    num_ranks = dl.num_ranks()
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    M_per_rank = M // num_ranks
    rm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    rn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    rk = tl.arange(0, BLOCK_SIZE_K)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_SIZE_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    owner = (pid_m * BLOCK_SIZE_M) // M_per_rank
    local_m = rm - owner * M_per_rank
    dst = dl.symm_at(scatter_ptr, owner) + rank * M_per_rank * N
    tl.store(dst + local_m[:, None] * N + rn[None, :], acc, mask=(rn[None, :] < N))
    __syncthreads()
    libshmem_device.fence()
    tile = (pid_m - owner * (M_per_rank // BLOCK_SIZE_M)) * num_pid_n + pid_n
    dl.notify(counter_ptr + tile, owner, signal=1, sig_op="add", comm_scope="intra_node")


@triton_dist.jit
def gemm_rs_reduce_kernel(
    scatter_ptr,
    counter_ptr,
    out_ptr,  # [M_per_rank, N] fp32
    expected,  # ranks * calls so far: the counters only grow
    M_per_rank,
    N,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
):
    num_ranks = dl.num_ranks()
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    if tid(0) == 0:
        libshmem_device.int64_wait_until(counter_ptr + pid, libshmem_device.NVSHMEM_CMP_GE, expected)
    __syncthreads()
    rm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    rn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs = rm[:, None] * N + rn[None, :]
    mask = (rm[:, None] < M_per_rank) & (rn[None, :] < N)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for s in range(0, num_ranks):
        acc += tl.load(scatter_ptr + s * M_per_rank * N + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc, mask=mask)


# ---------------------------------------------------------------------------------------------
# 6. DeepSeek-style all-to-all: one program per peer, nbi block puts, a thread-0 signal (tutorial 04)


@triton_dist.jit
def all_to_all_kernel(
    send_tensor,  # [num_tokens, HIDDEN] (fp16), tokens sorted by destination rank
    data_src,  # symmetric send buffer [MAX_M, HIDDEN]
    data_dst,  # symmetric receive buffer [2, WORLD_SIZE, MAX_M, HIDDEN]
    splits_src,  # symmetric int32 [WORLD_SIZE]: this rank's token count per destination
    splits_dst,  # symmetric int32 [2, WORLD_SIZE]: the count each source sent here
    signal,  # symmetric int64 [2, WORLD_SIZE]
    send_splits_cumsum,  # int32 [WORLD_SIZE + 1]
    rank: int,
    call_count: int,
    act_pos: int,  # double buffering: which half of the receive buffers this call uses
    WORLD_SIZE: tl.constexpr,
    HIDDEN: tl.constexpr,
    MAX_M: tl.constexpr,
    BM: tl.constexpr,
):
    pid = tl.program_id(0)  # the peer this program serves
    threadidx = tid(axis=0)
    m_st = tl.load(send_splits_cumsum + pid)
    m_ed = tl.load(send_splits_cumsum + pid + 1)
    rows = m_ed - m_st
    signal_ptr = signal + act_pos * WORLD_SIZE + rank
    # stage the rows for this peer in the symmetric send buffer (rows m_st.. of data_src)
    off_m = tl.arange(0, BM)
    off_n = tl.arange(0, HIDDEN)
    for i in range(0, tl.cdiv(rows, BM)):
        r = m_st + i * BM + off_m
        mask = (r < m_ed)[:, None]
        tl.store(data_src + r[:, None] * HIDDEN + off_n[None, :],
                 tl.load(send_tensor + r[:, None] * HIDDEN + off_n[None, :], mask=mask), mask=mask)
    tl.store(splits_src + pid, rows)
    data_dst_ptr = data_dst + (act_pos * WORLD_SIZE + rank) * MAX_M * HIDDEN
    libshmem_device.putmem_nbi_block(data_dst_ptr, data_src + m_st * HIDDEN, rows * HIDDEN * 2, pid)
    libshmem_device.putmem_nbi_block(splits_dst + act_pos * WORLD_SIZE + rank, splits_src + pid, 4, pid)
    libshmem_device.fence()
    if threadidx == 0:
        libshmem_device.signal_op(signal_ptr, call_count, libshmem_device.NVSHMEM_SIGNAL_SET, pid)
        libshmem_device.signal_wait_until(signal + act_pos * WORLD_SIZE + pid, libshmem_device.NVSHMEM_CMP_EQ,
                                          call_count)
    __syncthreads()


# ---------------------------------------------------------------------------------------------
# libshmem_device and language_extra API kernels (test_nvshmem_api.py style)


@triton_dist.jit
def api_basic_kernel(output, flag, symm_i32, counter):
    """Thread 0 writes the team queries; every scope of int_p / barrier; atomics and st/ld."""
    pid = tl.program_id(0)
    thread_idx = tid(axis=0)
    me = libshmem_device.my_pe()
    n = libshmem_device.n_pes()
    peer = (me + 1) % n
    if thread_idx == 0:
        st(output, libshmem_device.my_pe())
        st(output + 1, libshmem_device.team_my_pe(libshmem_device.NVSHMEM_TEAM_WORLD))
        st(output + 2, libshmem_device.team_my_pe(libshmem_device.NVSHMEMX_TEAM_NODE))
        st(output + 3, libshmem_device.n_pes())
        st(output + 4, libshmem_device.team_n_pes(libshmem_device.NVSHMEM_TEAM_WORLD))
        st(output + 5, libshmem_device.team_translate_pe(libshmem_device.NVSHMEM_TEAM_WORLD, peer,
                                                         libshmem_device.NVSHMEMX_TEAM_NODE))
        st(output + 6, libshmem_device.team_translate_pe(libshmem_device.NVSHMEM_TEAM_WORLD, n,
                                                         libshmem_device.NVSHMEM_TEAM_WORLD))
        libshmem_device.int_p(symm_i32 + me, me + 100, peer)  # this rank's slot on the next rank
        atomic_add(counter, 1, "gpu", "relaxed")
    if pid == 0:
        libshmem_device.barrier_all_block()
        if thread_idx == 0:
            libshmem_device.barrier_all()
        if thread_idx // 32 == 0:
            libshmem_device.barrier_all_warp()
            libshmem_device.sync_all_warp()
        libshmem_device.sync_all_block()
        libshmem_device.barrier_block(libshmem_device.NVSHMEM_TEAM_WORLD)
        if thread_idx == 0:
            prev = (me + n - 1) % n
            v = libshmem_device.int_g(symm_i32 + prev, me)  # what the previous rank put here
            st(output + 7, v)
            st(output + 8, libshmem_device.int32_wait_until_equals(flag, 0))
    libshmem_device.quiet()
    libshmem_device.fence()


@triton_dist.jit
def api_rma_kernel(dst, src, nbytes, sig, call_count, scope: tl.constexpr, nbi: tl.constexpr):
    """One program per PE p != me gets its slot from p (getmem) and puts this PE's data into p's slot
    me (putmem), in the given scope; the last step signals, and everyone waits for every peer."""
    me = libshmem_device.my_pe()
    pid = tl.program_id(0)
    thread_idx = tid(axis=0)
    if pid != me:
        if scope == "block":
            if nbi:
                libshmem_device.putmem_nbi_block(dst + me * nbytes, src, nbytes, pid)
                libshmem_device.quiet()
            else:
                libshmem_device.putmem_block(dst + me * nbytes, src, nbytes, pid)
            libshmem_device.putmem_signal_block(dst + me * nbytes, src, 0, sig + me, call_count,
                                                libshmem_device.NVSHMEM_SIGNAL_SET, pid)
        elif scope == "warp":
            if thread_idx // 32 == 0:
                if nbi:
                    libshmem_device.putmem_signal_nbi_warp(dst + me * nbytes, src, nbytes, sig + me, call_count,
                                                           libshmem_device.NVSHMEM_SIGNAL_SET, pid)
                else:
                    libshmem_device.putmem_warp(dst + me * nbytes, src, nbytes, pid)
                    libshmem_device.putmem_signal_warp(dst + me * nbytes, src, 0, sig + me, call_count,
                                                       libshmem_device.NVSHMEM_SIGNAL_SET, pid)
            __syncthreads()
        else:
            if thread_idx == 0:
                if nbi:
                    libshmem_device.putmem_nbi(dst + me * nbytes, src, nbytes, pid)
                    libshmem_device.quiet()
                    libshmem_device.signal_op(sig + me, call_count, libshmem_device.NVSHMEM_SIGNAL_SET, pid)
                else:
                    libshmem_device.putmem_signal(dst + me * nbytes, src, nbytes, sig + me, call_count,
                                                  libshmem_device.NVSHMEM_SIGNAL_SET, pid)
            __syncthreads()
        if thread_idx == 0:
            libshmem_device.signal_wait_until(sig + pid, libshmem_device.NVSHMEM_CMP_EQ, call_count)
        __syncthreads()


@triton_dist.jit
def api_get_kernel(dst, src, nbytes, scope: tl.constexpr):
    """Program p != me reads PE p's ``src`` into slot p of this PE's ``dst`` (the host barriers
    before, so every src is ready)."""
    me = libshmem_device.my_pe()
    pid = tl.program_id(0)
    thread_idx = tid(axis=0)
    if pid != me:
        if scope == "block":
            libshmem_device.getmem_nbi_block(dst + pid * nbytes, src, nbytes, pid)
        elif scope == "warp":
            if thread_idx // 32 == 0:
                libshmem_device.getmem_warp(dst + pid * nbytes, src, nbytes, pid)
        else:
            if thread_idx == 0:
                libshmem_device.getmem(dst + pid * nbytes, src, nbytes, pid)


@triton_dist.jit
def api_collective_kernel(dst, src, nelems, root, scope: tl.constexpr, kind: tl.constexpr):
    """broadcast / fcollect in each scope, from one program per PE (NVSHMEM's collectives)."""
    thread_idx = tid(axis=0)
    team = libshmem_device.NVSHMEM_TEAM_WORLD
    if kind == "broadcast":
        if scope == "block":
            libshmem_device.broadcast_block(team, dst, src, nelems, root)
        elif scope == "warp":
            if thread_idx // 32 == 0:
                libshmem_device.broadcast_warp(team, dst, src, nelems, root)
            __syncthreads()
        else:
            if thread_idx == 0:
                libshmem_device.broadcast(team, dst, src, nelems, root)
            __syncthreads()
    else:
        if scope == "block":
            libshmem_device.fcollect_block(team, dst, src, nelems)
        elif scope == "warp":
            if thread_idx // 32 == 0:
                libshmem_device.fcollect_warp(team, dst, src, nelems)
            __syncthreads()
        else:
            if thread_idx == 0:
                libshmem_device.fcollect(team, dst, src, nelems)
            __syncthreads()
