"""Platform detection (seed 000 section 7.3).

The seed decides the platform by which vendor management tool is on PATH. tdist adds two things:

* ``is_cpu()``: true when none of the vendor tools is present (CPU ranks, CI machines);
* ``TDIST_PLATFORM`` (``cuda``, ``hip``, ``ascend``, ``maca`` or ``cpu``): when set, it names the
  platform and no tool is probed. CI uses it to compile CUDA kernels ahead of time on machines
  without a GPU (``TDIST_PLATFORM=cuda``). An unknown value is an error, never silently ignored.
"""
import os
import shutil

PLATFORMS = ("cuda", "hip", "ascend", "maca", "cpu")
_SMI_TOOLS = {"cuda": "nvidia-smi", "hip": "rocm-smi", "ascend": "npu-smi", "maca": "mx-smi"}


def _forced_platform():
    value = os.environ.get("TDIST_PLATFORM", "").strip().lower()
    if not value:
        return None
    if value not in PLATFORMS:
        raise ValueError(f"TDIST_PLATFORM={value!r} is not a platform; legal values: {', '.join(PLATFORMS)}")
    return value


def _is(platform):
    forced = _forced_platform()
    if forced is not None:
        return forced == platform
    return shutil.which(_SMI_TOOLS[platform]) is not None


def is_cuda():
    """NVIDIA GPU platform: ``nvidia-smi`` on PATH (or ``TDIST_PLATFORM=cuda``)."""
    return _is("cuda")


def is_hip():
    """AMD GPU platform: ``rocm-smi`` on PATH (or ``TDIST_PLATFORM=hip``)."""
    return _is("hip")


def is_ascend():
    """Ascend NPU platform: ``npu-smi`` on PATH (or ``TDIST_PLATFORM=ascend``)."""
    return _is("ascend")


def is_maca():
    """MetaX platform: ``mx-smi`` on PATH (or ``TDIST_PLATFORM=maca``)."""
    return _is("maca")


def is_cpu():
    """No accelerator tool found (or ``TDIST_PLATFORM=cpu``): CPU ranks only."""
    forced = _forced_platform()
    if forced is not None:
        return forced == "cpu"
    return not any(shutil.which(tool) for tool in _SMI_TOOLS.values())


def current_platform():
    """Name of the one platform whose predicate holds; error if none or several do."""
    hits = [name for name, pred in (("cuda", is_cuda), ("hip", is_hip), ("ascend", is_ascend),
                                    ("maca", is_maca), ("cpu", is_cpu)) if pred()]
    if len(hits) != 1:
        raise RuntimeError(f"platform detection found {hits or 'no platform'}; exactly one expected "
                           f"(tools: {_SMI_TOOLS}); set TDIST_PLATFORM to choose")
    return hits[0]


# ---------------------------------------------------------------------------------------------
# Host helpers under Triton-distributed's names (docs/PORTING.md), on tdist's own symmetric heap
# (no NVSHMEM). torch is optional: on CPU ranks without it, tensors are numpy arrays and the group
# is a TdistGroup. Every heap call is collective (same shapes, same order on every rank).

_WORLD = None  # the group initialize_distributed returned
_LOCAL_WORLD_SIZE = None
_TORCH_PG_OURS = False  # torch.distributed was initialized by initialize_distributed


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _on_gpu():
    torch = _torch()
    return is_cuda() and torch is not None and torch.cuda.is_available()


def _cuda_sync():
    if _on_gpu():
        _torch().cuda.synchronize()


class TdistGroup:
    """The world group when torch.distributed is not used: ``rank()``, ``size()``, ``barrier()`` over
    tdist's control plane."""

    def rank(self):
        import tdist
        return tdist.my_pe()

    def size(self):
        import tdist
        return tdist.n_pes()

    def barrier(self):
        import tdist
        tdist.ctrl_barrier()


