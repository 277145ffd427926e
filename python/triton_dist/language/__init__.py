"""``import triton_dist.language as dl``: the distributed primitives (seed 000 section 2.2)."""
from .core import (  # noqa: F401
    wait, consume_token, rank, num_ranks, symm_at, notify, extern_call,
    DistributedError, SIGNAL_SLOT_BYTES, DEFAULT_WAIT_TIMEOUT_NS, check_notify_dtype, SlotStrideWarning,
)

# Names of Triton-distributed's ``triton_dist.language`` that tdist does not provide (docs/PORTING.md):
# its SIMT regions and vector type, shared-memory descriptors and TMA pipeline.
NOT_PROVIDED = {
    "simt_exec_region": "SIMT regions", "extract": "SIMT vectors", "insert": "SIMT vectors",
    "vector": "SIMT vectors (language_extra.pack / unpack take and return tuples)",
    "make_vector": "SIMT vectors (language_extra.pack / unpack take and return tuples)",
    "zeros_vector": "SIMT vectors", "ld_vector": "SIMT vectors", "st_vector": "SIMT vectors",
    "SMEM_GENERIC_POINTER_ADDR_SPACE": "shared-memory descriptors", "SharedMemoryDesc": "shared-memory descriptors",
    "allocate_smem": "shared-memory descriptors", "smem_index": "shared-memory descriptors",
    "smem_load": "shared-memory descriptors", "smem_store": "shared-memory descriptors",
    "smem_get_ptr": "shared-memory descriptors", "get_smem_shared_address_u32": "shared-memory descriptors",
    "smem_dealloc": "shared-memory descriptors", "tma": "the TMA pipeline (use Triton's tl.make_tensor_descriptor)",
}


def __getattr__(name):
    if name in NOT_PROVIDED:
        raise AttributeError(f"triton_dist.language.{name}: Triton-distributed's {NOT_PROVIDED[name]} are not "
                             "provided by tdist (docs/PORTING.md lists what is)")
    raise AttributeError(f"module 'triton_dist.language' has no attribute {name!r}")
