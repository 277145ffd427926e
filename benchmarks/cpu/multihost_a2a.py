#!/usr/bin/env python3
"""The all-to-all across test hosts: tdist's CPU kernels (peers on the other host through the ROCE
engine on UCX) against Open MPI's MPI_Alltoall on the same hosts, in the same run, as ratios.

    sudo python3 benchmarks/cpu/multihost_a2a.py [--build build] [--hosts 2] [--ranks-per-host 2]
        [--bytes 64K,1M,16M] [--kernels a2a_direct,a2a_wait_notify] [--repeats 3] [--layout mpi|seed]
        [--variants "1m;8k:UCX_TCP_TX_SEG_SIZE=8k,UCX_TCP_RX_SEG_SIZE=8k"]

Hosts are network namespaces on this machine (tests/multihost/netns_hosts.py: a bridge, one
address each, a host name per rank); UCX and Open MPI are both held to TCP between them
(UCX_TLS=tcp,self; Open MPI's tcp BTL over eth0, its launcher entering each namespace through an
rsh agent). Every repeat runs each implementation once per size list; a figure is the slowest
rank's mean time of one call; the table gives the median and the range over the repeats and the
ratio of medians (Open MPI time / tdist time: above 1 is tdist faster). --layout mpi (the default)
gives tdist MPI_Alltoall's layout, one contiguous block per peer in and out, so both move the same
bytes to the same places; --layout seed is the seed's combine layout (4 KiB rows interleaved by
source PE in the output), an operation MPI_Alltoall does not do without a permute. --variants runs tdist
once per named environment in every repeat (e.g. UCX's TCP segment sizes), so that they compare in
the same run. Needs root.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "multihost"))
import netns_hosts as nh  # noqa: E402


def sizes(text):
    out = []
    for t in text.split(","):
        t = t.strip().upper()
        mult = {"K": 1 << 10, "M": 1 << 20}.get(t[-1:], 1)
        out.append(int(t[:-1] if mult > 1 else t) * mult)
    return out


def rows(text, impl, wanted=None):
    """{(kernel, bytes): time_us} of the JSON lines in ``text``; a size a program rounded to what its
    ranks divide (64K at 3 ranks: 65532 bytes) is filed under the requested size nearest to it."""
    got = {}
    for line in text.splitlines():
        line = line.split("] ", 1)[-1].strip()
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("check") == "FAIL":
                raise SystemExit(f"{impl}: a check failed: {line}")
            b = min(wanted, key=lambda w: abs(w - r["bytes"])) if wanted else r["bytes"]
            got[(r["kernel"], b)] = r["time_us"]
    return got


def run_tdist(hosts, layout, build, kernel, byte_list, iters, extra=(), more_env=None):
    cmd = [str(build / "benchmarks" / "cpu" / "tdist-bench-cpu"), "--kernel", kernel, "--dtype", "f32", "--bytes",
           ",".join(map(str, byte_list)), "--iters", str(iters), *extra]
    env = dict(os.environ, UCX_TLS="tcp,self", **(more_env or {}))
    env.pop("TDIST_ROCE_PEERS", None)
    rcs, outs = nh.wait_all(hosts.launch(layout, cmd, env), 900)
    if any(rcs):
        raise SystemExit(f"tdist {kernel}: exit codes {rcs}:\n{outs[0][-3000:]}")
    return rows(outs[0], "tdist", byte_list)


def run_mpi(hosts, layout, build, byte_list, iters, agent):
    hostfile = Path(agent).with_name("hostfile")
    per = {h: layout.count(h) for h in sorted(set(layout))}
    hostfile.write_text("".join(f"{hosts.names[h]} slots={n}\n" for h, n in per.items()))
    cmd = ["ip", "netns", "exec", hosts.names[0], "mpirun", "--allow-run-as-root", "--hostfile", str(hostfile),
           "-n", str(len(layout)), "--map-by", "slot", "--mca", "plm_rsh_agent", agent,
           "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0",
           str(build / "benchmarks" / "cpu" / "tdist-mpi-baseline"), "--op", "alltoall", "--dtype", "f32",
           "--bytes", ",".join(map(str, byte_list)), "--iters", str(iters)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"mpirun: exit {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return {b: t for (_, b), t in rows(r.stdout, "mpi", byte_list).items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--ranks-per-host", type=int, default=2)
    ap.add_argument("--bytes", default="64K,1M,16M")
    ap.add_argument("--kernels", default="a2a_direct,a2a_wait_notify")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layout", choices=("seed", "mpi"), default="mpi",
                    help="tdist's data layout: mpi (one contiguous block per peer, as MPI_Alltoall moves it) or "
                         "seed (the combine's 4 KiB rows, interleaved by source PE in the output)")
    ap.add_argument("--tdist-args", default="", help="more tdist-bench-cpu arguments, e.g. \"--grid 4 --block-s 256\"")
    ap.add_argument("--variants", default="",
                    help="tdist runs to compare in the same repeats, each NAME or NAME:VAR=V,VAR=V, separated by "
                         "';', e.g. \"1m;8k:UCX_TCP_TX_SEG_SIZE=8k,UCX_TCP_RX_SEG_SIZE=8k\" (default: one run, the "
                         "environment as is)")
    a = ap.parse_args()
    why = nh.why_not()
    if why:
        raise SystemExit(f"multihost_a2a: {why}")
    build = Path(a.build)
    byte_list = sizes(a.bytes)
    variants = []
    for v in filter(None, (x.strip() for x in a.variants.split(";"))):
        name, _, env = v.partition(":")
        variants.append((name, dict(kv.split("=", 1) for kv in env.split(",") if kv)))
    kernels = [k for k in a.kernels.split(",") if k]
    kernel_runs = [(k, f"{k} [{n}]" if n else k, e) for k in kernels for n, e in (variants or [("", {})])]
    layout = [h for h in range(a.hosts) for _ in range(a.ranks_per_host)]
    tdist_t = {(label, b): [] for _, label, _ in kernel_runs for b in byte_list}
    mpi_t = {b: [] for b in byte_list}
    with tempfile.TemporaryDirectory(prefix="tdist-mh-") as tmp, nh.Hosts(a.hosts) as hosts:
        agent = Path(tmp) / "agent.sh"
        # mpirun calls: agent [options] <host> <command...>; the host is a namespace name
        agent.write_text('#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; done\nh="$1"; shift\n'
                         'exec ip netns exec "$h" unshare --uts sh -c "hostname $h; $*"\n')
        agent.chmod(0o755)
        for rep in range(a.repeats):
            for b, t in run_mpi(hosts, layout, build, byte_list, a.iters, str(agent)).items():
                mpi_t[b].append(t)
            for k, label, env in kernel_runs:
                extra = ["--layout", a.layout, *a.tdist_args.split()]
                for (_, b), t in run_tdist(hosts, layout, build, k, byte_list, a.iters, extra, env).items():
                    tdist_t[(label, b)].append(t)
            print(f"repeat {rep + 1} of {a.repeats} done", file=sys.stderr, flush=True)
    print(f"all-to-all, f32, {a.layout} layout, {a.hosts} hosts x {a.ranks_per_host} ranks (network namespaces, TCP), "
          f"{a.repeats} repeats: median [min-max] of the slowest rank's mean per call")
    print("| bytes per rank | kernel | Open MPI ms | tdist ms | ratio of medians (MPI / tdist) | per-repeat ratios |")
    print("|---|---|---|---|---|---|")

    def fmt(v):
        return f"{statistics.median(v) / 1e3:.2f} [{min(v) / 1e3:.2f}-{max(v) / 1e3:.2f}]"
    for b in byte_list:
        for _, k, _ in kernel_runs:
            t, m = tdist_t[(k, b)], mpi_t[b]
            if not t or not m:
                continue
            per = sorted(x / y for x, y in zip(m, t))  # the same repeat's Open MPI and tdist times
            print(f"| {b} | {k} | {fmt(m)} | {fmt(t)} | {statistics.median(m) / statistics.median(t):.2f}x | "
                  f"{per[0]:.2f}-{per[-1]:.2f}x |")


if __name__ == "__main__":
    main()
