"""Launching one Triton kernel again and again without Triton's per-call work (the eager fast path).

``JITFunction.run`` binds the arguments, computes the specialization key, looks the kernel up and
asks the driver for every pointer's device address: about 17 us per launch on the H200 host
(benchmarks/NOTES.md, "Eager all-reduce: where the host time goes"). A ``Launch`` is made for one
kernel, grid, set of constexprs and options, and for one *specialization*: the arguments' dtypes,
the 16-byte alignment of every pointer and the value of every integer that Triton specialises on.
The caller keys its cache of ``Launch`` objects on exactly those (``ops``' plans do). The first
call goes through Triton (it compiles, loads the module, runs the load hooks that patch tdist's
device state in, and checks the arguments); it returns the compiled kernel, whose launcher later
calls use directly with device addresses as integers.

Where the compiled kernel needs nothing but its parameters (no global or profile scratch, one CTA per
cluster, no cooperative or programmatic launch, integer and pointer parameters only), later calls
go through ``tdist._C.CudaLaunch``: the parameters packed once in C++, a call stores the changed
ones and calls ``cuLaunchKernel`` (``tdist_cuda_launch``), with no Python-side argument parsing.
Otherwise, and when the current device is not the one the kernel was loaded on, they call the
compiled kernel's launcher.

With a profiler's hook set (``triton.knobs.runtime.launch_enter_hook`` / ``launch_exit_hook``, empty
chains by default), a call goes through the compiled kernel's own runner, which builds the launch
metadata and calls the hooks, so that profilers still see every launch.
"""
try:
    from triton import knobs
    from triton.knobs import HookChain
    from triton.runtime.driver import driver
except ImportError:  # a Triton without knobs (before 3.4, e.g. triton-ascend 3.2): Triton's own path always
    knobs = HookChain = driver = None


class Launch:
    """``fn[grid](*args, **constexprs, **options)``, cached after the first call.

    ``args`` are the kernel's non-constexpr parameters in order. The first call must pass the
    tensors (Triton reads their dtypes); later calls may pass integers (device addresses) for
    pointer parameters, which the launcher uses as they are."""

    __slots__ = ("fn", "grid", "constexprs", "options", "kernel", "_runtime_pos", "_full", "_g", "_c", "_dev")

    def __init__(self, fn, grid, constexprs, options):
        self.fn = fn
        self.grid = tuple(grid)
        self._g = (self.grid + (1, 1))[:3]
        self.constexprs = dict(constexprs)
        self.options = dict(options)
        self.kernel = None
        self._c = self._dev = None
        params = fn.params
        # Every parameter has a slot in the launcher's argument list, constexprs included (their
        # values are not read there); a constexpr left to its default takes the default.
        self._runtime_pos = [i for i, p in enumerate(params) if not p.is_constexpr]
        self._full = [self.constexprs.get(p.name, p.default) if p.is_constexpr else None for p in params]

    def __call__(self, *args):
        k = self.kernel
        if k is None or knobs is None:
            return self._first(args)
        c = self._c
        if c is not None and not _hooked() and _get_device() == self._dev:
            c(_get_stream(self._dev), *args)
            return k
        full = self._full
        for pos, a in zip(self._runtime_pos, args):
            full[pos] = a
        if _hooked():
            # the compiled kernel's own runner: it builds the launch metadata and calls the hooks
            k[self._g](*full)
            return k
        dev = driver.active.get_current_device()
        k.run(self._g[0], self._g[1], self._g[2], driver.active.get_current_stream(dev), k.function,
              k.packed_metadata, None, None, None, *full)
        return k

    def _first(self, args):
        if len(args) != len(self._runtime_pos):
            raise TypeError(f"{self.fn.__name__}: {len(self._runtime_pos)} runtime arguments expected, got {len(args)}")
        k = self.fn[self.grid](*args, **self.constexprs, **self.options)
        if hasattr(k, "result"):
            k = k.result()
        self.kernel = k
        if knobs is not None:
            self._c, self._dev = _direct(k, self.fn, self._runtime_pos, self._g)
        return k


# the integer parameter types a CudaLaunch stores (Triton's signature spelling)
_INT_TYPES = frozenset(("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64"))
_get_device = _get_stream = None


def _direct(k, fn, runtime_pos, grid):
    """(the ``tdist._C.CudaLaunch`` of compiled kernel ``k``, the device it was loaded on), or (None,
    None) where the launch needs what only Triton's launcher does (see the module docstring)."""
    global _get_device, _get_stream
    try:
        import torch
        from tdist._bindings import _C
    except ImportError:
        return None, None
    md = k.metadata
    if (not getattr(_C, "cuda_launch_available", lambda: False)() or getattr(md, "global_scratch_size", 0)
            or getattr(md, "profile_scratch_size", 0) or getattr(md, "num_ctas", 1) != 1
            or getattr(md, "launch_cooperative_grid", False) or getattr(md, "launch_pdl", False)
            or getattr(k, "function", None) is None):
        return None, None
    sig = list(getattr(getattr(k, "src", None), "signature", {}).values())
    if len(sig) != len(fn.params):
        return None, None
    index = {}  # fn parameter position -> kernel parameter index
    for pos, ty in enumerate(sig):
        if ty == "constexpr":
            continue
        if not isinstance(ty, str) or not (ty.startswith("*") or ty in _INT_TYPES):
            return None, None  # floats, tuples, tensor descriptors: Triton's launcher
        index[pos] = len(index)
    # Triton's kernels end with two more pointers, the global and the profile scratch (NULL: none)
    n_params = len(index) + 2
    _get_device, _get_stream = torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream
    c = _C.CudaLaunch(k.function, grid, 32 * md.num_warps, md.shared, n_params,
                      [index.get(pos, -1) for pos in runtime_pos])
    return c, _get_device()


def _active(hook):
    return hook is not None and (not isinstance(hook, HookChain) or bool(hook.calls))


def _hooked():
    """Whether a launch hook is set (Triton 3.6 keeps an empty ``HookChain`` there by default)."""
    return _active(knobs.runtime.launch_enter_hook) or _active(knobs.runtime.launch_exit_hook)
