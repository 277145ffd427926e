#!/usr/bin/env python3
"""Fault-injection tests: kill one rank (SIGKILL) at a named point and check the survivors.

For every (point, victim) case, N ranks of fault_app are started directly (not through
tdist-run, which would stop the survivors itself) and the test asserts:
  - the victim died of SIGKILL;
  - every survivor exits with fault_app's "reported" code (3) within the time bound, and its
    error message names the lost rank ("rank K lost") with TDIST_ERR_BOOTSTRAP;
  - no descriptor or heap mapping leaked inside a survivor (fault_app compares /proc/self/fd and
    /proc/self/maps before init and after finalize), nothing new appeared in /dev/shm, and no
    process of the job is left (every rank runs in its own session; none may remain).
never_join runs with the control timeout longer than the join timeout and with both equal (as
the defaults), the latter also for rank 0, the store's host ("never_join=" in the output).
Then through tdist-run: the launcher's exit status is 128+9 naming the killed rank, and no rank
process outlives it.

    fault_test.py --app build/tests/reliability/tdist_fault_app --tdist-run build/tools/tdist-run
                  [-n 4] [--bound 30] [--only POINT]
The bound defaults to $TDIST_FAULT_TIME_BOUND or 30 s.
"""
import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import time

REPORTED = 3
POINTS = ["bootstrap", "malloc", "barrier", "kernel_wait", "device_barrier", "host_wait"]


def free_port_pair():
    for _ in range(200):
        p = random.randint(20000, 60000)
        ok = True
        for q in (p, p + 1):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p
    raise RuntimeError("no free port pair")


