"""Python side of tdist's one error model (docs/CONTRACT.md section 2).

The exception classes are made at import from the one status table, ``include/tdist/status.def``
(installed next to this file), which also gives C its enum and the device its fault codes: one
class per negative status, ``InvalidParam`` (-1, also a ``ValueError``) ... ``NotSupported`` (-100,
also a ``NotImplementedError``). Pure Python: importing it needs no compiled extension.
"""
import builtins
import re
from collections import namedtuple
from pathlib import Path


class TdistError(RuntimeError):
    """A tdist call failed; ``code`` is the tdist_status_t, the message names the problem."""
    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


Status = namedtuple("Status", "name value shmem pyclass pybase description")
Status.__doc__ = """One row of ``status.def``: ``TDIST_<name> = value``, aclshmem's ``<shmem>``, raised as
``<pyclass>`` (``"None"`` for SUCCESS), also a ``<pybase>`` builtin unless that is ``TdistError``."""


def _table_candidates():
    here = Path(__file__).resolve()
    yield here.parent / "status.def"  # installed package: copied next to this file
    yield here.parents[2] / "include" / "tdist" / "status.def"  # source checkout: python/tdist/


_ROW = re.compile(r'^TDIST_STATUS\((\w+),\s*(-?\d+),\s*(\w+),\s*(\w+),\s*(\w+),\s*"([^"]*)"\)\s*$', re.M)


def _read_table():
    for path in _table_candidates():
        if path.is_file():
            break
    else:
        raise ImportError("tdist: status.def not found (looked in "
                          + ", ".join(str(p) for p in _table_candidates()) + ")")
    rows = [Status(n, int(v), s, c, b, d) for n, v, s, c, b, d in _ROW.findall(path.read_text())]
    if not rows:
        raise ImportError(f"tdist: no TDIST_STATUS entries in {path}")
    return path, tuple(rows)


STATUS_DEF, STATUSES = _read_table()
"""The path of the table read and its rows, in table order."""

SHMEM_CODES = {s.shmem: s.value for s in STATUSES}
"""aclshmem's names for the statuses (``SUCCESS``, ``INVALID_PARAM``, ...) -> value."""


def _make_class(row):
    bases = (TdistError,) if row.pybase == "TdistError" else (TdistError, getattr(builtins, row.pybase))
    return type(row.pyclass, bases, {"code": row.value, "__doc__": f"TDIST_{row.name}: {row.description}.",
                                     "__module__": __name__, "__qualname__": row.pyclass})


BY_CODE = {}
"""Negative status -> its exception class."""
for _row in STATUSES:
    if _row.pyclass != "None":
        BY_CODE[_row.value] = globals()[_row.pyclass] = _make_class(_row)
del _row

__all__ = ["TdistError", "from_status", "BY_CODE", "STATUSES", "SHMEM_CODES"] + [c.__name__ for c in BY_CODE.values()]


def from_status(code, message):
    """The exception for a negative tdist_status_t (unknown codes give a plain TdistError)."""
    cls = BY_CODE.get(code, TdistError)
    return cls(message, code)
