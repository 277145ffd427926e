"""Find the compiled extension ``tdist._C``.

Installed (``pip install .``): it sits in this package. In a source checkout, the package is
imported from ``python/`` and the extension from the newest ``<repo>/build*/python/tdist/_C*.so``
(``cmake -DTDIST_BUILD_PYTHON=ON``), else from an installed tdist further down ``sys.path``.
"""
import importlib.machinery
import importlib.util
import sys
from pathlib import Path


def load():
    try:
        from . import _C  # noqa: F401
        return _C
    except ImportError as first:
        repo = Path(__file__).resolve().parents[2]
        found = sorted(repo.glob("build*/python/tdist/_C*.so"), key=lambda p: p.stat().st_mtime, reverse=True)
        # an installed copy (pip install .) shadowed by this source tree on sys.path
        for entry in sys.path:
            d = Path(entry or ".") / "tdist"
            if d.resolve() != Path(__file__).resolve().parent:
                found += sorted(d.glob("_C*.so"))
        if not found:
            raise ImportError(f"tdist._C not found: not installed ({first}) and no {repo}/build*/python/tdist/_C*.so; "
                              "run `pip install .` or build with -DTDIST_BUILD_PYTHON=ON") from None
        loader = importlib.machinery.ExtensionFileLoader("tdist._C", str(found[0]))
        spec = importlib.util.spec_from_file_location("tdist._C", str(found[0]), loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        sys.modules["tdist._C"] = mod
        return mod