def _size_bytes(text):
    """``NVSHMEM_SYMMETRIC_SIZE``-style sizes: bytes, or a number with K / M / G / T (powers of 1024)."""
    text = text.strip()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    scale = units.get(text[-1:].lower(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise ValueError(f"NVSHMEM_SYMMETRIC_SIZE={text!r} is not a size (bytes, or a number with K/M/G/T)") from None
    if value <= 0:
        raise ValueError(f"NVSHMEM_SYMMETRIC_SIZE={text!r} must be positive")
    return value


def init_seed(seed=0):
    """Seed Python's, numpy's and (when present) torch's generators."""
    import random
    random.seed(seed)
    try:
        import numpy as np
        np.random.seed(seed % (1 << 32))
    except ImportError:
        pass
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)
        if _on_gpu():
            torch.cuda.manual_seed_all(seed)


def initialize_distributed(seed=None, initialize_shmem=True, local_mem_size=None, init_torch_distributed=None):
    """Triton-distributed's set-up, on tdist: returns the world group (a torch ProcessGroup when
    torch.distributed is used, else a ``TdistGroup``; both have ``rank()`` and ``size()``).

    Reads RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun and
    tools/tdist-run set them). On CUDA it selects GPU ``LOCAL_RANK % device_count``. torch.distributed
    (``init_torch_distributed``: default when torch is importable) is initialized for host code that
    uses it: NCCL when every local rank has its own GPU, gloo when ranks share one (MPS, where NCCL
    refuses) or on CPU ranks. Seeds the generators (``seed``, default the rank). With
    ``initialize_shmem`` it initializes tdist's symmetric heap from the same environment
    (``shmem.init_from_env``; tdist's store listens on MASTER_PORT + 1): ``local_mem_size`` bytes per
    PE, else ``NVSHMEM_SYMMETRIC_SIZE`` from the environment, else tdist's default.
    """
    global _WORLD, _LOCAL_WORLD_SIZE, _TORCH_PG_OURS
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    world = int(os.environ.get("WORLD_SIZE", 1))
    _LOCAL_WORLD_SIZE = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    torch = _torch()
    if _on_gpu():
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    if init_torch_distributed is None:
        init_torch_distributed = torch is not None and torch.distributed.is_available()
    group = None
    if init_torch_distributed:
        import datetime
        dist = torch.distributed
        if not dist.is_initialized():
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29500")
            own_gpus = _on_gpu() and _LOCAL_WORLD_SIZE <= torch.cuda.device_count()
            dist.init_process_group(backend="cpu:gloo,cuda:nccl" if own_gpus else "gloo", world_size=world, rank=rank,
                                    timeout=datetime.timedelta(seconds=1800))
            _TORCH_PG_OURS = True
        group = dist.new_group(ranks=list(range(world)))
        dist.barrier(group)
    init_seed(rank if seed is None else seed)
    if initialize_shmem:
        import shmem
        size = local_mem_size
        if size is None and os.environ.get("NVSHMEM_SYMMETRIC_SIZE"):
            size = _size_bytes(os.environ["NVSHMEM_SYMMETRIC_SIZE"])
        shmem.init_from_env(local_mem_size=size)
    _WORLD = group if group is not None else TdistGroup()
    return _WORLD


def is_shmem_initialized():
    """True once tdist's heap is initialized (initialize_distributed or shmem's own init)."""
    try:
        import tdist
        return bool(tdist.initialized())
    except ImportError:
        return False


def get_triton_dist_world():
    """The group initialize_distributed returned (None before)."""
    return _WORLD


def get_triton_dist_local_world_size():
    """LOCAL_WORLD_SIZE as initialize_distributed read it (None before)."""
    return _LOCAL_WORLD_SIZE


def finalize_distributed():
    """Finalize tdist (reporting symmetric tensors never freed), then destroy the torch process group
    if initialize_distributed created it."""
    global _WORLD, _TORCH_PG_OURS
    _cuda_sync()
    if is_shmem_initialized():
        import shmem
        shmem.aclshmem_finalize()
    torch = _torch()
    if _TORCH_PG_OURS and torch is not None and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    _TORCH_PG_OURS = False
    _WORLD = None


def nvshmem_create_tensor(shape, dtype):
    """A tensor on the symmetric heap (collective; same shape and dtype on every rank; contents
    undefined): a torch CUDA tensor on the CUDA backend, a numpy array on CPU ranks. The device is
    synchronized before and after, as Triton-distributed does."""
    import shmem
    _cuda_sync()
    t = shmem.aclshmem_create_tensor(shape, dtype)
    _cuda_sync()
    return t


def _peer_view(t, pe):
    import shmem
    torch = _torch()
    if torch is not None and isinstance(t, torch.Tensor):
        return shmem.peer_tensor(t, pe)
    import ctypes

    import numpy as np
    import tdist
    addr = tdist.ptr(shmem.data_ptr(t), pe)
    if not addr:
        raise tdist.InvalidParam(f"nvshmem_create_tensors: PE {pe}'s heap is not mapped into this PE", -1)
    buf = (ctypes.c_uint8 * max(t.nbytes, 1)).from_address(addr)
    return np.frombuffer(buf, dtype=np.uint8, count=t.nbytes).view(t.dtype).reshape(t.shape)


def nvshmem_create_tensors(shape, dtype, rank, local_world_size):
    """One symmetric tensor, seen from this rank as the list of every same-node rank's copy
    (element ``i`` is local rank ``i``'s; this rank's own tensor at its place; the others are views
    through the peer mappings). Free it with ``nvshmem_free_tensor_sync(lst[rank % local_world_size])``."""
    t = nvshmem_create_tensor(shape, dtype)
    first = rank - rank % local_world_size
    return [t if pe == rank else _peer_view(t, pe) for pe in range(first, first + local_world_size)]


def nvshmem_free_tensor_sync(tensor):
    """Free a tensor of nvshmem_create_tensor (collective), synchronizing the device around it."""
    import shmem
    _cuda_sync()
    shmem.aclshmem_free_tensor(tensor)
    _cuda_sync()


def nvshmem_barrier_all_on_stream(stream=None):
    """Barrier over all PEs, in order on ``stream`` (default: torch's current stream); on CPU ranks
    a host barrier."""
    import shmem
    if _on_gpu() and shmem.on_cuda():
        shmem.barrier_all_on_stream(stream)
    else:
        shmem.barrier_all()


def dist_print(*args, allowed_ranks=(0,), prefix=False, need_sync=False, **kwargs):
    """``print`` on the ranks of ``allowed_ranks`` (``"all"``: every rank), optionally prefixed with
    ``[rank:N]``; ``need_sync``: the ranks print in order, with a barrier before each rank's turn."""
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    if isinstance(allowed_ranks, str):
        if allowed_ranks != "all":
            raise ValueError(f"dist_print: allowed_ranks={allowed_ranks!r}: a list of ranks or 'all'")
        allowed_ranks = range(world)
    for allowed in allowed_ranks:
        if need_sync:
            _barrier_any()
        if rank == allowed:
            if prefix:
                print(f"[rank:{rank}]", end="")
            print(*args, **kwargs)


def _barrier_any():
    if is_shmem_initialized():
        import tdist
        tdist.ctrl_barrier()
        return
    torch = _torch()
    if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()


def perf_func(func, iters, warmup_iters):
    """``(output of the last call, milliseconds per call)``: ``warmup_iters`` calls, then ``iters``
    timed calls (CUDA events on a GPU, the host clock on CPU ranks)."""
    for _ in range(warmup_iters):
        func()
    if _on_gpu():
        torch = _torch()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        output = None
        for _ in range(iters):
            output = func()
        stop.record()
        torch.cuda.synchronize()
        return output, start.elapsed_time(stop) / max(iters, 1)
    import time
    t0 = time.perf_counter()
    output = None
    for _ in range(iters):
        output = func()
    return output, (time.perf_counter() - t0) * 1e3 / max(iters, 1)


def __getattr__(name):
    if name == "NVSHMEM_SIGNAL_DTYPE":  # torch.int64 (numpy's int64 without torch), looked up lazily
        torch = _torch()
        if torch is not None:
            return torch.int64
        import numpy as np
        return np.int64
    raise AttributeError(f"module 'triton_dist.utils' has no attribute {name!r}")
