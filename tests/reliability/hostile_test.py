#!/usr/bin/env python3
"""Hostile-neighbour and slow-fault tests: a local stranger attacks a job, or a rank freezes.

Each case starts the ranks of hostile_app (directly, or through tdist-run where the launcher is
part of the case) and asserts that every job either finishes or fails with a clear error within
the bound, and that no process of the job is left behind:

  heap_stranger  strangers (another uid, and this uid but not a peer) connect to every heap
                 descriptor socket they see in /proc/net/unix before the peers do; the job must
                 finish and no stranger may receive a descriptor.
  store_secret   through tdist-run, a stranger sends HELLO and WATCH for every rank to the store
                 (the port is MASTER_PORT + 1) before the ranks join; the job must finish and every
                 stranger frame be refused.
  store_memory   100k control barriers and 10k malloc/free at 4 ranks: rank 0's RSS stays bounded.
  freeze         one rank stops (SIGSTOP) while the others wait for it in a host barrier, a kernel
                 and finalize: they name it within the heartbeat bound and finalize at once (victim
                 the last rank, then rank 0, the store's host).
  mismatch       one rank asks for a different heap size: every rank fails init with
                 COLLECTIVE_MISMATCH naming both sizes (5 jobs, as the failure used to race).
  span_hosts     the second half of the ranks run under another hostname (a UTS namespace,
                 `unshare --uts`; needs root) with the ROCE engine off (TDIST_ROCE_PEERS=none, as
                 in a build without UCX): every rank fails init with NOT_SUPPORTED naming which
                 ranks are on which host, within the bound (never a job with a missing heap base).
                 Jobs across hosts with the engine: tests/multihost. Reported as SKIP where unshare
                 is not permitted.

    hostile_test.py --app build/tests/reliability/tdist_hostile_app --tdist-run build/tools/tdist-run
                    [-n 4] [--bound 30] [--only CASE ...]
"""
import argparse
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_test import free_port_pair, job_processes  # noqa: E402

CASES = ["heap_stranger", "store_secret", "store_memory", "freeze", "mismatch", "span_hosts"]
NOBODY = 65534


def clean_env(tag, mode, **extra):
    env = dict(os.environ)
    for k in ("TDIST_WAIT_TIMEOUT_MS", "TDIST_STORE_SECRET", "TDIST_HEARTBEAT_TIMEOUT_MS"):
        env.pop(k, None)
    env.update(TDIST_HOSTILE_MODE=mode, TDIST_HOSTILE_TAG=tag)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_ranks(app, n, env, argv_of=None):
    """Start ranks 0..n-1 of ``app``; ``argv_of(rank)`` gives a rank's command line (default [app])."""
    port = free_port_pair()
    procs = []
    for r in range(n):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(argv_of(r) if argv_of else [app], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, start_new_session=True))
    return procs


def collect(procs, deadline):
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        outs.append(out.decode(errors="replace"))
    return outs


def leftovers(tag, errors):
    time.sleep(0.1)
    left = job_processes(tag)
    if left:
        errors.append(f"processes left behind: {left}")
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# ---------------------------------------------------------------- heap_stranger

def stranger_child(uid, stop_at, result_fd):
    """Runs in a forked child: connect to every tdist heap socket seen, try to take descriptors."""
    if uid is not None:
        os.setgid(uid)
        os.setuid(uid)
    tried = set()
    while time.monotonic() < stop_at:
        try:
            with open("/proc/net/unix") as f:
                names = {ln.split()[-1][1:] for ln in f.read().splitlines()[1:]
                         if ln.split()[-1].startswith("@tdist-") and "-heap-" in ln}
        except OSError:
            names = set()
        for name in names - tried:
            tried.add(name)
            os.write(result_fd, b"T")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect("\0" + name)
                msg, anc, _, _ = s.recvmsg(4, socket.CMSG_SPACE(4))
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        os.write(result_fd, b"S")
                        os.close(struct.unpack("i", data[:4])[0])
            except OSError:
                pass
            finally:
                s.close()
        time.sleep(0.002)
    os._exit(0)


def case_heap_stranger(a):
    errors, notes = [], []
    tag = f"tdist-hostile-heap-{os.getpid()}-{random.randint(0, 1 << 30)}"
    t0 = time.monotonic()
    kids = []
    for uid in ((NOBODY,) if os.getuid() == 0 else ()) + (None,):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            stranger_child(uid, t0 + a.bound, w)
        os.close(w)
        kids.append((uid, pid, r))
    procs = start_ranks(a.app, a.n, clean_env(tag, "job", TDIST_HOSTILE_HEAP_DELAY_MS=1500,
                                              TDIST_HOSTILE_CONTROL_S=int(a.bound)))
    outs = collect(procs, t0 + a.bound + 5)
    elapsed = time.monotonic() - t0
    for uid, pid, r in kids:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        got = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            got += chunk
        os.close(r)
        tried, stolen = got.count(b"T"), got.count(b"S")
        who = "uid nobody" if uid is not None else "same uid"
        notes.append(f"stranger ({who}) connected to {tried} socket(s), received {stolen} descriptor(s)")
        if stolen:
            errors.append(f"a stranger ({who}) received {stolen} heap descriptor(s)")
        if tried == 0:
            errors.append(f"the stranger ({who}) never saw a heap socket: the case tested nothing")
    for r, (p, out) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            errors.append(f"rank {r} exited {p.returncode}\n{out}")
    if elapsed > a.bound:
        errors.append(f"job took {elapsed:.1f} s, bound {a.bound} s")
    leftovers(tag, errors)
    return errors, elapsed, "; ".join(notes)


