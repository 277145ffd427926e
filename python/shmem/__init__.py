"""``import shmem as ash``: the seed's host package (seed 000 section 5), over tdist.

    ash.set_conf_store_tls(False, "")
    attr = ash.InitAttr(); attr.my_rank = rank; attr.n_ranks = world; attr.local_mem_size = 1 << 30
    attr.ip_port = "tcp://127.0.0.1:8666"; attr.option_attr.data_op_engine_type = ash.OpEngineType.MTE
    ash.aclshmem_init(attr)
    t = ash.aclshmem_create_tensor([1024], dtype=torch.float16, device_id=rank)
    ...
    ash.aclshmem_free_tensor(t); ash.aclshmem_finalize()

Failures raise ``tdist.TdistError`` subclasses (the aclshmem codes are the ``code`` attribute).
On the CUDA backend tensors are torch CUDA tensors on the heap; on CPU ranks they are numpy arrays.
malloc / free / create_tensor / free_tensor are collective: same sizes, same order, every PE.
"""
import enum
import math
import re

import tdist
from tdist import errors

# The status codes under aclshmem's names (SUCCESS, INVALID_PARAM, ..., NOT_SUPPORTED), from the one
# status table (include/tdist/status.def, read by tdist.errors). The two this module uses are also
# bound by name.
globals().update(errors.SHMEM_CODES)
SUCCESS, INVALID_PARAM = errors.SHMEM_CODES["SUCCESS"], errors.SHMEM_CODES["INVALID_PARAM"]


class OpEngineType(enum.IntFlag):
    MTE = 0x01
    SDMA = 0x02
    ROCE = 0x04
    UDMA = 0x08


class OptionAttr:
    """Options beyond the seed's: backend ("auto" / "cpu" / "cuda"), device_id (-1: LOCAL_RANK),
    timeouts (seconds for bootstrap and control plane, milliseconds for device waits; 0 = forever)."""

    def __init__(self):
        d = tdist.init_attr_default()
        self.data_op_engine_type = OpEngineType(d["engine"])
        self.backend = "auto"
        self.device_id = d["device_id"]
        self.shm_init_timeout = d["shm_init_timeout_s"]
        self.control_timeout = d["control_timeout_s"]
        self.wait_timeout_ms = d["wait_timeout_ms"]


class InitAttr:

    def __init__(self):
        d = tdist.init_attr_default()
        self.my_rank = d["rank"]
        self.n_ranks = d["n_ranks"]
        self.local_mem_size = d["local_mem_size"]
        self.ip_port = ""
        self.option_attr = OptionAttr()

    def validate(self):
        def bad(msg):
            raise errors.InvalidParam(f"InitAttr: {msg}", INVALID_PARAM)
        if not isinstance(self.n_ranks, int) or self.n_ranks < 1:
            bad(f"n_ranks={self.n_ranks!r} must be an int >= 1")
        if not isinstance(self.my_rank, int) or not 0 <= self.my_rank < self.n_ranks:
            bad(f"my_rank={self.my_rank!r} must be in [0, n_ranks={self.n_ranks})")
        if not isinstance(self.local_mem_size, int) or self.local_mem_size <= 0:
            bad(f"local_mem_size={self.local_mem_size!r} must be a positive int (bytes)")
        m = re.fullmatch(r"tcp://([^:\[\]]+):(\d+)|tcp6://\[([^\]]+)\]:(\d+)", str(self.ip_port))
        if not m:
            bad(f"ip_port={self.ip_port!r} must be 'tcp://host:port' or 'tcp6://[host]:port'")
        port = int(m.group(2) or m.group(4))
        if not 1024 < port < 65536:
            bad(f"ip_port={self.ip_port!r}: port must be in (1024, 65536)")
        engine = int(self.option_attr.data_op_engine_type)
        if engine == 0 or engine & ~0xF:
            bad(f"option_attr.data_op_engine_type={engine:#x} must combine MTE, SDMA, ROCE, UDMA")
        if self.option_attr.backend not in _BACKENDS:
            bad(f"option_attr.backend={self.option_attr.backend!r} must be one of {sorted(_BACKENDS)}")


_BACKENDS = {"auto": tdist.BACKEND_AUTO, "cpu": tdist.BACKEND_CPU, "cuda": tdist.BACKEND_CUDA}
_tls_configured = False
_live = {}  # heap address -> (nbytes, Team or None) of tensors from aclshmem_create_tensor


