"""Where the NVIDIA device-ABI bitcode (``libtdist_device.bc``) is found.

Search order (first existing file wins):

1. ``$TDIST_DEVICE_BITCODE`` -- if set it must name an existing file, else it is an error (a typo
   must not silently fall back to another library);
2. ``<installed tdist package>/lib/libtdist_device.bc`` (``pip install .`` copies it there);
3. in a source checkout: ``<repo>/build*/device/NVIDIA/libtdist_device.bc``, newest first.

The library is linked into every kernel that uses ``dl.*`` or ``libshmem_device.*`` (Triton's
``extern_libs``; see ``triton_dist.language.core.ensure_linked``).

In a process that runs the NVIDIA backend's ROCE engine on NVSHMEM (docs/CONTRACT.md section 7: a
job with PEs on other hosts, or ``TDIST_ROCE_PEERS=all``), kernels link the same library built with
the engine, ``libtdist_device_nvshmem.bc`` (next to the plain one; ``$TDIST_DEVICE_BITCODE_NVSHMEM``
names it explicitly), followed by NVSHMEM's ``libnvshmem_device.bc`` (where the runtime found it).
``extern_libs()`` gives both; both paths are then part of Triton's cache key, so a kernel compiled
for one kind of job is never reused by the other.
"""
import os
from pathlib import Path

from tdist.errors import NotSupported

LIB_NAME = "libtdist_device"
FILE_NAME = "libtdist_device.bc"
ENGINE_FILE_NAME = "libtdist_device_nvshmem.bc"
NVSHMEM_LIB_NAME = "libnvshmem_device"


class BitcodeNotFound(NotSupported, FileNotFoundError):
    """The device bitcode is not built or not where it was said to be (the message says where it looked)."""


def candidates():
    out = []
    here = Path(__file__).resolve()
    try:
        import tdist  # noqa: F401  (installed package location)
        out.append(Path(tdist.__file__).resolve().parent / "lib" / FILE_NAME)
    except Exception:  # the bindings may be absent on a compile-only machine
        pass
    repo = here.parents[2]  # python/triton_dist/_bitcode.py -> repo root
    builds = sorted(repo.glob("build*/device/NVIDIA/" + FILE_NAME), key=lambda p: p.stat().st_mtime,
                    reverse=True)
    out.extend(builds)
    return out


def engine_bitcode():
    """NVSHMEM's device bitcode when this process runs the NVSHMEM engine, else None."""
    try:
        import tdist
        return tdist._C.cuda_engine_bitcode()
    except (ImportError, AttributeError):
        return None


def find_bitcode(engine=None):
    """Absolute path of the device bitcode for this process (the engine's build when it runs the
    NVSHMEM engine, or when ``engine`` says so); raises BitcodeNotFound naming every place tried."""
    if engine is None:
        engine = engine_bitcode() is not None
    plain = _find_plain()
    if not engine:
        return plain
    env = os.environ.get("TDIST_DEVICE_BITCODE_NVSHMEM")
    p = Path(env) if env else Path(plain).with_name(ENGINE_FILE_NAME)
    if not p.is_file():
        raise BitcodeNotFound(f"this job runs the NVSHMEM engine, and its device bitcode {ENGINE_FILE_NAME} is not "
                              f"at {p}" + (" ($TDIST_DEVICE_BITCODE_NVSHMEM)" if env else " (next to " + plain + ")")
                              + ": build device/NVIDIA with clang-19 or set TDIST_DEVICE_BITCODE_NVSHMEM")
    return str(p.resolve())


_CACHE = {}


def extern_libs():
    """The ``extern_libs`` a kernel of this process links: ``{"libtdist_device": path}``, and with the
    NVSHMEM engine the engine's build of it followed by ``{"libnvshmem_device": path}``. Every launch of a
    ``triton_dist.jit`` kernel asks, so the answer is kept per (engine, the two variables): the search
    touches the file system."""
    nv = engine_bitcode()
    key = (nv, os.environ.get("TDIST_DEVICE_BITCODE"), os.environ.get("TDIST_DEVICE_BITCODE_NVSHMEM"))
    libs = _CACHE.get(key)
    if libs is None:
        libs = {LIB_NAME: find_bitcode(engine=nv is not None)}
        if nv is not None:
            libs[NVSHMEM_LIB_NAME] = nv
        _CACHE.clear()
        _CACHE[key] = libs
    return dict(libs)


def _find_plain():
    env = os.environ.get("TDIST_DEVICE_BITCODE")
    if env:
        p = Path(env)
        if not p.is_file():
            raise BitcodeNotFound(f"TDIST_DEVICE_BITCODE={env!r} does not name a file")
        return str(p.resolve())
    tried = candidates()
    for p in tried:
        if p.is_file():
            return str(p)
    raise BitcodeNotFound("tdist device bitcode libtdist_device.bc not found; tried $TDIST_DEVICE_BITCODE (unset), "
                          + ", ".join(str(p) for p in tried)
                          + " and <repo>/build*/device/NVIDIA/. Build the NVIDIA backend (cmake target for "
                          "device/NVIDIA) or set TDIST_DEVICE_BITCODE.")
