"""Backend module for platforms whose libshmem_device tdist does not provide.

Any attribute is a builtin that fails at compile time with the platform's name, so the error says
what is missing instead of an AttributeError deep in Triton.
"""
from triton.language import core as tlc


def make(platform, reason, library="libshmem_device"):
    import types
    mod = types.ModuleType(f"triton_dist.language.extra.{platform}.{library}")
    mod.PLATFORM = platform

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)

        @tlc.builtin
        def unsupported(*args, _semantic=None, **kwargs):
            raise NotImplementedError(f"{library}.{name}: not available on platform {platform!r}: {reason}")

        unsupported.__name__ = name
        return unsupported

    mod.__getattr__ = __getattr__
    return mod
