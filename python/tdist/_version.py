"""tdist's version. The one place it is written is CMakeLists.txt's ``project(tdist VERSION ...)``:
CMake's package version file and pyproject.toml's metadata both take it from there, and so does
this module (from the checkout when it runs from one, else from the installed distribution)."""
import re
from pathlib import Path


def _version():
    cml = Path(__file__).resolve().parents[2] / "CMakeLists.txt"
    try:
        m = re.search(r"project\(\s*tdist\s+VERSION\s+([0-9][0-9.]*)", cml.read_text())
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("tdist")
    except (ImportError, PackageNotFoundError):
        return "0+unknown"


__version__ = _version()