# ---------------------------------------------------------------- store_secret

def frame(op, key, value):
    return struct.pack("<IIII", 0x564B4454, op, len(key), len(value)) + key + value


def read_reply(s):
    hdr = b""
    while len(hdr) < 16:
        chunk = s.recv(16 - len(hdr))
        if not chunk:
            return None
        hdr += chunk
    _, op, kl, vl = struct.unpack("<IIII", hdr)
    body = b""
    while len(body) < kl + vl:
        chunk = s.recv(kl + vl - len(body))
        if not chunk:
            break
        body += chunk
    return op, body[kl:].decode(errors="replace")


def case_store_secret(a):
    errors = []
    tag = f"tdist-hostile-store-{os.getpid()}-{random.randint(0, 1 << 30)}"
    master = free_port_pair()
    env = clean_env(tag, "job", TDIST_HOSTILE_INIT_DELAY_MS=1500)
    t0 = time.monotonic()
    job = subprocess.Popen([sys.executable, a.tdist_run, "-n", str(a.n), "--master-port", str(master),
                            "--timeout", str(a.bound), "--", a.app], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    replies, conns = [], []
    # Connect as soon as rank 0 listens, then claim every rank's slot and watchdog.
    while time.monotonic() < t0 + 5 and not conns:
        try:
            s = socket.create_connection(("127.0.0.1", master + 1), timeout=2)
            if s.getsockname() == s.getpeername():  # TCP self-connect before anyone listens
                s.close()
                continue
            conns.append(s)
        except OSError:
            time.sleep(0.005)
    if not conns:
        errors.append("the stranger could not reach the store")
    else:
        frames = [(1, r) for r in range(1, a.n)] + [(8, r) for r in range(a.n)]
        conns += [socket.create_connection(("127.0.0.1", master + 1), timeout=2) for _ in frames[1:]]
        for s, (op, r) in zip(conns, frames):
            try:
                s.sendall(frame(op, str(r).encode(), b""))
                replies.append(((op, r), read_reply(s)))
            except OSError as e:
                replies.append(((op, r), ("error", str(e))))
    out, _ = job.communicate(timeout=a.bound + 30)
    elapsed = time.monotonic() - t0
    for s in conns:
        s.close()
    text = out.decode(errors="replace")
    accepted = [f"{'HELLO' if op == 1 else 'WATCH'} {r}" for (op, r), rep in replies if rep and rep[0] == 100]
    if accepted:
        errors.append(f"the store accepted the stranger's {', '.join(accepted)}")
    if job.returncode != 0:
        errors.append(f"tdist-run exited {job.returncode}\n{text}")
    if elapsed > a.bound:
        errors.append(f"job took {elapsed:.1f} s, bound {a.bound} s")
    leftovers(tag, errors)
    refused = sum(1 for _, rep in replies if rep and rep[0] == 101)
    return errors, elapsed, f"{len(replies)} stranger frame(s), {refused} refused"


# ---------------------------------------------------------------- store_memory

def case_store_memory(a):
    errors = []
    tag = f"tdist-hostile-mem-{os.getpid()}-{random.randint(0, 1 << 30)}"
    env = clean_env(tag, "memory", TDIST_HOSTILE_BARRIERS=a.barriers, TDIST_HOSTILE_MALLOCS=a.mallocs,
                    TDIST_HOSTILE_RSS_BOUND_KB=a.rss_bound_kb)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, a.tdist_run, "-n", str(a.n), "--timeout", str(a.memory_bound), "--",
                        a.app], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=a.memory_bound + 30)
    elapsed = time.monotonic() - t0
    text = p.stdout.decode(errors="replace")
    m = re.search(r"MEMORY rank=0 .*", text)
    if p.returncode != 0:
        errors.append(f"tdist-run exited {p.returncode}\n{text}")
    leftovers(tag, errors)
    return errors, elapsed, m.group(0) if m else "no MEMORY line"


# ---------------------------------------------------------------- freeze

