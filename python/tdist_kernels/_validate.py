"""Argument checks for the torch-facing layers, on plain shapes and dtype names (no torch needed, so
the CPU test suite covers every message). Each raises KernelArgError naming the argument, what it
got and what is legal."""
from ._common import DTYPES, KernelArgError


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def check_dtype(what, argname, dtype):
    name = dtype_name(dtype)
    if name not in DTYPES:
        raise KernelArgError(f"{what}: {argname} has dtype {name}; supported: {', '.join(DTYPES)}")
    return name


def check_tensor(what, argname, shape, dtype, is_cuda, ndim):
    if not is_cuda:
        raise KernelArgError(f"{what}: {argname} must be a CUDA tensor on this rank's device")
    if len(shape) != ndim:
        raise KernelArgError(f"{what}: {argname} must have {ndim} dimensions, got shape {tuple(shape)}")
    if any(s <= 0 for s in shape):
        raise KernelArgError(f"{what}: {argname} has an empty dimension, shape {tuple(shape)}")
    return check_dtype(what, argname, dtype)


def check_reverse_a2a(shape, world):
    """A: (S * W, H, D) -> (S, H, D) per-rank sizes."""
    s_total, h, d = shape
    if s_total % world:
        raise KernelArgError(f"reverse_all_to_all: input dim 0 ({s_total}) must be S * world_size; it is not a "
                             f"multiple of world_size={world}")
    return s_total // world, h, d


def check_dispatch_a2a(shape, world):
    """x: (S, H * W, D) -> (S, H, D)."""
    s, hw, d = shape
    if hw % world:
        raise KernelArgError(f"dispatch_all_to_all: input dim 1 ({hw}) must be H * world_size; it is not a "
                             f"multiple of world_size={world}")
    return s, hw // world, d


def check_variant(what, variant, legal, argname="variant"):
    if variant not in legal:
        raise KernelArgError(f"{what}: {argname}={variant!r} is not one of {', '.join(map(repr, legal))}")


def check_matmul(what, a_shape, b_shape):
    if a_shape[1] != b_shape[0]:
        raise KernelArgError(f"{what}: a is {tuple(a_shape)} and b is {tuple(b_shape)}: a.shape[1] ({a_shape[1]}) "
                             f"must equal b.shape[0] ({b_shape[0]})")


def check_gemm_rs(a_shape, world):
    if a_shape[0] % world:
        raise KernelArgError(f"gemm_rs: a.shape[0]={a_shape[0]} (M) must be a multiple of world_size={world} "
                             "(each rank receives M / world_size rows)")


def check_same_dtype(what, **dtypes):
    names = {k: dtype_name(v) for k, v in dtypes.items()}
    if len(set(names.values())) != 1:
        raise KernelArgError(f"{what}: dtypes differ: " + ", ".join(f"{k}={v}" for k, v in names.items()))


def check_buffer_num(buffer_num):
    if not isinstance(buffer_num, int) or buffer_num < 1:
        raise KernelArgError(f"reverse_all_to_all: buffer_num={buffer_num!r} must be an int >= 1 (2 = double "
                             "buffering)")
