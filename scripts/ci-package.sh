#!/usr/bin/env bash
# Packaging CI steps (called from .ci/run after scripts/test.sh, which built $TDIST_BUILD_DIR and
# ran the Python and compile tests under the oldest supported Triton, requirements.txt's pin):
#   1. the CMake package: `cmake --install` into a temporary prefix; tests/consumer built against it
#      with find_package(tdist) and run at 4 ranks by the installed tdist-run; the same program
#      built through pkg-config and run at 2 ranks;
#   2. the wheel: `pip install` from a read-only copy of the checkout into a fresh virtual
#      environment with the newest supported Triton; from outside the checkout: every package the
#      README uses imports (tdist_kernels.ops too), the version and licence metadata, the console
#      scripts (tdist-run at 2 ranks, tdist-bench, tdist-opt), the headers, libtdist, the CMake
#      package, tdist.pc and the device bitcode inside the installed package;
#   3. the Python tests and the compile tests (tests/python, tests/gpu_kernels/test_compile.py)
#      under that newest Triton (TDIST_NEWEST_TRITON, default 3.9.0).
# Budget: about 5 minutes on 2 cores (the wheel's build is most of it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
source scripts/env.sh
BUILD=$(realpath "${TDIST_BUILD_DIR:-build}")
NEWEST_TRITON=${TDIST_NEWEST_TRITON:-3.9.0}
T=$(mktemp -d "${TMPDIR:-/tmp}/tdist-ci-package.XXXXXX")
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
t0=$(date +%s)

echo "== CMake package: cmake --install $BUILD --prefix <tmp>"
cmake --install "$BUILD" --prefix "$T/prefix" > "$T/install.log"
cmake -S tests/consumer -B "$T/consumer" -DCMAKE_PREFIX_PATH="$T/prefix" > "$T/consumer.log" ||
  { cat "$T/consumer.log"; exit 1; }
cmake --build "$T/consumer" >> "$T/consumer.log" || { cat "$T/consumer.log"; exit 1; }
grep "^-- tdist " "$T/consumer.log"
(cd "$T" && "$T/prefix/bin/tdist-run" -n 4 --timeout 120 -- "$T/consumer/tdist_consumer")
if [ -e "$T/prefix/bin/tdist-opt" ]; then "$T/prefix/bin/tdist-opt" --version | head -2; fi  # finds libMLIR
pc=$(dirname "$(find "$T/prefix" -name tdist.pc | head -1)")
libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir tdist)
# shellcheck disable=SC2046
cc -o "$T/consumer/tdist_consumer_pc" tests/consumer/consumer.c $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs tdist) \
   -Wl,-rpath,"$libdir"
(cd "$T" && "$T/prefix/bin/tdist-run" -n 2 --timeout 120 -- "$T/consumer/tdist_consumer_pc")
t1=$(date +%s)

echo "== wheel: pip install from a read-only copy, Triton $NEWEST_TRITON"
mkdir "$T/src"
git ls-files -z --cached --others --exclude-standard | tar -c --null -T - --ignore-failed-read | tar -x -C "$T/src"
chmod -R a-w "$T/src"
python3 -m venv "$T/venv"
"$T/venv/bin/python" -m pip install -q --disable-pip-version-check "$T/src[triton,test]" "triton==$NEWEST_TRITON"
cd "$T"
PATH="$T/venv/bin:$PATH" python - "$T/src" "$NEWEST_TRITON" <<'PY'
import importlib.metadata as md
import subprocess
import sys
from pathlib import Path

import shmem, tdist, tdist_kernels, triton, triton_dist  # noqa: F401
import triton_dist.language as dl  # noqa: F401
from tdist_kernels import ops  # noqa: F401

src = Path(sys.argv[1])
pkg = Path(tdist.__file__).resolve().parent
for mod in (tdist, shmem, triton_dist, tdist_kernels):
    where = Path(mod.__file__).resolve()
    assert src not in where.parents, f"{mod.__name__} imported from the checkout: {where}"
