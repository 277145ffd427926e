"""Run a dl.* Triton kernel on CPU ranks: the Ascend lowering, compiled for this CPU (docs/COMPILE.md 4).

    import triton_dist.cpu as dcpu
    dcpu.launch(ring_kernel, (n_programs,), src, dst, sig, n, BLOCK=128)

The kernel source is the one compiled for CUDA and for Ascend. ``launch`` compiles it (once per
signature and constants) with triton-ascend, tdist inserted at the ttadapter stage, then lowers the
ttadapter (Linalg) file with MLIR 22 (``tdist-opt --tdist-pipeline=ascend-cpu``,
``mlir-translate-22``, ``llc-22``) and ``clang-19`` into a shared object whose aclshmem calls resolve to tdist's
CPU template library (``device/CPU/aclshmem.cpp``). Every program of the grid runs on its own
thread of the CPU backend's program pool, so producer/consumer kernels make progress. Every call is
a local launch: the PE's programs only; the caller runs it on every rank, as on a GPU.

Arguments: symmetric numpy arrays (``shmem.aclshmem_create_tensor``) or any numpy array for
pointer parameters, Python ints / floats or numpy scalars for scalars, constexprs by keyword.
"""
from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from . import ascend

_DTYPES = {  # numpy dtype name -> Triton signature type
    "float16": "fp16", "float32": "fp32", "float64": "fp64", "int8": "i8", "int16": "i16", "int32": "i32",
    "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
}
_SCALAR_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
                  "fp32": ctypes.c_float, "fp64": ctypes.c_double, "i1": ctypes.c_int32}
_C_SCALAR = {"i32": "int32_t", "i64": "int64_t", "u32": "uint32_t", "u64": "uint64_t", "fp32": "float",
             "fp64": "double", "i1": "int32_t"}


class MemRef1D(ctypes.Structure):
    """MLIR's descriptor of a rank-1 memref (the C interface of the ttadapter kernel's arguments)."""
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
                ("size", ctypes.c_int64), ("stride", ctypes.c_int64)]


def _cache_dir():
    d = Path(os.environ.get("TDIST_CACHE_DIR") or Path.home() / ".cache" / "tdist" / "cpu")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _tool(name):
    found = shutil.which(f"/usr/lib/llvm-22/bin/{name}") or shutil.which(f"{name}-22")
    if not found:
        raise ascend.ToolNotFound(f"{name} (LLVM 22) not found: install mlir-22-tools / llvm-22 "
                                  "(scripts/install-deps.sh)")
    return found


def _run(cmd, what):
    return ascend.run_tool(cmd, None, what)


def _entry_source(name, sig_types):
    """C entry of the shared object: unpack ``args`` and call the kernel's C interface once for
    this program, with the grid coordinates the ttadapter form takes as trailing arguments."""
    params = ["tdist_memref1d *", "tdist_memref1d *"]
    call = ["&lock", "&workspace"]
    for i, ty in enumerate(sig_types):
        if ty.startswith("*"):
            params.append("tdist_memref1d *")
            call.append(f"(tdist_memref1d *)pack->args[{i}]")
        else:
            params.append(_C_SCALAR[ty])
            call.append(f"*({_C_SCALAR[ty]} *)pack->args[{i}]")
    params += ["int32_t"] * 6
    call += ["gx", "gy", "gz", "pid % gx", "(pid / gx) % gy", "pid / (gx * gy)"]
    return f"""#include <stdint.h>
typedef struct {{ void *allocated, *aligned; int64_t offset, size, stride; }} tdist_memref1d;
typedef struct {{ void **args; int32_t grid[3]; }} tdist_kernel_pack_t;
int32_t tdistx_program_id(int32_t axis);
void _mlir_ciface_{name}({", ".join(params)});
void tdist_kernel_entry(void *p) {{
  tdist_kernel_pack_t *pack = (tdist_kernel_pack_t *)p;
  int32_t gx = pack->grid[0], gy = pack->grid[1], gz = pack->grid[2], pid = tdistx_program_id(0);
  (void)gz;
  /* The sync-block lock and workspace of the ttadapter form: unused on CPU ranks (block events
     live in the launch, device/CPU/aclshmem.cpp). */
  tdist_memref1d lock = {{0, 0, 0, 0, 1}}, workspace = {{0, 0, 0, 0, 1}};
  _mlir_ciface_{name}({", ".join(call)});
}}
"""


