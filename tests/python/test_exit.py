"""A process that imported shmem and caught tdist and Triton errors exits with its own status.

The extension keeps the Python error factory (tdist/errors.py) that turns a C status into a
``TdistError``. It must let go of it while the interpreter still runs: released by the C++ static
destructors after Py_Finalize, freeing it aborted the process at exit (rc 134, "Fatal Python error:
PyThreadState_Get ... the GIL is released"; seen with Triton 3.9, whose import leaves the factory's
module to be freed last). Each case runs in a fresh interpreter and must exit 0.
"""
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PRELUDE = textwrap.dedent("""
    import sys
    sys.path.insert(0, {python!r})
    import shmem as ash, tdist
    try:
        tdist.malloc(64)
    except tdist.NotInitialized as e:
        print("CAUGHT tdist", type(e).__name__, flush=True)
""")

# A Triton compile error raised by a dl.* builtin (bad argument), caught by the caller.
TRITON = textwrap.dedent("""
    import triton
    import triton_dist.language as dl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    @triton.jit
    def bad_scope(sig):
        dl.wait(sig, 1, "nowhere", "acquire")

    try:
        triton.compile(ASTSource(bad_scope, {"sig": "*i64"}, {}), target=GPUTarget("cuda", 90, 32))
        print("COMPILED", flush=True)
    except CompilationError as e:
        print("CAUGHT triton", type(e).__name__, "scope" in str(e), flush=True)
""")

# The factory as the only holder of its module globals, so that releasing it frees them: the
# case that aborted whenever the last reference went at static destruction.
LAST_HOLDER = textwrap.dedent("""
    ns = {"from_status": tdist.errors.from_status}
    exec("def factory(code, message):\\n    return from_status(code, message)\\n", ns)
    factory = ns.pop("factory")
    del ns
    tdist._C._set_error_factory(factory)
    del factory
    try:
        tdist.malloc(64)
    except tdist.NotInitialized as e:
        print("CAUGHT again", type(e).__name__, flush=True)
""")


def _extension_or_skip():
    try:
        importlib.import_module("tdist._load").load()
    except ImportError as e:
        pytest.skip(f"tdist._C not built: {e}")


def _run(code, tmp_path):
    script = tmp_path / "job.py"  # a file: triton.jit reads the kernel's source
    script.write_text(code)
    env = dict(os.environ, TDIST_PLATFORM="cuda", TRITON_ALWAYS_COMPILE="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, f"exit status {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert "Fatal Python error" not in r.stderr, r.stderr[-3000:]
    return r.stdout.splitlines()


def test_exit_after_a_caught_tdist_error(tmp_path):
    _extension_or_skip()
    lines = _run(PRELUDE.format(python=str(REPO / "python")), tmp_path)
    assert "CAUGHT tdist NotInitialized" in lines


def test_exit_after_caught_tdist_and_triton_errors(tmp_path):
    _extension_or_skip()
    pytest.importorskip("triton")
    lines = _run(PRELUDE.format(python=str(REPO / "python")) + TRITON, tmp_path)
    assert "CAUGHT tdist NotInitialized" in lines
    assert "CAUGHT triton CompilationError True" in lines, lines


def test_exit_when_the_factory_holds_the_last_reference(tmp_path):
    _extension_or_skip()
    lines = _run(PRELUDE.format(python=str(REPO / "python")) + LAST_HOLDER, tmp_path)
    assert "CAUGHT again NotInitialized" in lines