def shm_listing():
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def job_processes(tag):
    """PIDs whose environment carries this job's tag (ranks and anything they started)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if tag.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def base_env(tag, point, victim, n, join_s, control=None):
    env = dict(os.environ)
    env.update(TDIST_FAULT_POINT=point, TDIST_FAULT_RANK=str(victim), TDIST_FAULT_JOIN_S=str(join_s),
               TDIST_FAULT_TAG=tag, WORLD_SIZE=str(n))
    if control is not None:
        env["TDIST_FAULT_CONTROL_S"] = str(control)
    env.pop("TDIST_WAIT_TIMEOUT_MS", None)
    return env


def run_direct(app, n, point, victim, bound, join_s=5, control=None):
    tag = f"tdist-fault-{os.getpid()}-{point}-{victim}-{random.randint(0, 1 << 30)}"
    port = free_port_pair()
    shm0 = shm_listing()
    procs = []
    t0 = time.monotonic()
    for r in range(n):
        env = base_env(tag, point, victim, n, join_s, control)
        env.update(RANK=str(r), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([app], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    outs = [None] * n
    deadline = t0 + bound + 5  # kill stragglers a little after the bound, then fail below
    for r, p in enumerate(procs):
        try:
            outs[r], _ = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            outs[r], _ = p.communicate()
    elapsed = time.monotonic() - t0
    errors = []
    for r, p in enumerate(procs):
        text = outs[r].decode(errors="replace")
        if point == "none":
            if p.returncode != 0:
                errors.append(f"clean run: rank {r} exited {p.returncode}\n{text}")
            continue
        if r == victim:
            if p.returncode != -signal.SIGKILL:
                errors.append(f"victim rank {r} exited {p.returncode}, expected SIGKILL\n{text}")
            continue
        report = [ln for ln in text.splitlines() if ln.startswith("FAULT-REPORT")]
        if p.returncode != REPORTED:
            errors.append(f"survivor rank {r} exited {p.returncode}, expected {REPORTED}\n{text}")
        elif not report or f"rank {victim} lost" not in report[0] or "TDIST_ERR_BOOTSTRAP" not in report[0]:
            errors.append(f"survivor rank {r}: report does not name rank {victim} as lost\n{text}")
    if elapsed > bound:
        errors.append(f"job took {elapsed:.1f} s, bound {bound} s")
    time.sleep(0.1)
    left = job_processes(tag)
    if left:
        errors.append(f"processes left behind: {left}")
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    new_shm = shm_listing() - shm0
    if new_shm:
        errors.append(f"new /dev/shm entries: {sorted(new_shm)}")
    survivor_times = []
    for r in range(n):
        for ln in outs[r].decode(errors="replace").splitlines():
            if ln.startswith("FAULT-REPORT") and "elapsed=" in ln:
                survivor_times.append(float(ln.split("elapsed=")[1].split()[0]))
    return errors, elapsed, max(survivor_times) if survivor_times else float("nan"), outs


def run_launcher(app, tdist_run, n, point, victim, bound):
    tag = f"tdist-fault-run-{os.getpid()}-{point}-{random.randint(0, 1 << 30)}"
    env = base_env(tag, point, victim, n, 5)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, tdist_run, "-n", str(n), "--grace", "2", "--", app], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=bound + 30)
    elapsed = time.monotonic() - t0
    text = p.stdout.decode(errors="replace")
    errors = []
    if p.returncode != 128 + signal.SIGKILL:
        errors.append(f"tdist-run exited {p.returncode}, expected {128 + signal.SIGKILL}\n{text}")
    if f"rank {victim} failed (signal 9)" not in text:
        errors.append(f"tdist-run did not name rank {victim} as the failed rank\n{text}")
    if elapsed > bound:
        errors.append(f"tdist-run took {elapsed:.1f} s, bound {bound} s")
    time.sleep(0.1)
    left = job_processes(tag)
    if left:
        errors.append(f"processes left behind by tdist-run: {left}")
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return errors, elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", required=True)
    ap.add_argument("--tdist-run", required=True)
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--bound", type=float, default=float(os.environ.get("TDIST_FAULT_TIME_BOUND", 30)))
    ap.add_argument("--only", default=None, help="run only this point")
    a = ap.parse_args()
    n = a.n
    # never_join: with the control timeout as long as the join timeout (the defaults: 120 s each),
    # the missing rank must still be the one named, rank 0 (the store's host) included.
    cases = [(pt, v, None) for pt in POINTS for v in (0, n - 1)] + [("never_join", n - 1, None)] + \
        [("never_join", v, "join") for v in (n - 1, 0)]
    if a.only:
        cases = [c for c in cases if c[0] == a.only]
    failures = 0
    # A clean run first: the leak checks themselves must pass when nothing goes wrong.
    errs, el, _, outs = run_direct(a.app, n, "none", -1, a.bound)
    for r, p_out in enumerate(outs):
        if b"LEAKS" in p_out and b"fds= none heap_mappings=0" not in p_out:
            errs.append(f"clean run: rank {r} leaked\n{p_out.decode(errors='replace')}")
    bad_exit = [ln for o in outs for ln in o.decode(errors="replace").splitlines()
                if "FAULT-REPORT" in ln and "TDIST_SUCCESS" not in ln]
    if bad_exit:
        errs.append(f"clean run failed: {bad_exit}")
    print(f"{'none':15s} victim -  {'PASS' if not errs else 'FAIL'}  job {el:5.2f} s", flush=True)
    if errs:
        failures += 1
        print("\n".join(errs))
    for point, victim, control in cases:
        errs, el, detect, _ = run_direct(a.app, n, point, victim, a.bound, control=control)
        label = point + ("=" if control else "")
        print(f"{label:15s} victim {victim}  {'PASS' if not errs else 'FAIL'}  job {el:5.2f} s, "
              f"slowest survivor reported after {detect:.3f} s", flush=True)
        if errs:
            failures += 1
            print("\n".join(errs), flush=True)
    for point in ([a.only] if a.only and a.only in POINTS else ["barrier", "kernel_wait"]):
        errs, el = run_launcher(a.app, a.tdist_run, n, point, 1, a.bound)
        print(f"tdist-run {point:15s} victim 1  {'PASS' if not errs else 'FAIL'}  {el:5.2f} s", flush=True)
        if errs:
            failures += 1
            print("\n".join(errs), flush=True)
    print(f"{failures} failing case(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
