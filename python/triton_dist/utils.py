"""Platform detection (seed 000 section 7.3).

The seed decides the platform by which vendor management tool is on PATH. tdist adds two things:

* ``is_cpu()``: true when none of the vendor tools is present (CPU ranks, CI machines);
* ``TDIST_PLATFORM`` (``cuda``, ``hip``, ``ascend``, ``maca`` or ``cpu``): when set, it names the
  platform and no tool is probed. CI uses it to compile CUDA kernels ahead of time on machines
  without a GPU (``TDIST_PLATFORM=cuda``). An unknown value is an error, never silently ignored.
"""
import os
import shutil

PLATFORMS = ("cuda", "hip", "ascend", "maca", "cpu")
_SMI_TOOLS = {"cuda": "nvidia-smi", "hip": "rocm-smi", "ascend": "npu-smi", "maca": "mx-smi"}


def _forced_platform():
    value = os.environ.get("TDIST_PLATFORM", "").strip().lower()
    if not value:
        return None
    if value not in PLATFORMS:
        raise ValueError(f"TDIST_PLATFORM={value!r} is not a platform; legal values: {', '.join(PLATFORMS)}")
    return value


def _is(platform):
    forced = _forced_platform()
    if forced is not None:
        return forced == platform
    return shutil.which(_SMI_TOOLS[platform]) is not None


def is_cuda():
    """NVIDIA GPU platform: ``nvidia-smi`` on PATH (or ``TDIST_PLATFORM=cuda``)."""
    return _is("cuda")


def is_hip():
    """AMD GPU platform: ``rocm-smi`` on PATH (or ``TDIST_PLATFORM=hip``)."""
    return _is("hip")


def is_ascend():
    """Ascend NPU platform: ``npu-smi`` on PATH (or ``TDIST_PLATFORM=ascend``)."""
    return _is("ascend")


def is_maca():
    """MetaX platform: ``mx-smi`` on PATH (or ``TDIST_PLATFORM=maca``)."""
    return _is("maca")


def is_cpu():
    """No accelerator tool found (or ``TDIST_PLATFORM=cpu``): CPU ranks only."""
    forced = _forced_platform()
    if forced is not None:
        return forced == "cpu"
    return not any(shutil.which(tool) for tool in _SMI_TOOLS.values())


def current_platform():
    """Name of the one platform whose predicate holds; error if none or several do."""
    hits = [name for name, pred in (("cuda", is_cuda), ("hip", is_hip), ("ascend", is_ascend),
                                    ("maca", is_maca), ("cpu", is_cpu)) if pred()]
    if len(hits) != 1:
        raise RuntimeError(f"platform detection found {hits or 'no platform'}; exactly one expected "
                           f"(tools: {_SMI_TOOLS}); set TDIST_PLATFORM to choose")
    return hits[0]
