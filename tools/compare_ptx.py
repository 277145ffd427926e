#!/usr/bin/env python3
"""Compare the PTX of every tdist_kernels kernel between two source trees (no GPU needed).

    tools/compare_ptx.py OLD_TREE NEW_TREE [--bitcode libtdist_device.bc]

Each tree's ``python/`` is imported in its own process; every case of
``tdist_kernels.all_compile_cases`` (fp16, bf16, fp32) is compiled for sm_90 with the divisibility
Triton gives at run time, and the instruction text is compared (debug sections, ``.loc`` / ``.file``
lines and comments dropped: they name source paths and lines). Exit 0 when every kernel's code is
identical: a front-end change that passes cannot change GPU speed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

DUMP = r'''
import hashlib, json, os, re, sys
sys.path.insert(0, os.path.join(sys.argv[1], "python"))
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import tdist_kernels

def code(ptx):
    ptx = ptx.split("\t.section\t.debug")[0]
    out = []
    for line in ptx.splitlines():
        if re.match(r"\s*\.(loc|file)\b", line) or line.strip().startswith("//"):
            continue
        line = re.sub(r"\$L__tmp\d+", "", line)
        if line.strip() not in ("", ":"):
            out.append(line)
    return "\n".join(out)

res = {}
for dt in ("fp16", "bf16", "fp32"):
    for name, fn, sig, cst, opts in tdist_kernels.all_compile_cases(dt):
        s = dict(sig)
        s.update({k: "constexpr" for k in cst})
        src = ASTSource(fn, signature=s, constexprs=cst, attrs=tdist_kernels.runtime_attrs(fn, sig, cst))
        ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts).asm["ptx"]
        res[f"{dt}/{name}"] = hashlib.sha256(code(ptx).encode()).hexdigest()
json.dump(res, sys.stdout)
'''


def dump(tree, bitcode):
    env = dict(os.environ, TDIST_PLATFORM="cuda", TRITON_ALWAYS_COMPILE="1", TDIST_DEVICE_BITCODE=bitcode)
    with tempfile.TemporaryDirectory() as cache:
        env["TRITON_CACHE_DIR"] = cache
        r = subprocess.run([sys.executable, "-c", DUMP, tree], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"compare_ptx: compiling {tree} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--bitcode", default=os.environ.get("TDIST_DEVICE_BITCODE"),
                    required="TDIST_DEVICE_BITCODE" not in os.environ)
    a = ap.parse_args()
    old, new = dump(a.old, a.bitcode), dump(a.new, a.bitcode)
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    print(f"{len(old.keys() & new.keys()) - len(set(differ) & old.keys() & new.keys())} kernels with identical code, "
          f"{len(differ)} differ{': ' + ', '.join(differ) if differ else ''}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