def set_conf_store_tls(enable, tls_info=""):
    """The seed's step 1: TLS for the bootstrap store. ``enable=False`` selects plain TCP;
    ``enable=True`` takes ``tls_info`` as ``"ca=...;cert=...;key=..."`` (mutual TLS by default;
    see docs/CONTRACT.md section 5). Must come before ``aclshmem_init``."""
    global _tls_configured
    if not isinstance(tls_info, str):
        raise errors.InvalidParam(f"set_conf_store_tls: tls_info must be a str, got {type(tls_info).__name__}",
                                  INVALID_PARAM)
    tdist.set_conf_store_tls(bool(enable), tls_info)
    _tls_configured = True
    return SUCCESS


def aclshmem_init(attr):
    if not _tls_configured:
        raise errors.InvalidParam("aclshmem_init: the store's TLS is on by default and not configured; "
                                  "call set_conf_store_tls(True, 'ca=...;cert=...;key=...') or "
                                  "set_conf_store_tls(False, '') first", INVALID_PARAM)
    attr.validate()
    o = attr.option_attr
    tdist.init(attr.my_rank, attr.n_ranks, attr.ip_port, local_mem_size=attr.local_mem_size,
               engine=int(o.data_op_engine_type), backend=_BACKENDS[o.backend], device_id=o.device_id,
               shm_init_timeout_s=o.shm_init_timeout, control_timeout_s=o.control_timeout,
               wait_timeout_ms=o.wait_timeout_ms)
    _after_init()
    return SUCCESS


def init_from_env(local_mem_size=None, **options):
    """torchrun / tdist-run style init (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)."""
    tdist.init_from_env(local_mem_size=local_mem_size, **options)
    _after_init()
    return SUCCESS


_torch_group = None  # the torch.distributed group of init_from_torch, None otherwise


def init_from_torch(group=None, local_mem_size=None, **options):
    """Initialise tdist over an existing ``torch.distributed`` process group (default: the world
    group), without a second rendezvous: PE ``i`` is the group's rank ``i``. The group's rank 0 makes
    a unique id (``tdist.get_uniqueid``: a store address on this host and a fresh secret, so only
    holders of the id can join) and broadcasts it over the group; every rank then joins with it
    (``tdist.init_with_uniqueid``). Collective over the group. On CUDA the PE uses the current
    device (``torch.cuda.set_device`` first, as with NCCL) unless ``device_id`` is given. The ops
    of ``tdist_kernels`` accept this group as ``group=``. ``options`` as for ``init_from_env``."""
    import torch
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise errors.InvalidParam("init_from_torch: torch.distributed is not initialised; call "
                                  "torch.distributed.init_process_group first (or use init_from_env)", INVALID_PARAM)
    if tdist.initialized():
        raise errors.InvalidParam("init_from_torch: tdist is already initialised", INVALID_PARAM)
    group = dist.group.WORLD if group is None else group
    if group is dist.GroupMember.NON_GROUP_MEMBER or not isinstance(group, dist.ProcessGroup):
        what = "this rank is not a member of the group" if group is dist.GroupMember.NON_GROUP_MEMBER else \
            f"group must be a torch.distributed ProcessGroup, got {type(group).__name__}"
        raise errors.InvalidParam(f"init_from_torch: {what}", INVALID_PARAM)
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    box = [tdist.get_uniqueid() if rank == 0 else None]
    dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0), group=group)
    if "device_id" not in options and options.get("backend") != tdist.BACKEND_CPU and torch.cuda.is_available():
        options["device_id"] = torch.cuda.current_device()
    tdist.init_with_uniqueid(box[0], rank, size, local_mem_size=local_mem_size, **options)
    _after_init(group)
    return SUCCESS


def torch_group():
    """The ``torch.distributed`` group tdist was initialised over (``init_from_torch``), or None."""
    return _torch_group if tdist.initialized() else None


_world_size = 0  # n_pes of the current job (0 before init and after finalize), read by traced code


def _after_init(group=None):
    global _torch_group, _world_size
    _torch_group = group
    _world_size = tdist.n_pes()
    tdist.on_finalize(_on_finalize)
    if on_cuda():
        from triton_dist import hook
        hook.install()  # importing triton_dist installed it already; this covers a caller that did not


