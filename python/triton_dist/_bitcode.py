"""Where the NVIDIA device-ABI bitcode (``libtdist_device.bc``) is found.

Search order (first existing file wins):

1. ``$TDIST_DEVICE_BITCODE`` -- if set it must name an existing file, else it is an error (a typo
   must not silently fall back to another library);
2. ``<installed tdist package>/lib/libtdist_device.bc`` (``pip install .`` copies it there);
3. in a source checkout: ``<repo>/build*/device/NVIDIA/libtdist_device.bc``, newest first.

The library is linked into every kernel that uses ``dl.*`` or ``libshmem_device.*`` (Triton's
``extern_libs``; see ``triton_dist.language.core.ensure_linked``).
"""
import os
from pathlib import Path

from tdist.errors import NotSupported

LIB_NAME = "libtdist_device"
FILE_NAME = "libtdist_device.bc"


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


def find_bitcode():
    """Absolute path of the device bitcode; raises BitcodeNotFound naming every place tried."""
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
