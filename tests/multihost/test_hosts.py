"""Jobs across test hosts (a network namespace and host name each, netns_hosts.py): the runtime's
multi-process suite, the CPU kernels' and the MoE kernels' on 2 hosts x 2 ranks and 3 hosts x 1
rank, peers on other hosts reached through the CPU backend's ROCE engine over UCX's TCP transport,
the PEs of one host through shared memory; and a lost host: when one host's ranks are killed, the
others fail within 30 s naming them."""
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

import netns_hosts as nh

REPO = Path(__file__).resolve().parents[2]
_reason = nh.why_not()


def _build():
    for b in sorted(REPO.glob("build*")):
        t = b / "tests" / "tdist_mp_tests"
        if t.is_file() and (b / "CMakeCache.txt").read_text().find("TDIST_HAVE_UCX") >= 0:
            return b
    for b in sorted(REPO.glob("build*")):
        if (b / "tests" / "tdist_mp_tests").is_file():
            return b
    return None


BUILD = _build()


def _ucx_built():
    if BUILD is None:
        return False
    cache = (BUILD / "CMakeCache.txt").read_text()
    m = re.search(r"^UCX_FOUND:INTERNAL=(\d)", cache, re.M)
    return bool(m and m.group(1) == "1")


skip = pytest.mark.skipif(_reason is not None or BUILD is None or not _ucx_built(),
                          reason=_reason or ("tdist_mp_tests not built" if BUILD is None else
                                             "libtdist built without UCX (libucx-dev)"))


def _env():
    e = dict(os.environ)
    e["UCX_TLS"] = "tcp,self"  # the hosts' network, not the machine's shared memory
    e.pop("TDIST_ROCE_PEERS", None)
    return e


SUITES = {"runtime": "tests/tdist_mp_tests", "kernels": "tests/kernels/tdist_kernels_mp_tests",
          "moe": "tests/kernels/tdist_moe_mp_tests"}


@skip
@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("layout", [(0, 0, 1, 1), (0, 1, 2)], ids=["2hosts-x2", "3hosts-x1"])
def test_suite_across_hosts(layout, suite):
    """The runtime's suite, the CPU kernels' (all-to-all bulk / wait_notify / direct, the
    all-reduces, AG+GEMM, GEMM+RS; the pipeline all-to-all is refused across hosts by name), and
    the MoE kernels' (dispatch and combine, both modes, dtypes, top-k, slices, bad input)."""
    binary = BUILD / SUITES[suite]
    if not binary.is_file():
        pytest.skip(f"{binary} not built")
    with nh.Hosts(max(layout) + 1) as hosts:
        procs = hosts.launch(list(layout), [str(binary), "--gtest_brief=1"], _env())
        rcs, outs = nh.wait_all(procs, 300)
    for r, (rc, out) in enumerate(zip(rcs, outs)):
        assert rc == 0 and "PASSED" in out and "FAILED" not in out, f"rank {r} (exit {rc}):\n{out[-4000:]}"


@skip
def test_lost_host_is_named_within_30s():
    with nh.Hosts(2) as hosts:
        env = _env()
        env["PYTHONPATH"] = str(REPO / "python")
        procs = hosts.launch([0, 0, 1, 1], [sys.executable, str(REPO / "tests" / "multihost" / "lost_host_worker.py")],
                             env)
        # wait until every rank is in its barrier loop
        seen, lines, deadline = set(), {}, time.monotonic() + 120
        while len(seen) < 4 and time.monotonic() < deadline:
            for r, p in enumerate(procs):
                if r in seen:
                    continue
                line = p.stdout.readline()
                lines.setdefault(r, []).append(line)
                if line.startswith("ready"):
                    seen.add(r)
                elif p.poll() is not None:
                    pytest.fail(f"rank {r} exited {p.returncode} before it was ready: {''.join(lines[r])}")
        assert len(seen) == 4, f"not every rank got ready: {lines}"
        t_kill = time.monotonic()
        for r in (2, 3):  # host 1 (ip netns exec, unshare and sh exec the worker: the pid is the worker's)
            procs[r].send_signal(signal.SIGKILL)
        rcs, outs = nh.wait_all(procs[:2], 60)
        took = time.monotonic() - t_kill
        for q in (2, 3):
            procs[q].wait(timeout=10)
    print(f"survivors ended {took:.2f} s after the kill")
    assert took < 30, f"the survivors took {took:.1f} s"
    for r, (rc, out) in enumerate(zip(rcs, outs)):
        assert rc != 0, f"rank {r} exited 0 after its peers' host was lost:\n{out[-3000:]}"
        assert re.search(r"rank [23] lost", out), f"rank {r} did not name the lost ranks:\n{out[-3000:]}"
        print(f"rank {r}: {out.strip().splitlines()[-1]}")


