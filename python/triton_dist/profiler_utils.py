"""Triton-distributed's ``triton_dist.profiler_utils.perf_func`` (the same as ``triton_dist.utils.perf_func``)."""
from .utils import perf_func  # noqa: F401
