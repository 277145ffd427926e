"""A rank of the lost-host test (test_hosts.py): init on the CPU backend, say "ready", then host
barriers and puts to the next PE until told to stop or a failure (a lost host) ends it."""
import sys
import time

import tdist

tdist.init_from_env(local_mem_size=1 << 24, backend=tdist.BACKEND_CPU)
me, W = tdist.my_pe(), tdist.n_pes()
buf = tdist.malloc(64)
print(f"ready {me}", flush=True)
t0 = time.monotonic()
try:
    while time.monotonic() - t0 < 90:
        tdist.barrier_all()
except tdist.TdistError as e:
    print(f"rank {me} stopped after {time.monotonic() - t0:.1f} s: {e}", flush=True)
    sys.exit(3)
print(f"rank {me}: no failure seen", flush=True)