# tdist-opt's pipeline for the generic ttadapter text (compiler/lib/Conversion/Pipelines.cpp).
_CPU_PASSES = ("--tdist-pipeline=ascend-cpu",)

# Ops triton-ascend's MLIR spells differently from MLIR 22 (same operands, attributes and meaning).
_RENAMED_OPS = {'"bufferization.to_memref"': '"bufferization.to_buffer"'}


def _to_mlir22(generic: str) -> str:
    for old, new in _RENAMED_OPS.items():
        generic = generic.replace(old, new)
    return generic


class CompiledCPU:
    """A loaded kernel library; ``entry`` is its ``tdist_kernel_entry``."""

    def __init__(self, path):
        _runtime()  # the aclshmem symbols must be global before the kernel library is loaded
        self.lib = ctypes.CDLL(str(path))
        self.entry = self.lib.tdist_kernel_entry


_compiled = {}


def compile_cpu(fn, signature, constants) -> CompiledCPU:
    """Compile ``fn`` for CPU ranks (cached on disk by the ttadapter text and the tools)."""
    key = (fn, tuple(signature.items()), tuple(sorted(constants.items())))
    if key in _compiled:
        return _compiled[key]
    compiled = ascend.compile_to_ttadapter(fn, signature, constants, with_dist=False)
    name = fn.__name__
    entry = _entry_source(name, list(signature.values()))
    opt = ascend.find_tool("tdist-opt", "TDIST_OPT")
    st = os.stat(opt)  # a rebuilt compiler lowers anew
    digest = hashlib.sha256(f"{compiled.ttadapter}{entry}{opt}:{st.st_size}:{st.st_mtime_ns}:{_CPU_PASSES}".encode()
                            ).hexdigest()[:24]
    so = _cache_dir() / f"{name}-{digest}.so"
    with open(so.with_suffix(".lock"), "w") as lock:
        # The ranks of a job compile the same kernels at once: one compiles, the others wait for it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not so.is_file():
            _build_so(so, compiled, entry, opt)
    out = _compiled[key] = CompiledCPU(so)
    return out


def _build_so(so, compiled, entry, opt):
    """ttadapter text -> kernel shared object at ``so`` (written atomically)."""
    with tempfile.TemporaryDirectory(prefix="tdist-cpu-") as tmp:
        t = Path(tmp)
        (t / "k.ttadapter").write_text(compiled.ttadapter)
        from triton.backends.ascend.compiler import _get_triton_adapter_opt_path
        _run([_get_triton_adapter_opt_path(), str(t / "k.ttadapter"), "--mlir-print-op-generic", "-o",
              str(t / "k.gen.mlir")], "triton-adapter-opt (ttadapter to generic form)")
        (t / "k.gen.mlir").write_text(_to_mlir22((t / "k.gen.mlir").read_text()))
        _run([opt, str(t / "k.gen.mlir"), "--allow-unregistered-dialect", *_CPU_PASSES, "-o",
              str(t / "k.llvm.mlir")], "tdist-opt " + " ".join(_CPU_PASSES))
        _run([_tool("mlir-translate"), str(t / "k.llvm.mlir"), "--mlir-to-llvmir", "-o", str(t / "k.ll")],
             "mlir-translate-22")
        # LLVM 22's IR is compiled by LLVM 22 (llc); clang-19 compiles the entry and links.
        _run([_tool("llc"), "-O2", "-filetype=obj", "-relocation-model=pic", str(t / "k.ll"), "-o",
              str(t / "k.o")], "llc-22 (kernel object)")
        (t / "entry.c").write_text(entry)
        tmp_so = t / "k.so"
        _run(["clang-19", "-O2", "-shared", "-fPIC", str(t / "k.o"), str(t / "entry.c"), "-o", str(tmp_so)],
             "clang-19 (kernel shared object)")
        os.replace(tmp_so, so)


_rt = None