def case_freeze(a):
    errors, notes = [], []
    total = 0.0
    for victim in (a.n - 1, 0):
        tag = f"tdist-hostile-freeze-{os.getpid()}-{victim}-{random.randint(0, 1 << 30)}"
        t0 = time.monotonic()
        procs = start_ranks(a.app, a.n, clean_env(tag, "freeze", TDIST_HOSTILE_VICTIM=victim))
        survivors = [p for r, p in enumerate(procs) if r != victim]
        outs = {}
        deadline = t0 + a.bound + 5
        for r, p in enumerate(procs):
            if r == victim:
                continue
            outs[r] = collect([p], deadline)[0]
        elapsed = time.monotonic() - t0
        total += elapsed
        v = procs[victim]
        stopped = v.poll() is None
        os.killpg(v.pid, signal.SIGKILL)
        v.communicate()
        if not stopped:
            errors.append(f"victim {victim} was not stopped (exited {v.returncode})")
        named = []
        for r, p in zip([r for r in range(a.n) if r != victim], survivors):
            if p.returncode != 0:
                errors.append(f"victim {victim}: survivor rank {r} exited {p.returncode}\n{outs[r]}")
            m = re.search(r"FREEZE rank=\d+ named_after=([\d.]+) finalize=([\d.]+)", outs[r])
            if m:
                named.append((float(m.group(1)), float(m.group(2))))
        if elapsed > a.bound:
            errors.append(f"victim {victim}: job took {elapsed:.1f} s, bound {a.bound} s")
        if named:
            notes.append(f"victim {victim}: named after {max(x for x, _ in named):.2f} s, finalize "
                         f"{max(y for _, y in named):.3f} s")
        leftovers(tag, errors)
    return errors, total, "; ".join(notes)


# ---------------------------------------------------------------- mismatch

def case_mismatch(a):
    errors = []
    total = 0.0
    for attempt in range(5):
        tag = f"tdist-hostile-mm-{os.getpid()}-{attempt}-{random.randint(0, 1 << 30)}"
        t0 = time.monotonic()
        procs = start_ranks(a.app, a.n, clean_env(tag, "mismatch"))
        outs = collect(procs, t0 + a.bound + 5)
        total += time.monotonic() - t0
        for r, (p, out) in enumerate(zip(procs, outs)):
            if p.returncode != 0:
                errors.append(f"job {attempt}: rank {r} exited {p.returncode}\n{out}")
        leftovers(tag, errors)
        if errors:
            break
    return errors, total, f"{attempt + 1} job(s)"


# ---------------------------------------------------------------- span_hosts

OTHER_HOST = "tdist-test-host-b"


def case_span_hosts(a):
    probe = subprocess.run(["unshare", "--uts", "sh", "-c", f"hostname {OTHER_HOST} && hostname"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != OTHER_HOST:
        return [], 0.0, f"SKIP: unshare --uts is not permitted here ({probe.stderr.strip()[:80]})"
    half = a.n // 2
    here = socket.gethostname()
    first = f"ranks 0-{half - 1}" if half > 1 else "rank 0"
    second = f"ranks {half}-{a.n - 1}" if a.n - half > 1 else f"rank {half}"
    expect = f"span 2 hosts ({first} on {here}; {second} on {OTHER_HOST})"
    tag = f"tdist-hostile-sh-{os.getpid()}-{random.randint(0, 1 << 30)}"

    def argv_of(r):
        if r < half:
            return [a.app]
        return ["unshare", "--uts", "sh", "-c", f'hostname {OTHER_HOST} && exec "$0"', a.app]

    t0 = time.monotonic()
    procs = start_ranks(a.app, a.n, clean_env(tag, "hosts", TDIST_HOSTILE_EXPECT=expect, TDIST_ROCE_PEERS="none"),
                        argv_of)
    outs = collect(procs, t0 + a.bound + 5)
    el = time.monotonic() - t0
    errors = [f"rank {r} exited {p.returncode} (want 0: init refused naming '{expect}')\n{out}"
              for r, (p, out) in enumerate(zip(procs, outs)) if p.returncode != 0]
    if el > a.bound:
        errors.append(f"the refusal took {el:.1f} s, over the {a.bound} s bound")
    leftovers(tag, errors)
    return errors, el, f"{a.n} ranks on 2 hosts"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", required=True)
    ap.add_argument("--tdist-run", required=True)
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--bound", type=float, default=float(os.environ.get("TDIST_FAULT_TIME_BOUND", 30)))
    ap.add_argument("--barriers", type=int, default=100000)
    ap.add_argument("--mallocs", type=int, default=10000)
    ap.add_argument("--rss-bound-kb", type=int, default=4096)
    ap.add_argument("--memory-bound", type=float, default=400, help="time bound of store_memory (s)")
    ap.add_argument("--only", nargs="*", default=None, choices=CASES)
    a = ap.parse_args()
    failures = 0
    for case in a.only or CASES:
        errs, el, note = globals()["case_" + case](a)
        verdict = "FAIL" if errs else "SKIP" if note.startswith("SKIP") else "PASS"
        print(f"{case:14s} {verdict}  {el:6.2f} s  {note}", flush=True)
        if errs:
            failures += 1
            print("\n".join(errs), flush=True)
    print(f"{failures} failing case(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