@skip
def test_tdist_run_per_host():
    """One tdist-run per host, torchrun's multi-node way (--nnodes, --node-rank, --master-addr,
    --master-port, a shared TDIST_STORE_SECRET): the runtime suite on 2 hosts x 2 ranks, global
    ranks in the output prefixes; and the launcher refuses a multi-host job without a secret."""
    import secrets
    import subprocess
    run = REPO / "tools" / "tdist-run"
    r = subprocess.run([sys.executable, str(run), "-n", "2", "--nnodes", "2", "--node-rank", "1", "--master-addr",
                        "10.0.0.1", "--master-port", "29999", "--", "true"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "TDIST_STORE_SECRET"}, timeout=60)
    assert r.returncode != 0 and "needs TDIST_STORE_SECRET" in r.stderr, r.stderr
    with nh.Hosts(2) as hosts:
        env = _env()
        env["TDIST_STORE_SECRET"] = secrets.token_hex(32)
        port = nh._free_port()
        procs = []
        for h in range(2):
            cmd = [sys.executable, str(run), "-n", "2", "--nnodes", "2", "--node-rank", str(h), "--master-addr",
                   hosts.addr(0), "--master-port", str(port), "--timeout", "240", "--",
                   str(BUILD / "tests" / "tdist_mp_tests"), "--gtest_brief=1"]
            wrapped = ["ip", "netns", "exec", hosts.names[h], "unshare", "--uts", "sh", "-c",
                       f'hostname tdist-host-{h} && exec "$@"', "sh"] + cmd
            procs.append(subprocess.Popen(wrapped, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
        rcs, outs = nh.wait_all(procs, 300)
    for h, (rc, out) in enumerate(zip(rcs, outs)):
        assert rc == 0, f"host {h} (exit {rc}):\n{out[-4000:]}"
        for rank in (2 * h, 2 * h + 1):
            assert f"[rank {rank}] [  PASSED  ]" in out, f"host {h}: rank {rank}:\n{out[-4000:]}"


# The test's remote shell: enter the host's namespace and a UTS namespace named after it, then run
# the command string (the last argument, $0 of the inner sh -c) there.
NETNS_RSH = "ip netns exec {host} unshare --uts sh -c 'hostname {host} && exec sh -c \"$0\"'"


@skip
def test_tdist_run_hosts_one_command():
    """tdist-run --hosts: one command starts the runtime suite on 2 hosts with 2 and 1 ranks (counts
    that differ), through a remote shell; --env reaches every rank; the secret is on no command
    line; and a host whose command fails ends the job with its status, naming it, the other host
    stopped after --host-grace."""
    import subprocess
    run = REPO / "tools" / "tdist-run"
    env = {k: v for k, v in os.environ.items() if k not in ("TDIST_ROCE_PEERS", "UCX_TLS", "TDIST_STORE_SECRET")}
    with nh.Hosts(2) as hosts:
        spec = f"{hosts.names[0]}:2,{hosts.names[1]}:1"
        cmd = [sys.executable, str(run), "--hosts", spec, "--rsh", NETNS_RSH, "--master-addr", hosts.addr(0),
               "--env", "UCX_TLS=tcp,self", "--timeout", "240", "--",
               str(BUILD / "tests" / "tdist_mp_tests"), "--gtest_brief=1"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
        assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout[-4000:]}\n{r.stderr[-2000:]}"
        for rank in range(3):
            assert f"[rank {rank}] [  PASSED  ]" in r.stdout, f"rank {rank}:\n{r.stdout[-4000:]}"
        probe = "echo rank=$RANK/$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE host=$(hostname) tls=$UCX_TLS " \
                "secret=${#TDIST_STORE_SECRET}; ps -eo args | grep -c '[T]DIST_STORE_SECRET='; true"
        r = subprocess.run([sys.executable, str(run), "--hosts", spec, "--rsh", NETNS_RSH, "--master-addr",
                            hosts.addr(0), "--env", "UCX_TLS=tcp,self", "--", "sh", "-c", probe],
                           capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
        assert r.returncode == 0, r.stdout + r.stderr
        for rank, local, h in ((0, "0/2", 0), (1, "1/2", 0), (2, "0/1", 1)):
            want = f"[rank {rank}] rank={rank}/3 local={local} host={hosts.names[h]} tls=tcp,self secret=64"
            assert want in r.stdout, (want, r.stdout)
        assert r.stdout.count("] 0\n") == 3, f"a command line holds the secret:\n{r.stdout}"
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, str(run), "--hosts", spec, "--rsh", NETNS_RSH, "--master-addr",
                            hosts.addr(0), "--host-grace", "2", "--", "sh", "-c",
                            'test "$RANK" != 2 || exit 7; sleep 60'], capture_output=True, text=True, env=env,
                           timeout=60, cwd=REPO)
        took = time.monotonic() - t0
    assert r.returncode == 7, (r.returncode, r.stderr)
    assert f"host 1 ({hosts.names[1]}) failed (code 7)" in r.stderr, r.stderr
    assert took < 30, f"the job took {took:.1f} s after host 1 failed (--host-grace 2)"


@skip
def test_ucx_is_loaded_only_across_hosts():
    """libtdist does not link UCX: a job on one host never loads libucp (nor the memory hooks UCX
    installs as it loads); a job across hosts loads it at init, for its ROCE engine."""
    worker = [sys.executable, str(REPO / "tests" / "multihost" / "ucx_loaded_worker.py")]
    env = _env()
    env["PYTHONPATH"] = str(REPO / "python")
    with nh.Hosts(2) as hosts:
        for layout, want in (([0, 0], "no"), ([0, 1], "yes")):
            rcs, outs = nh.wait_all(hosts.launch(layout, worker, env), 120)
            for r, (rc, out) in enumerate(zip(rcs, outs)):
                assert rc == 0 and f"libucp {want}" in out, f"layout {layout}, rank {r} (exit {rc}):\n{out[-3000:]}"