def _runtime():
    """The loaded tdist runtime, its symbols made global (the kernel library resolves
    ``_mlir_ciface_aclshmem_*`` and ``tdistx_program_id`` against it)."""
    global _rt
    if _rt is None:
        import tdist  # loads tdist._C, which loads libtdist.so (the runtime)
        # dlopen of a loaded library by its soname returns it; RTLD_GLOBAL makes its symbols visible to
        # the kernel libraries loaded after it.
        _rt = ctypes.CDLL("libtdist.so", mode=ctypes.RTLD_GLOBAL)
        if not tdist.initialized():
            raise tdist.NotInitialized("triton_dist.cpu.launch: call shmem.aclshmem_init (or init_from_env) first")
        _rt.tdist_cpu_launch_grid.restype = ctypes.c_int
        _rt.tdist_cpu_launch_grid.argtypes = [ctypes.POINTER(ctypes.c_int32), ctypes.c_void_p,
                                              ctypes.POINTER(ctypes.c_void_p)]
        _rt.tdist_last_error_message.restype = ctypes.c_char_p
    return _rt


def _signature_of(fn, args, constexprs):
    import numpy as np
    names = [p.name for p in fn.params if not p.is_constexpr]
    const_names = [p.name for p in fn.params if p.is_constexpr]
    if len(args) != len(names):
        raise TypeError(f"{fn.__name__}: expected {len(names)} positional arguments ({', '.join(names)}), "
                        f"got {len(args)}")
    missing = [n for n in const_names if n not in constexprs]
    extra = [n for n in constexprs if n not in const_names]
    if missing or extra:
        raise TypeError(f"{fn.__name__}: constexpr arguments {const_names}; missing {missing}, unknown {extra}")
    sig = {}
    for n, a in zip(names, args):
        if isinstance(a, np.ndarray):
            if a.dtype.name not in _DTYPES:
                raise TypeError(f"{fn.__name__}: argument {n} has dtype {a.dtype}, which Triton kernels do not take")
            sig[n] = "*" + _DTYPES[a.dtype.name]
        elif isinstance(a, (bool, np.bool_)):
            sig[n] = "i1"
        elif isinstance(a, (int, np.integer)):
            sig[n] = "i32" if -2**31 <= int(a) < 2**31 else "i64"
        elif isinstance(a, (float, np.floating)):
            sig[n] = "fp32"
        else:
            raise TypeError(f"{fn.__name__}: argument {n} of type {type(a).__name__} is not a numpy array or a scalar")
    return sig


def launch(fn, grid, *args, **constexprs):
    """Run ``fn[grid](*args, **constexprs)`` on this PE's programs; raises ``tdist.TdistError`` with
    the launch's device fault (e.g. a wait that timed out, naming the slot)."""
    import numpy as np
    grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
    if not 1 <= len(grid) <= 3:
        raise ValueError(f"{fn.__name__}: grid must have 1 to 3 dimensions, got {grid}")
    grid = grid + (1,) * (3 - len(grid))
    sig = _signature_of(fn, args, constexprs)
    kernel = compile_cpu(fn, sig, constexprs)
    keep, argv = [], (ctypes.c_void_p * max(1, len(args)))()
    for i, (a, ty) in enumerate(zip(args, sig.values())):
        if ty.startswith("*"):
            if not a.flags.c_contiguous:
                raise ValueError(f"{fn.__name__}: argument {i} is a non-contiguous numpy view (strides {a.strides}); "
                                 "a pointer argument addresses contiguous memory: pass np.ascontiguousarray(x)")
            base = a.__array_interface__["data"][0]
            d = MemRef1D(base, base, 0, int(np.prod(a.shape)) if a.ndim else 1, 1)
        else:
            d = _SCALAR_CTYPES[ty](a)
        keep.append(d)
        argv[i] = ctypes.cast(ctypes.pointer(d), ctypes.c_void_p)
    rt = _runtime()
    g = (ctypes.c_int32 * 3)(*grid)
    rc = rt.tdist_cpu_launch_grid(g, ctypes.cast(kernel.entry, ctypes.c_void_p), argv)
    if rc != 0:
        from tdist import errors
        msg = rt.tdist_last_error_message().decode(errors="replace")
        raise errors.from_status(rc, f"{fn.__name__}[{grid}] on CPU ranks: {msg}")
    return None
