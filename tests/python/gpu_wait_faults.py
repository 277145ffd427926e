"""Device waits that end without their condition, on the GPU (test_gpu.py runs each scenario under
tools/tdist-run and checks what it printed). Every wait is the device ABI's one wait.

    timeout    1 rank: dl.wait(timeout_ns=50 ms) on a slot nobody sets. The first thread to give up
               prints the fault record (this PE, the slot's heap offset, expected, seen) and the
               program traps; the host's next synchronisation fails.
    lost-peer  2 ranks: rank 0 waits forever (timeout_ns=0) on a slot rank 1 never sets; rank 1
               exits without finalising. The watchdog publishes the loss to the device and rank 0's
               wait ends at once, naming the lost PE.

Each rank prints "EXPECT <text>" lines for what the device must print, then "HOST <error>" once
the host saw the launch fail; the test matches them against the output.
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402
import triton  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
import triton_dist.language as dl  # noqa: E402


@triton.jit
def wait_kernel(slot, value, TIMEOUT: triton.language.constexpr):
    dl.wait(slot, 1, "gpu", "acquire", waitValue=value, timeout_ns=TIMEOUT)


def main(scenario):
    me = int(os.environ["RANK"])
    torch.cuda.set_device(0)
    ash.init_from_env(local_mem_size=64 << 20, backend=tdist.BACKEND_CUDA)
    slot = ash.aclshmem_create_tensor((8,), torch.int64)
    slot.fill_(5)
    torch.cuda.synchronize()
    ash.barrier_all()
    off = tdist.heap_offset(slot.data_ptr())
    if scenario == "timeout":
        print(f"EXPECT dl.wait gave up (status -7): fault -7 on PE {me}, heap offset {off:#x}, cmp 0, "
              f"expected 7, seen 5", flush=True)
        wait_kernel[(2,)](slot, 7, TIMEOUT=50_000_000)
    elif me == 0:
        print("EXPECT dl.wait gave up (status -6): fault -6 on PE 1", flush=True)
        wait_kernel[(1,)](slot, 7, TIMEOUT=0)
        ash.barrier_all()  # rank 1 leaves only once the wait is running
    else:
        ash.barrier_all()
        time.sleep(0.5)
        os._exit(0)  # no finalize: rank 0 sees this PE lost
    try:
        torch.cuda.synchronize()
    except RuntimeError as e:
        print(f"HOST {str(e).splitlines()[0]}", flush=True)
        os._exit(0)  # the context is gone after the trap: no finalize
    print("HOST the wait returned normally", flush=True)
    os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
