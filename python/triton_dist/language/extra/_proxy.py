"""The seed's only dispatch primitive (seed 000 section 7.2).

``ModuleProxy([(predicate, module), ...])`` evaluates every predicate once, at construction, and
requires exactly one to hold; attribute access is forwarded to that module. ``dispatch`` makes a
stub a Triton builtin that, each time a kernel calling it is compiled, looks up the function of the
same ``__name__`` in the proxy's active module and calls it: a ``@triton.jit`` function is inlined
as a Triton call, a builtin is called with the compiler's ``_semantic``.
"""
import functools
import inspect

from triton.language import core as tlc
from triton.runtime.jit import JITFunction


class ModuleProxy:

    def __init__(self, candidates):
        candidates = list(candidates)
        if not candidates:
            raise ValueError("ModuleProxy needs at least one (predicate, module) pair")
        chosen = []
        for predicate, module in candidates:
            if predicate():
                chosen.append((predicate, module))
        names = [getattr(p, "__name__", repr(p)) for p, _ in candidates]
        if len(chosen) != 1:
            held = [getattr(p, "__name__", repr(p)) for p, _ in chosen]
            raise RuntimeError(f"ModuleProxy: exactly one platform predicate must hold, but {held or 'none'} of "
                               f"{names} did (set TDIST_PLATFORM to choose)")
        object.__setattr__(self, "_predicate", chosen[0][0])
        object.__setattr__(self, "_module", chosen[0][1])

    @property
    def active_module(self):
        return self._module

    def __getattr__(self, name):
        # Only called for names not found on the proxy itself.
        module = object.__getattribute__(self, "_module")
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"{module.__name__} (selected by {self._predicate.__name__}) "
                                 f"has no '{name}'") from None

    def __setattr__(self, name, value):
        raise AttributeError("ModuleProxy is read-only")

    def __deepcopy__(self, memo):  # Triton deep-copies referenced globals; a proxy is shared
        return self


def call_impl(impl, name, args, kwargs, _semantic, _generator, _builder=None):
    """Call ``impl`` from the code generator of either front end (``_semantic``: Triton 3.6,
    ``_builder``: triton-ascend's Triton 3.2)."""
    if isinstance(impl, JITFunction):
        if _generator is None:
            raise RuntimeError(f"{name}: the backend implementation is a @triton.jit function; call it from a kernel")
        return _generator.call_JitFunction(impl, list(args), dict(kwargs))
    if tlc.is_builtin(impl):
        params = inspect.signature(impl).parameters
        extra = {"_semantic": _semantic} if _builder is None else {"_builder": _builder}
        if "_generator" in params:
            extra["_generator"] = _generator
        return impl(*args, **kwargs, **extra)
    return impl(*args, **kwargs)


def dispatch(proxy):
    """Decorator: the stub's body is ignored; its name selects the implementation at call time."""

    def decorate(stub):
        name = stub.__name__

        @functools.wraps(stub)
        def wrapper(*args, _semantic=None, _generator=None, _builder=None, **kwargs):
            impl = getattr(proxy, name)
            return call_impl(impl, name, args, kwargs, _semantic, _generator, _builder)

        # inspect.signature must show _semantic/_builder/_generator so the code generator passes them.
        wrapper.__signature__ = inspect.signature(stub).replace(parameters=[
            *[p for p in inspect.signature(stub).parameters.values()
              if p.name not in ("_semantic", "_generator", "_builder")],
            inspect.Parameter("_semantic", inspect.Parameter.KEYWORD_ONLY, default=None),
            inspect.Parameter("_builder", inspect.Parameter.KEYWORD_ONLY, default=None),
            inspect.Parameter("_generator", inspect.Parameter.KEYWORD_ONLY, default=None),
        ])
        return tlc.builtin(wrapper)

    return decorate
