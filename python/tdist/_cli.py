"""The installed package's commands besides ``tdist-run`` (tdist.run): ``tdist-bench`` and
``tdist-opt`` (pyproject.toml's [project.scripts])."""
import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def bench():
    """tdist-bench (tools/tdist-bench, shipped as tdist/_tools/tdist-bench). The CPU benchmark
    programs are not part of the wheel: point it at a build with them (--build-dir, or
    TDIST_BUILD_DIR); --gpu-json plots need only matplotlib."""
    tool = HERE / "_tools" / "tdist-bench"
    if not tool.is_file():
        sys.exit(f"tdist-bench: {tool} is missing from this installation")
    sys.argv[0] = "tdist-bench"
    runpy.run_path(str(tool), run_name="__main__")


def opt():
    """tdist-opt, the MLIR compiler driver, when the package was built with the compiler
    (MLIR 22: pip install . --config-settings=cmake.define.TDIST_ENABLE_MLIR=ON)."""
    exe = HERE / "bin" / "tdist-opt"
    if not exe.is_file():
        sys.exit("tdist-opt: this tdist was installed without the compiler; reinstall with MLIR 22 present: "
                 "pip install . --config-settings=cmake.define.TDIST_ENABLE_MLIR=ON")
    os.execv(str(exe), [str(exe)] + sys.argv[1:])
