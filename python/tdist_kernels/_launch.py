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

    __slots__ = ("fn", "grid", "constexprs", "options", "kernel", "_runtime_pos", "_full", "_g")

    def __init__(self, fn, grid, constexprs, options):
        self.fn = fn
        self.grid = tuple(grid)
        self._g = (self.grid + (1, 1))[:3]
        self.constexprs = dict(constexprs)
        self.options = dict(options)
        self.kernel = None
        params = fn.params
        # Every parameter has a slot in the launcher's argument list, constexprs included (their
        # values are not read there); a constexpr left to its default takes the default.
        self._runtime_pos = [i for i, p in enumerate(params) if not p.is_constexpr]
        self._full = [self.constexprs.get(p.name, p.default) if p.is_constexpr else None for p in params]

    def __call__(self, *args):
        k = self.kernel
        if k is None or knobs is None:
            return self._first(args)
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
        return k


def _active(hook):
    return hook is not None and (not isinstance(hook, HookChain) or bool(hook.calls))


def _hooked():
    """Whether a launch hook is set (Triton 3.6 keeps an empty ``HookChain`` there by default)."""
    return _active(knobs.runtime.launch_enter_hook) or _active(knobs.runtime.launch_exit_hook)
