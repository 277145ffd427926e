"""A rank of test_ucx_is_loaded_only_across_hosts (test_hosts.py): init on the CPU backend, an
allocation and host barriers (across hosts they read the peers' heaps through the ROCE engine),
then "libucp <yes|no>": whether UCX's libucp is mapped into this process (/proc/self/maps)."""
import tdist

tdist.init_from_env(local_mem_size=1 << 24, backend=tdist.BACKEND_CPU)
buf = tdist.malloc(64)
for _ in range(3):
    tdist.barrier_all()
with open("/proc/self/maps") as f:
    loaded = any("libucp" in line for line in f)
print(f"libucp {'yes' if loaded else 'no'}", flush=True)
tdist.free(buf)
tdist.finalize()
