"""tdist: bindings over the C runtime (include/tdist/tdist.h).

Addresses are Python ints. Every failing call raises a ``TdistError`` subclass named after its
status code (``tdist.errors``). Collective calls (init, malloc/free, barriers, team split) must be
made by every PE with the same arguments in the same order.

Without the compiled extension (a compile-only machine) ``import tdist`` still gives ``tdist.errors``
and the exception classes, which the compile-only front end raises; each binding then raises an
``ImportError`` saying why the extension did not load.
"""
from . import errors  # noqa: F401  (tdist.errors without the extension)
from .errors import (TdistError, InvalidParam, InvalidValue, SmemError, InnerError, NotInitialized,  # noqa: F401
                     BootstrapError, TimeoutError_, MallocFailed, CollectiveMismatch, NotSupported)
from ._load import load as _load
from ._version import __version__  # noqa: F401

try:
    _load()
except ImportError as _missing:
    _NO_EXTENSION = _missing

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(f"tdist.{name} needs the compiled extension tdist._C: {_NO_EXTENSION}")
else:
    from ._bindings import *  # noqa: F401,F403
    from ._bindings import _C  # noqa: F401
