"""Python side of tdist's one error model (docs/CONTRACT.md section 2)."""
import builtins


class TdistError(RuntimeError):
    """A tdist call failed; ``code`` is the tdist_status_t, the message names the problem."""
    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidParam(TdistError, ValueError):
    code = -1


class InvalidValue(TdistError, ValueError):
    code = -2


class SmemError(TdistError):
    code = -3


class InnerError(TdistError):
    code = -4


class NotInitialized(TdistError):
    code = -5


class BootstrapError(TdistError):
    code = -6


class TimeoutError_(TdistError, builtins.TimeoutError):
    code = -7


class MallocFailed(TdistError, MemoryError):
    code = -8


class CollectiveMismatch(TdistError):
    code = -9


class NotSupported(TdistError, NotImplementedError):
    code = -100


BY_CODE = {c.code: c for c in (InvalidParam, InvalidValue, SmemError, InnerError, NotInitialized, BootstrapError,
                               TimeoutError_, MallocFailed, CollectiveMismatch, NotSupported)}


def from_status(code, message):
    """The exception for a negative tdist_status_t (unknown codes give a plain TdistError)."""
    cls = BY_CODE.get(code, TdistError)
    return cls(message, code)
