"""``python -m triton_dist.compile [--target ascend] KERNEL_FILE [-k NAME ...] -o DIR``

Compiles the kernels a file describes with triton-ascend, tdist inserted at the ttadapter stage,
and writes for each ``<name>.ttir`` (stage "ttir"), ``<name>.dist.ttir`` (the seven distributed
ops), ``<name>.hivm.ttir`` (what triton-adapter-opt takes) and ``<name>.ttadapter`` (the Linalg
file ``bishengir-compile`` takes). No NPU or CANN is needed.

The file names its kernels with ``compile_cases()``, returning ``(name, jit_fn, signature,
constants[, options])`` tuples, as ``tdist_kernels``' modules do.
"""
import argparse
import importlib.util
import sys
from pathlib import Path


def load_cases(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None:
        raise SystemExit(f"tdist-compile: cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    if not hasattr(mod, "compile_cases"):
        raise SystemExit(f"tdist-compile: {path} has no compile_cases() naming its kernels")
    return mod.compile_cases()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m triton_dist.compile", description=__doc__.split("\n\n")[1])
    ap.add_argument("file")
    ap.add_argument("--target", default="ascend", choices=["ascend"])
    ap.add_argument("-k", "--kernel", action="append", help="only these case names (repeatable)")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)
    from . import ascend
    if not ascend.triton_is_ascend():
        raise SystemExit("tdist-compile: --target ascend needs triton-ascend (pip install triton-ascend==3.2.0 in its "
                         "own virtual environment)")
    cases = load_cases(args.file)
    names = [c[0] for c in cases]
    if args.kernel:
        unknown = sorted(set(args.kernel) - set(names))
        if unknown:
            raise SystemExit(f"tdist-compile: no case {unknown} in {args.file} (cases: {names})")
        cases = [c for c in cases if c[0] in args.kernel]
    for case in cases:
        name, fn, signature, constants = case[:4]
        options = case[4] if len(case) > 4 else None
        compiled = ascend.compile_to_ttadapter(fn, signature, constants, options=_ascend_options(options))
        compiled.name = name
        for path in ascend.write_files(compiled, args.out):
            print(path)
    return 0


def _ascend_options(options):
    # GPU launch options (num_warps, ...) have no Ascend meaning; keep only what NPUOptions knows.
    return {k: v for k, v in (options or {}).items() if k in ("debug",)}


if __name__ == "__main__":
    sys.exit(main())
