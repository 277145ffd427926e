"""Bad launches on CPU ranks fail with an error naming the problem (run under tools/tdist-run -n 1)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import numpy as np  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
from triton_dist import cpu  # noqa: E402
from ring_kernel import ring_kernel  # noqa: E402


def expect(what, exc, pattern, fn):
    import re
    try:
        fn()
    except exc as e:
        if re.search(pattern, str(e)):
            print(f"OK {what}")
            return True
        print(f"BAD {what}: message {e!r} does not match {pattern!r}")
        return False
    print(f"BAD {what}: no {exc.__name__} raised")
    return False


def main():
    ash.init_from_env(local_mem_size=1 << 22)
    n = 512
    src, inbox = ash.aclshmem_create_tensor([2 * n], "float32"), ash.aclshmem_create_tensor([n], "float32")
    sig = ash.aclshmem_create_tensor([64], "int64")
    out = np.zeros(n, np.float32)
    ok = all([
        expect("non-contiguous array", ValueError, r"argument 0 is a non-contiguous numpy view",
               lambda: cpu.launch(ring_kernel, (1,), src[::2], inbox, out, sig, n, 1, BLOCK=256)),
        expect("missing argument", TypeError, r"expected 6 positional arguments \(src, inbox, out, sig, n, epoch\)",
               lambda: cpu.launch(ring_kernel, (1,), src, inbox, out, sig, n, BLOCK=256)),
        expect("missing constexpr", TypeError, r"missing \['BLOCK'\]",
               lambda: cpu.launch(ring_kernel, (1,), src, inbox, out, sig, n, 1)),
        expect("grid over the limit", tdist.TdistError, r"1025",
               lambda: cpu.launch(ring_kernel, (1025,), src, inbox, out, sig, n, 1, BLOCK=256)),
    ])
    for t in (src, inbox, sig):
        ash.aclshmem_free_tensor(t)
    ash.aclshmem_finalize()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
