"""The one status table (include/tdist/status.def) against every layer built from it: what the C
preprocessor expands, the Python classes, the C library (through the extension), the CUDA device
codes, shmem's constants, and the errors raised in Python outside the extension. The C enum's
frozen values are checked by tests/unit/status_test.cpp."""
import ast
import builtins
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tdist import errors

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "include" / "tdist" / "status.def"

# The Python API the table must keep giving (class names, codes, extra builtin bases): renaming or
# renumbering a row breaks user code that catches these.
PYTHON_API = {
    "InvalidParam": (-1, ValueError),
    "InvalidValue": (-2, ValueError),
    "SmemError": (-3, None),
    "InnerError": (-4, None),
    "NotInitialized": (-5, None),
    "BootstrapError": (-6, None),
    "TimeoutError_": (-7, builtins.TimeoutError),
    "MallocFailed": (-8, MemoryError),
    "CollectiveMismatch": (-9, None),
    "NotSupported": (-100, NotImplementedError),
}


def _c_rows():
    """The table as the C preprocessor expands it (independent of errors.py's reading)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to expand status.def")
    src = ('#define TDIST_STATUS(name, value, shmem, pyclass, pybase, description) '
           '(#name, value, #shmem, #pyclass, #pybase, description),\n#include "tdist/status.def"\n')
    out = subprocess.run([cc, "-E", "-P", "-x", "c", f"-I{REPO / 'include'}", "-"], input=src, text=True,
                         capture_output=True, check=True).stdout
    return ast.literal_eval("[" + out + "]")


def test_python_reads_what_c_expands():
    assert errors.STATUS_DEF == TABLE
    assert [tuple(s) for s in errors.STATUSES] == _c_rows()


def test_classes_follow_the_table():
    import tdist
    rows = [s for s in errors.STATUSES if s.pyclass != "None"]
    assert sorted(errors.BY_CODE) == sorted(s.value for s in rows)
    for s in rows:
        cls = getattr(errors, s.pyclass)
        assert cls.code == s.value and errors.BY_CODE[s.value] is cls and getattr(tdist, s.pyclass) is cls
        assert issubclass(cls, errors.TdistError) and s.description in cls.__doc__
        if s.pybase != "TdistError":
            assert issubclass(cls, getattr(builtins, s.pybase))
        e = errors.from_status(s.value, "why")
        assert type(e) is cls and e.code == s.value and str(e) == "why"
    e = errors.from_status(-12345, "unknown")
    assert type(e) is errors.TdistError and e.code == -12345
    assert errors.STATUSES[0].name == "SUCCESS" and errors.STATUSES[0].value == 0


def test_python_api_is_kept():
    got = {}
    for code, cls in errors.BY_CODE.items():
        extra = [b for b in cls.__bases__ if b is not errors.TdistError]
        got[cls.__name__] = (code, extra[0] if extra else None)
        assert len(extra) <= 1
    assert got == PYTHON_API


def test_c_library_and_extension_agree():
    import tdist
    try:
        status_name = tdist.status_name
    except ImportError as e:
        pytest.skip(f"tdist._C not built: {e}")
    for s in errors.STATUSES:
        assert status_name(s.value) == f"TDIST_{s.name}"
    assert status_name(-12345) == "TDIST_ERR_UNKNOWN"
    # a status raised by the C library arrives as the table's class with the table's value
    not_inited = next(s for s in errors.STATUSES if s.name == "ERR_NOT_INITED")
    with pytest.raises(getattr(errors, not_inited.pyclass)) as info:
        tdist.malloc(64)
    assert info.value.code == not_inited.value


def test_shmem_constants():
    try:
        import shmem
    except ImportError as e:
        pytest.skip(f"shmem needs tdist._C: {e}")
    for s in errors.STATUSES:
        assert getattr(shmem, s.shmem) == s.value


def test_device_codes_follow_the_table(tmp_path):
    clang = shutil.which("clang-19")
    if clang is None:
        pytest.skip("no clang-19 to compile device.cuh")
    src = tmp_path / "status_codes.cu"
    src.write_text(textwrap.dedent("""\
        #include "tdist/NVIDIA/device.cuh"
        #include "tdist/tdist.h"
        #define TDIST_STATUS(name, value, shmem, pyclass, pybase, description) \\
          static_assert(TDISTI_NV_##name == TDIST_##name && TDIST_##name == (value), #name);
        #include "tdist/status.def"
        #undef TDIST_STATUS
        """))
    r = subprocess.run([clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90", "-nocudainc",
                        "-nocudalib", "-Wno-unknown-cuda-version", "-fsyntax-only", f"-I{REPO / 'include'}", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_python_errors_are_tdist_errors():
    from triton_dist import _bitcode
    classes = [(_bitcode.BitcodeNotFound, FileNotFoundError)]
    try:
        from tdist_kernels._common import KernelArgError
        from triton_dist.language._front import DistributedError
    except ImportError:  # Triton absent: the two kernel-side classes cannot be imported
        pass
    else:
        classes += [(KernelArgError, ValueError), (DistributedError, ValueError)]
    for cls, builtin in classes:
        assert issubclass(cls, errors.TdistError) and issubclass(cls, builtin), cls
        # the code is a table value, and the class is that code's class
        assert issubclass(cls, errors.BY_CODE[cls.code]), cls


def _run(code, cwd=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd)


def test_errors_import_without_the_extension():
    r = _run(f"""
        import sys, types
        sys.path.insert(0, {str(REPO / 'python')!r})
        stub = types.ModuleType("tdist._load")
        def load():
            raise ImportError("no extension on this machine")
        stub.load = load
        sys.modules["tdist._load"] = stub
        import tdist.errors
        from triton_dist import _bitcode
        assert issubclass(_bitcode.BitcodeNotFound, tdist.NotSupported)
        assert tdist.errors.BY_CODE[-7] is tdist.TimeoutError_
        try:
            tdist.malloc(64)
        except ImportError as e:
            assert "no extension on this machine" in str(e), e
        else:
            raise AssertionError("tdist.malloc without the extension")
        """)
    assert r.returncode == 0, r.stderr


def test_installed_layout_finds_the_table(tmp_path):
    # pip install puts status.def next to errors.py (python/CMakeLists.txt); that copy comes first
    pkg = tmp_path / "tdist"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(REPO / "python" / "tdist" / "errors.py", pkg)
    shutil.copy(TABLE, pkg)
    r = _run("import tdist.errors as e; print(e.STATUS_DEF); print(e.TimeoutError_.code)", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(pkg / "status.def"), "-7"]