meta = md.metadata("tdist")
version = md.version("tdist")
assert tdist.__version__ == version, (tdist.__version__, version)
assert meta["License-Expression"] == "Apache-2.0", meta["License-Expression"]
assert any(f.name == "LICENSE" for f in md.files("tdist")), "LICENSE not in the wheel"
assert triton.__version__ == sys.argv[2], (triton.__version__, sys.argv[2])
need = ["libtdist.so", "include/tdist/tdist.h", "include/tdist/abi.h", "include/tdist/NVIDIA/device.cuh",
        "lib/cmake/tdist/tdistConfig.cmake", "lib/cmake/tdist/tdistConfigVersion.cmake", "lib/pkgconfig/tdist.pc",
        "run.py", "_mps.py", "_tools/tdist-bench", "_tools/tdist-run", "status.def"]
if subprocess.run(["sh", "-c", "command -v clang-19"], capture_output=True).returncode == 0:
    need.append("lib/libtdist_device.bc")
    assert Path(triton_dist.find_bitcode()).resolve() == pkg / "lib" / "libtdist_device.bc"
missing = [n for n in need if not (pkg / n).is_file()]
assert not missing, f"missing from the installed package {pkg}: {missing}"
assert (Path(triton_dist.__file__).parent / "language" / "dist_ops.def").is_file()
print(f"wheel: tdist {version} (Triton {triton.__version__}) at {pkg}: packages, metadata, files ok")
PY
PATH="$T/venv/bin:$PATH" tdist-run -n 2 --timeout 120 -- python -c "
import shmem as ash, tdist
ash.set_conf_store_tls(False, '')
ash.init_from_env(local_mem_size=1 << 20)
t = ash.aclshmem_create_tensor([4], 'float32')
ash.barrier_all()
print('PE', tdist.my_pe(), 'of', tdist.n_pes(), 'ok')
ash.aclshmem_free_tensor(t)
ash.aclshmem_finalize()"
"$T/venv/bin/tdist-bench" --help > /dev/null
if [ -x "$("$T/venv/bin/python" -c 'import tdist, os; print(os.path.dirname(tdist.__file__))')/bin/tdist-opt" ]; then
  "$T/venv/bin/tdist-opt" --version
else
  # built without the compiler (pyproject's default): the command says so and fails
  if out=$("$T/venv/bin/tdist-opt" --version 2>&1); then echo "tdist-opt: ran without a binary" >&2; exit 1; fi
  grep -q "installed without the compiler" <<< "$out" || { echo "$out" >&2; exit 1; }
fi
# the installed CMake package: find_package(tdist) from the wheel
pkgdir=$("$T/venv/bin/python" -c 'import tdist, os; print(os.path.dirname(tdist.__file__))')
cmake -S "$ROOT/tests/consumer" -B "$T/consumer-wheel" -DCMAKE_PREFIX_PATH="$pkgdir" > "$T/consumer-wheel.log" ||
  { cat "$T/consumer-wheel.log"; exit 1; }
cmake --build "$T/consumer-wheel" >> "$T/consumer-wheel.log" || { cat "$T/consumer-wheel.log"; exit 1; }
PATH="$T/venv/bin:$PATH" tdist-run -n 2 --timeout 120 -- "$T/consumer-wheel/tdist_consumer"
cd "$ROOT"
t2=$(date +%s)

echo "== Python and compile tests, Triton $NEWEST_TRITON"
"$T/venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests/python
"$T/venv/bin/python" -m pytest -q -rs -p no:cacheprovider tests/gpu_kernels/test_compile.py tests/gpu_kernels/test_moe_compile.py
t3=$(date +%s)
echo "ci-package: CMake package $((t1 - t0)) s, wheel $((t2 - t1)) s, tests under Triton $NEWEST_TRITON $((t3 - t2)) s"