def _on_finalize():
    global _torch_group, _world_size, _world_team
    _torch_group, _world_size, _world_team = None, 0, None
    _group_teams.clear()
    _teams.clear()


def aclshmem_finalize():
    if _live:
        leaked = len(_live)
        _live.clear()
        import sys
        print(f"tdist[pe {tdist.my_pe()}]: aclshmem_finalize: {leaked} tensor(s) from aclshmem_create_tensor were "
              "not freed", file=sys.stderr)
    tdist.finalize()
    return SUCCESS


def on_cuda():
    return tdist.initialized() and tdist.cuda_device() >= 0


aclshmem_my_pe = my_pe = lambda: tdist.my_pe()  # noqa: E731
aclshmem_n_pes = n_pes = lambda: tdist.n_pes()  # noqa: E731


def _refuse(exc, call, *args):
    """This PE's own argument error `exc` in the collective `call`: make the call fail on every PE
    (InvalidParam naming this PE and the message) instead of raising here alone while the other PEs
    wait in it. Raises that error; before init, `exc` itself."""
    if tdist.initialized():
        tdist.collective_reject(str(exc))
        call(*args)  # fails on every PE
    raise exc


def _size(value, what, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise errors.InvalidParam(f"{what}: {name} must be a non-negative int, got {value!r}", INVALID_PARAM)
    return value


def aclshmem_malloc(size):
    try:
        size = _size(size, "aclshmem_malloc", "size")
    except errors.InvalidParam as e:
        _refuse(e, tdist.malloc, 1)
    return tdist.malloc(size)


def aclshmem_calloc(count, size):
    try:
        count, size = _size(count, "aclshmem_calloc", "count"), _size(size, "aclshmem_calloc", "size")
    except errors.InvalidParam as e:
        _refuse(e, tdist.calloc, 1, 1)
    return tdist.calloc(count, size)


def aclshmem_free(ptr):
    tdist.free(ptr)


def aclshmem_ptr(ptr, pe):
    return tdist.ptr(ptr, pe)


def barrier_all():
    """Host barrier over all PEs (orders the host's view: use after a stream synchronize)."""
    tdist.host_barrier_all()


def barrier_all_on_stream(stream=None):
    """Barrier over all PEs enqueued on a CUDA stream (default: torch's current stream)."""
    if stream is None:
        import torch
        stream = torch.cuda.current_stream()
    handle = getattr(stream, "cuda_stream", stream)
    tdist.cuda_barrier_all_on_stream(int(handle))


def _stream_handle(stream):
    if stream is None:
        import torch
        stream = torch.cuda.current_stream()
    return int(getattr(stream, "cuda_stream", stream))


def _addr_bytes(t, what, name):
    """(address, bytes) of a tensor / array, or (address, None) for a raw address."""
    if isinstance(t, int):
        return t, None
    contiguous = t.is_contiguous() if hasattr(t, "is_contiguous") else t.flags["C_CONTIGUOUS"]
    if not contiguous:
        raise errors.InvalidParam(f"{what}: {name} must be contiguous (the copy moves one byte range)", INVALID_PARAM)
    return data_ptr(t), (t.numel() * t.element_size() if hasattr(t, "element_size") else t.nbytes)


def putmem_on_stream(dst, src, pe, stream=None, nbytes=None):
    """SDMA engine: copy ``src`` (any device tensor) into symmetric ``dst`` on PE ``pe`` with the copy
    engine, in order on ``stream`` (default: torch's current stream). ``nbytes`` defaults to the
    size of ``src`` and may not exceed either tensor."""
    d, dn = _addr_bytes(dst, "putmem_on_stream", "dst")
    s, sn = _addr_bytes(src, "putmem_on_stream", "src")
    n = sn if nbytes is None else _size(nbytes, "putmem_on_stream", "nbytes")
    if n is None:
        raise errors.InvalidParam("putmem_on_stream: nbytes is required when src is an address", INVALID_PARAM)
    for name, have in (("dst", dn), ("src", sn)):
        if have is not None and n > have:
            raise errors.InvalidParam(f"putmem_on_stream: {n} bytes do not fit in {name} ({have} bytes)",
                                      INVALID_PARAM)
    tdist.cuda_putmem_on_stream(d, s, n, int(pe), _stream_handle(stream))


def signal_op_on_stream(sig, value, pe, sig_op="set", stream=None):
    """Set the symmetric int64 signal slot ``sig`` (a tensor: its first element, or an address) on PE
    ``pe`` to ``value`` after everything earlier on ``stream``, without an SM (the GPU's stream
    memory operations). Only ``sig_op="set"`` has a stream form."""
    ops = {"set": tdist.SIGNAL_SET, "add": tdist.SIGNAL_ADD}
    if sig_op not in ops:
        raise errors.InvalidParam(f"signal_op_on_stream: sig_op={sig_op!r} is not 'set' or 'add'", INVALID_PARAM)
    addr, _ = _addr_bytes(sig, "signal_op_on_stream", "sig")
    tdist.cuda_signal_on_stream(addr, int(value), ops[sig_op], int(pe), _stream_handle(stream))


def signal_wait_until_on_stream(sig, cmp, value, stream=None):
    """Later work on ``stream`` waits until this PE's signal slot ``sig`` satisfies ``cmp`` (eq, ne, gt,
    ge, lt, le; unsigned) ``value``. Bounded like every device wait: on expiry the stream's kernel
    traps after recording the fault (PE, offset, expected, seen)."""
    cmps = {"eq": tdist.CMP_EQ, "ne": tdist.CMP_NE, "gt": tdist.CMP_GT, "ge": tdist.CMP_GE, "lt": tdist.CMP_LT,
            "le": tdist.CMP_LE}
    if cmp not in cmps:
        raise errors.InvalidParam(f"signal_wait_until_on_stream: cmp={cmp!r} is not one of {sorted(cmps)}",
                                  INVALID_PARAM)
    addr, _ = _addr_bytes(sig, "signal_wait_until_on_stream", "sig")
    tdist.cuda_signal_wait_until_on_stream(addr, cmps[cmp], int(value), _stream_handle(stream))


aclshmem_barrier_all = barrier_all
aclshmemx_barrier_all_on_stream = barrier_all_on_stream
aclshmemx_putmem_on_stream = putmem_on_stream
aclshmemx_signal_op_on_stream = signal_op_on_stream
aclshmemx_signal_wait_until_on_stream = signal_wait_until_on_stream


# ---- tensors on the heap ----

def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _numpy_dtype(dtype):
    import numpy as np
    torch = _torch()
    if torch is not None and isinstance(dtype, torch.dtype):
        try:
            return torch.empty((), dtype=dtype).numpy().dtype
        except TypeError as e:
            raise errors.InvalidParam(f"create_tensor: {dtype} has no numpy equivalent for CPU ranks ({e})",
                                      INVALID_PARAM) from None
    try:
        nd = np.dtype(dtype)
    except TypeError as e:
        raise errors.InvalidParam(f"create_tensor: {dtype!r} is not a dtype ({e})", INVALID_PARAM) from None
    if nd.hasobject or nd.itemsize == 0:
        raise errors.InvalidParam(f"create_tensor: dtype {nd} cannot live in the symmetric heap "
                                  "(object or zero-size elements)", INVALID_PARAM)
    return nd


def _tensor_layout(shape, dtype, device_id):
    """This PE's checks of a create_tensor call, no collective step: (nbytes, view(ptr) -> tensor)."""
    try:
        shape = tuple(int(s) for s in ([shape] if isinstance(shape, int) else shape))
    except (TypeError, ValueError) as e:
        raise errors.InvalidParam(f"create_tensor: shape {shape!r} is not a sequence of ints ({e})",
                                  INVALID_PARAM) from None
    if any(s < 0 for s in shape):
        raise errors.InvalidParam(f"create_tensor: negative dimension in shape {shape}", INVALID_PARAM)
    numel = math.prod(shape)
    if on_cuda():
        torch = _torch()
        dev = tdist.cuda_device()
        if device_id is not None and int(device_id) != dev:
            raise errors.InvalidParam(f"create_tensor: device_id={device_id} but this PE's heap is on cuda:{dev}",
                                      INVALID_PARAM)
        try:
            itemsize = torch.empty((), dtype=dtype).element_size()
        except (TypeError, RuntimeError) as e:
            raise errors.InvalidParam(f"create_tensor: {dtype!r} is not a torch dtype ({e})", INVALID_PARAM) from None
        nbytes = max(numel * itemsize, 1)

        def view(ptr):
            with torch.cuda.device(dev):
                raw = torch.as_tensor(_CudaBytes(ptr, nbytes), device=f"cuda:{dev}")
            return raw[:numel * itemsize].view(dtype).view(shape)
        return nbytes, view
    import numpy as np
    if not tdist.initialized():
        tdist.malloc(1)  # raises NotInitialized with the runtime's message
    nd = _numpy_dtype(dtype)
    nbytes = max(numel * nd.itemsize, 1)

    def view(ptr):
        import ctypes
        try:
            buf = (ctypes.c_uint8 * nbytes).from_address(ptr)
            return np.frombuffer(buf, dtype=np.uint8, count=numel * nd.itemsize).view(nd).reshape(shape)
        except Exception as e:  # every PE fails alike (same shape and dtype): free collectively
            tdist.free(ptr)
            raise errors.InvalidParam(f"create_tensor: cannot view the heap block as {nd}{shape}: {e}",
                                      INVALID_PARAM) from None
    return nbytes, view


class _CudaBytes:
    """Exposes [ptr, ptr + nbytes) of device memory through __cuda_array_interface__ (uint8)."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None, "stream": None}


def aclshmem_create_tensor(shape, dtype, device_id=None, team=None):
    """A tensor of ``shape``/``dtype`` on the symmetric heap (collective; same shape and dtype on every
    PE -- a mismatch fails on every PE with CollectiveMismatch). torch CUDA tensor on the CUDA
    backend (``device_id`` must be this PE's device), numpy array on CPU ranks. Contents undefined.
    A bad shape, dtype or device on one PE fails the call on every PE. ``team`` (a ``Team`` with a
    team heap, ``new_team``): the tensor is made in that team's heap, collective over its members
    only (docs/CONTRACT.md section 8); None or the world team: over every PE."""
    team = _team_arg("aclshmem_create_tensor", team)
    if team is None:
        alloc, args = tdist.malloc, ()
    else:
        alloc, args = tdist.team_malloc, (team.handle,)
    try:
        nbytes, view = _tensor_layout(shape, dtype, device_id)
    except errors.InvalidParam as e:
        _refuse(e, alloc, *args, 1)
    ptr = alloc(*args, nbytes)
    t = view(ptr)
    _live[ptr] = (nbytes, team)
    return t


def _peer_args(what, t, pe=None):
    torch = _torch()
    if not on_cuda() or torch is None or not isinstance(t, torch.Tensor):
        raise errors.InvalidParam(f"{what}: needs a torch CUDA tensor on the CUDA backend", INVALID_PARAM)
    if pe is not None and not 0 <= pe < tdist.n_pes():
        raise errors.InvalidParam(f"{what}: PE {pe} out of range [0, {tdist.n_pes()})", INVALID_PARAM)
    check_symmetric(t)
    span = (sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if n > 0) + 1) * t.element_size() if t.numel() else 0
    return torch, t.data_ptr(), span


def _peer_addr(what, base, pe):
    remote = tdist.ptr(base, pe)
    if not remote:
        raise errors.InvalidParam(f"{what}: PE {pe}'s heap is not mapped into this PE (no load/store path)",
                                  INVALID_PARAM)
    return remote


def _raw_view(torch, addr, nbytes, dtype):
    dev = tdist.cuda_device()
    with torch.cuda.device(dev):
        raw = torch.as_tensor(_CudaBytes(addr, max(nbytes, 1)), device=f"cuda:{dev}")
    return raw.view(dtype)


def peer_tensor(t, pe):
    """A view of symmetric tensor ``t`` as it lies on PE ``pe`` (same shape, dtype and strides), through
    this PE's peer mapping: reads and writes go straight to ``pe``'s memory (loads/stores over
    NVLink, or the same GPU under MPS). Any torch op can write into it, e.g.
    ``torch.matmul(x, w, out=peer_tensor(buf, owner))``. Order such writes before a peer reads them
    with a signal (``signal_op_on_stream`` after the op). CUDA backend only."""
    pe = int(pe)
    torch, base, span = _peer_args("peer_tensor", t, pe)
    raw = _raw_view(torch, _peer_addr("peer_tensor", base, pe), span, t.dtype)
    return torch.as_strided(raw, t.shape, t.stride())  # span is a whole number of elements


def peer_stack(t, team=None):
    """All PEs' copies of symmetric tensor ``t`` as one view of shape ``(n_pes, *t.shape)``: element
    ``[r]`` is ``t`` on PE r, through the peer mappings (no copy). It exists when the PEs' heaps lie
    at one stride in this PE's address space, as the CUDA backend maps them, so a batched op reads
    every PE's data in place, e.g. ``torch.bmm(peer_stack(rows), w.expand(n, -1, -1))``. With
    ``team``: the members' copies, ``[r]`` on the team's PE r. CUDA backend only; raises InvalidParam
    when a PE is not mapped or the layout has no single stride."""
    what = "peer_stack"
    torch, base, span = _peer_args(what, t)
    team = _team_arg(what, team) or team_world()
    n = team.size
    addrs = [_peer_addr(what, base, team.pe(r)) for r in range(n)]
    step = addrs[1] - addrs[0] if n > 1 else 0
    es = t.element_size()
    if any(addrs[r] != addrs[0] + r * step for r in range(n)) or step % es or (n > 1 and step <= 0):
        raise errors.InvalidParam(f"{what}: the PEs' copies of this tensor do not lie at one stride in this PE's "
                                  "address space", INVALID_PARAM)
    raw = _raw_view(torch, addrs[0], (n - 1) * step + span, t.dtype)
    return torch.as_strided(raw, (n, *t.shape), (step // es, *t.stride()))


def data_ptr(t):
    if hasattr(t, "data_ptr"):
        return t.data_ptr()
    return t.__array_interface__["data"][0]


def aclshmem_free_tensor(t):
    """Free a tensor made by aclshmem_create_tensor (collective over the PEs that made it: every PE, or
    the members of its team). Views of it must not be used after."""
    p = data_ptr(t)
    if p not in _live:
        _refuse(errors.InvalidParam(f"free_tensor: address {p:#x} is not the start of a tensor from "
                                    "aclshmem_create_tensor (already freed, or a view)", INVALID_PARAM),
                tdist.free, 0)
    team = _live[p][1]
    if team is None:
        tdist.free(p)
    else:
        tdist.team_free(team.handle, p)
    del _live[p]


def check_symmetric(*tensors):
    """Raise InvalidParam unless every tensor lies entirely in this PE's symmetric heap (call before
    launching a kernel that passes them to dl.symm_at / dl.notify / libshmem_device)."""
    for i, t in enumerate(tensors):
        p = data_ptr(t)
        n = t.numel() * t.element_size() if hasattr(t, "element_size") else t.nbytes
        if not tdist.in_heap(p, max(n, 1)):
            raise errors.InvalidParam(f"check_symmetric: argument {i} ({p:#x}, {n} bytes) is not on the symmetric "
                                      f"heap [{tdist.heap_base():#x}, +{tdist.heap_size()}); allocate it with "
                                      "aclshmem_create_tensor", INVALID_PARAM)


# Pythonic aliases
init = aclshmem_init
finalize = aclshmem_finalize
malloc = aclshmem_malloc
free = aclshmem_free
ptr = aclshmem_ptr
create_tensor = aclshmem_create_tensor
free_tensor = aclshmem_free_tensor


# ---------------------------------------------------------------------------------------------
# Teams (docs/CONTRACT.md section 8): what group= on the tdist_kernels ops runs over.

TEAM_HEAP_BYTES = 64 << 20  # default team heap of new_team / new_group / new_subgroups


class Team:
    """A tdist team: the world PEs ``start``, ``start + stride``, ... (``size`` of them), this PE
    being member ``rank``. ``handle`` is the runtime's team (``tdist.team_*``); ``heap_bytes`` the
    size of its team heap, where ``aclshmem_create_tensor(..., team=)`` allocates (collective over the
    members only). The world team has handle ``tdist.TEAM_WORLD`` and allocates from the world heap."""

    __slots__ = ("handle", "start", "stride", "size", "rank", "heap_bytes")

    def __init__(self, handle, start, stride, size, rank, heap_bytes):
        self.handle, self.start, self.stride, self.size = handle, start, stride, size
        self.rank, self.heap_bytes = rank, heap_bytes

    def pe(self, r):
        """The world PE of member ``r``."""
        return self.start + r * self.stride

    def pes(self):
        return [self.pe(r) for r in range(self.size)]

    @property
    def is_world(self):
        return self.handle == tdist.TEAM_WORLD

    def __repr__(self):
        return (f"Team(handle={self.handle}, pes={self.pes()}, rank={self.rank}, "
                f"heap_bytes={self.heap_bytes})")


_world_team = None
_group_teams = {}  # id(torch group) -> (group, Team): the groups of new_group / new_subgroups
_teams = {}  # runtime handle -> Team, every team this PE is a member of (new_team, new_subteams)


def team_world():
    """The world team (every PE)."""
    global _world_team
    if not tdist.initialized():
        raise errors.InvalidParam("team_world: tdist is not initialised", INVALID_PARAM)
    if _world_team is None:
        _world_team = Team(tdist.TEAM_WORLD, 0, 1, tdist.n_pes(), tdist.my_pe(), 0)
    return _world_team


def _team_arg(what, team):
    """``team`` checked: None or the world team -> None (the world heap); a member's ``Team`` itself."""
    if team is None:
        return None
    if not isinstance(team, Team):
        raise errors.InvalidParam(f"{what}: team must be a shmem.Team (new_team, team_of), got "
                                  f"{type(team).__name__}", INVALID_PARAM)
    if team.is_world:
        return None
    return team


def _heap_bytes(what, heap_bytes):
    if heap_bytes is None:
        return TEAM_HEAP_BYTES
    return _size(heap_bytes, what, "heap_bytes")


def _progression(what, ranks):
    """(start, stride, size) of ``ranks``, which must be distinct world PEs in arithmetic progression."""
    ranks = [int(r) for r in ranks]
    n = tdist.n_pes()
    if not ranks or any(not 0 <= r < n for r in ranks) or len(set(ranks)) != len(ranks):
        raise errors.InvalidParam(f"{what}: ranks {ranks} must be distinct PEs in [0, {n})", INVALID_PARAM)
    stride = ranks[1] - ranks[0] if len(ranks) > 1 else 1
    if stride <= 0 or any(ranks[i] != ranks[0] + i * stride for i in range(len(ranks))):
        raise errors.InvalidParam(f"{what}: ranks {ranks} are not an increasing arithmetic progression; tdist teams "
                                  "are strided sets of PEs (start, start + stride, ...)", INVALID_PARAM)
    return ranks[0], stride, len(ranks)


def _make_team(handle, heap_bytes):
    if handle == tdist.TEAM_INVALID:
        return None
    start, stride, size = tdist.team_world_pes(handle)
    team = Team(handle, start, stride, size, tdist.team_my_pe(handle), heap_bytes)
    _teams[handle] = team
    return team


def new_team(ranks, heap_bytes=None):
    """A team of the world PEs ``ranks`` (an increasing arithmetic progression) with a team heap of
    ``heap_bytes`` (default ``TEAM_HEAP_BYTES``). Collective over every PE, with the same arguments
    (like torch's ``new_group``); returns the ``Team`` on its members and None elsewhere."""
    what = "new_team"
    heap = _heap_bytes(what, heap_bytes)
    try:
        start, stride, size = _progression(what, ranks)
    except errors.InvalidParam as e:
        _refuse(e, tdist.team_split_strided, tdist.TEAM_WORLD, 0, 1, 1, heap)
    return _make_team(tdist.team_split_strided(tdist.TEAM_WORLD, start, stride, size, heap), heap)


def new_subteams(group_size, heap_bytes=None):
    """The world split into consecutive teams of ``group_size`` PEs (``tdist.team_split_2d``'s x-teams),
    all of them in one team-heap block of ``heap_bytes``. Collective over every PE; returns this PE's
    team."""
    what = "new_subteams"
    heap = _heap_bytes(what, heap_bytes)
    g = _size(group_size, what, "group_size")
    if g == 0 or tdist.n_pes() % g:
        _refuse(errors.InvalidParam(f"{what}: group_size {g} does not divide the {tdist.n_pes()} PEs",
                                    INVALID_PARAM), tdist.team_split_2d, tdist.TEAM_WORLD, 1, heap, 0)
    xteam, yteam = tdist.team_split_2d(tdist.TEAM_WORLD, g, heap, 0)
    if yteam != tdist.TEAM_INVALID:
        tdist.team_destroy(yteam)  # the y-teams have no heap and are not used here
    return _make_team(xteam, heap)


def _torch_dist(what):
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise errors.InvalidParam(f"{what}: torch.distributed is not initialised", INVALID_PARAM)
    base = torch_group()
    if base is not None and dist.get_process_group_ranks(base) != list(range(dist.get_world_size())):
        raise errors.InvalidParam(f"{what}: tdist runs over a subgroup of torch's world; make groups over "
                                  "tdist's world with new_team instead", INVALID_PARAM)
    if dist.get_world_size() != tdist.n_pes():
        raise errors.InvalidParam(f"{what}: torch's world has {dist.get_world_size()} ranks, tdist's "
                                  f"{tdist.n_pes()} PEs: torch rank i must be PE i", INVALID_PARAM)
    return dist


def new_group(ranks, heap_bytes=None, **torch_options):
    """``torch.distributed.new_group(ranks)`` together with the tdist team of the same ranks, so that
    the group can be given to the tdist_kernels ops as ``group=``. Collective over every rank with the
    same arguments, as torch's own call is; torch rank i must be PE i. ``ranks``: an increasing
    arithmetic progression (tdist teams are strided); ``torch_options`` go to ``new_group``. Returns
    the torch group (``GroupMember.NON_GROUP_MEMBER`` on the other ranks)."""
    dist = _torch_dist("new_group")
    team = new_team(ranks, heap_bytes)
    group = dist.new_group(ranks=list(ranks), **torch_options)
    if team is not None:
        _group_teams[id(group)] = (group, team)
    return group


def new_subgroups(group_size, heap_bytes=None, **torch_options):
    """``torch.distributed.new_subgroups(group_size)`` together with their tdist teams (one team heap for
    all of them): returns ``(this rank's group, every group)``, the groups usable as ``group=``.
    Collective over every rank."""
    dist = _torch_dist("new_subgroups")
    team = new_subteams(group_size, heap_bytes)
    mine, groups = dist.new_subgroups(group_size=group_size, **torch_options)
    _group_teams[id(mine)] = (mine, team)
    return mine, groups


def team_of(group):
    """The ``Team`` of ``group``: a torch group from ``new_group`` / ``new_subgroups`` (on a member),
    tdist's world group (``init_from_torch``'s, or torch's world when it is tdist's), or a ``Team``
    itself. Anything else raises InvalidParam naming what to do."""
    if isinstance(group, Team):
        if group.rank < 0:
            raise errors.InvalidParam("team_of: this PE is not a member of the team", INVALID_PARAM)
        return group
    got = _group_teams.get(id(group))
    if got is not None and got[0] is group:
        return got[1]
    import torch.distributed as dist
    if group is dist.GroupMember.NON_GROUP_MEMBER:
        raise errors.InvalidParam("team_of: this rank is not a member of the group (torch.distributed gave it "
                                  "GroupMember.NON_GROUP_MEMBER)", INVALID_PARAM)
    if not isinstance(group, dist.ProcessGroup):
        raise errors.InvalidParam(f"team_of: group must be a torch.distributed ProcessGroup or a shmem.Team, got "
                                  f"{type(group).__name__}", INVALID_PARAM)
    base = torch_group()
    want = dist.get_process_group_ranks(base) if base is not None else list(range(tdist.n_pes()))
    if group is base or dist.get_process_group_ranks(group) == want:
        return team_world()
    raise errors.InvalidParam(f"team_of: group with ranks {dist.get_process_group_ranks(group)} has no tdist team: "
                              "make it with shmem.new_group(ranks) or shmem.new_subgroups(size) (collective, "
                              "like torch's new_group) instead of torch.distributed.new_group", INVALID_PARAM)


def team_barrier(team):
    """Host barrier over ``team``'s members (the world team: every PE)."""
    t = _team_arg("team_barrier", team)
    if t is None:
        tdist.host_barrier_all()
    else:
        tdist.team_barrier(t.handle)


def team_barrier_on_stream(team, stream=None):
    """Barrier over ``team``'s members enqueued on a CUDA stream (default: torch's current stream)."""
    t = _team_arg("team_barrier_on_stream", team)
    if t is None:
        barrier_all_on_stream(stream)
        return
    if stream is None:
        import torch
        stream = torch.cuda.current_stream()
    tdist.cuda_team_barrier_on_stream(t.handle, int(getattr(stream, "cuda_stream", stream)))


def team_allgather(team, data):
    """``data`` (bytes, the same length on every member) of every member, in member order (a list)."""
    t = _team_arg("team_allgather", team)
    data = bytes(data)
    got = bytes(tdist.ctrl_allgather(data) if t is None else tdist.team_ctrl_allgather(t.handle, data))
    n = len(data)
    return [got[i * n:(i + 1) * n] for i in range((len(got) // n) if n else (team or team_world()).size)]
