"""The bindings of ``tdist`` (re-exported by the package, see its docstring), over ``tdist._C``.

Imported by ``tdist/__init__.py`` only once the extension has loaded.
"""
from . import errors
from .errors import InvalidParam
from ._load import load as _load

_C = _load()
_C._set_error_factory(errors.from_status)

ENGINE_MTE, ENGINE_SDMA, ENGINE_ROCE, ENGINE_UDMA = 0x1, 0x2, 0x4, 0x8
BACKEND_AUTO, BACKEND_CPU, BACKEND_CUDA = 0, 1, 2
TEAM_WORLD = _C.TEAM_WORLD
TEAM_INVALID = _C.TEAM_INVALID

init_attr_default = _C.init_attr_default
_finalize_hooks = []


def on_finalize(fn):
    """Call ``fn()`` at the start of every later ``finalize``, while the heap is still mapped: layers
    that cache heap addresses (``tdist_kernels``' buffers and launch plans) drop them there, so
    nothing made before a finalize is used after a new init. Registering ``fn`` twice keeps one."""
    if fn not in _finalize_hooks:
        _finalize_hooks.append(fn)


def finalize():
    """``tdist_finalize`` (collective), after the ``on_finalize`` hooks."""
    for fn in list(_finalize_hooks):
        fn()
    _C.finalize()


initialized = _C.initialized
malloc = _C.malloc
calloc = _C.calloc
align = _C.align
free = _C.free
heap_offset = _C.heap_offset
heap_free_bytes = _C.heap_free_bytes
my_pe = _C.my_pe
n_pes = _C.n_pes
heap_base = _C.heap_base
heap_size = _C.heap_size
p2p_heap_bases = _C.p2p_heap_bases
host_barrier_all = _C.host_barrier_all
barrier_all = _C.host_barrier_all
ctrl_barrier = _C.ctrl_barrier
ctrl_allgather = _C.ctrl_allgather
ctrl_broadcast = _C.ctrl_broadcast
team_my_pe = _C.team_my_pe
team_n_pes = _C.team_n_pes
team_translate_pe = _C.team_translate_pe
team_split_strided = _C.team_split_strided
team_split_2d = _C.team_split_2d
team_destroy = _C.team_destroy
team_world_pes = _C.team_world_pes
team_malloc = _C.team_malloc
team_align = _C.team_align
team_free = _C.team_free
team_heap_free_bytes = _C.team_heap_free_bytes
team_barrier = _C.team_barrier
team_ctrl_allgather = _C.team_ctrl_allgather
get_uniqueid = _C.get_uniqueid
status_name = _C.status_name
set_conf_store_tls = _C.set_conf_store_tls
# For layers above the bindings (shmem): this PE's next collective call fails on every PE naming
# `why` (a local argument error raised alone would leave the other PEs waiting in the collective).
collective_reject = _C.collective_reject


def _attr(**kw):
    a = _C.init_attr_default()
    unknown = set(kw) - set(a)
    if unknown:
        raise InvalidParam(f"unknown init attribute(s) {sorted(unknown)}; legal: {sorted(a)}", -1)
    a.update({k: v for k, v in kw.items() if v is not None})
    return a


def init(rank, n_ranks, ip_port, local_mem_size=None, **options):
    """Collective init (rank 0 serves the store on ``ip_port``, e.g. ``tcp://127.0.0.1:8666``)."""
    _C.init(**_attr(rank=rank, n_ranks=n_ranks, ip_port=ip_port, local_mem_size=local_mem_size, **options))


def init_from_env(local_mem_size=None, **options):
    """Init from RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (torchrun, tools/tdist-run)."""
    _C.init_from_env(**_attr(local_mem_size=local_mem_size, **options))


def init_with_uniqueid(uid, rank, n_ranks, local_mem_size=None, **options):
    a = _attr(local_mem_size=local_mem_size, **options)
    a.pop("rank"), a.pop("n_ranks"), a.pop("ip_port")
    _C.init_with_uniqueid(uid, rank, n_ranks, **a)


def ptr(addr, pe):
    """Host-side ``tdist_ptr``: the address of symmetric ``addr`` in PE ``pe``'s heap as mapped here
    (0 if ``pe``'s heap is not load/store reachable). The runtime translates (one host-side
    translation for every backend); a PE out of range or an address outside the heap raises
    ``InvalidParam``."""
    return _C.ptr(int(addr), int(pe))


def in_heap(addr, nbytes=1):
    """True when [addr, addr + nbytes) lies in this PE's symmetric heap."""
    base, size = _C.heap_base(), _C.heap_size()
    return base <= addr and addr + nbytes <= base + size


cuda_available = _C.cuda_available
cuda_device = _C.cuda_device
cuda_register_module = _C.cuda_register_module
cuda_unregister_module = _C.cuda_unregister_module
cuda_check_fault = _C.cuda_check_fault
cuda_barrier_all_on_stream = _C.cuda_barrier_all_on_stream
cuda_team_barrier_on_stream = _C.cuda_team_barrier_on_stream
cuda_putmem_on_stream = _C.cuda_putmem_on_stream
cuda_getmem_on_stream = _C.cuda_getmem_on_stream
cuda_signal_on_stream = _C.cuda_signal_on_stream
cuda_signal_wait_until_on_stream = _C.cuda_signal_wait_until_on_stream

# signal operations and comparisons of the device ABI (include/tdist/abi.h)
SIGNAL_SET, SIGNAL_ADD = 1, 2
CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE = range(6)
