"""``import triton_dist.language as dl``: the distributed primitives (seed 000 section 2.2)."""
from .core import (  # noqa: F401
    wait, consume_token, rank, num_ranks, symm_at, notify, extern_call,
    DistributedError, SIGNAL_SLOT_BYTES, DEFAULT_WAIT_TIMEOUT_NS, check_notify_dtype,
)
