"""tdist-run: start N local ranks of a command, torchrun-style.

    tdist-run -n N [--timeout S] [--wait-timeout-ms MS] [--mps auto|on|off] -- command [args...]
    python -m tdist.run -n N -- command [args...]
    tdist-run -n N --nnodes H --node-rank h --master-addr ADDR --master-port P -- command ...   # on host h

Across hosts (CPU ranks: peers on other hosts go through the ROCE engine, UCX), one tdist-run per
host, torchrun's multi-node way: host h starts ranks h * N .. h * N + N - 1; every host gives the same
--nnodes, --master-addr (host 0's address), --master-port and TDIST_STORE_SECRET (required). NNODES,
NODE_RANK, MASTER_ADDR and MASTER_PORT in the environment are the defaults. A host's launcher stops
its ranks when one fails; the other hosts' ranks see them lost and fail naming them.

Or one command for all hosts, mpirun's way:

    tdist-run --hosts h1:2,h2:2 [--rsh 'ssh -o BatchMode=yes {host}'] [--env NAME[=VALUE]] -- command ...
    tdist-run --hostfile FILE ... -- command ...     # FILE: "h1 slots=2" per line, as mpirun's

starts one tdist-run per host through the remote shell (``--rsh``, default ``$TDIST_RSH`` or ssh:
a command prefix that runs one shell command string on ``{host}``, appended as its last argument),
in the same directory, with the same Python and launcher path (a shared or identical install, as
mpirun assumes). Host i runs the next ``n_i`` ranks (counts may differ); host 0 (the first named,
or ``--master-addr``) serves the store. The store secret travels on the remote shell's stdin, never
on a command line; the other ``TDIST_*`` variables and those named by ``--env`` are set on every
host. When one host's launcher fails, the others get ``--host-grace`` seconds (default 30) to
report their lost peers and end, then are stopped; tdist-run exits with the first failure's status.

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (tdist's
store listens on MASTER_PORT + 1, torch's on MASTER_PORT), TDIST_WAIT_TIMEOUT_MS when given, and
TDIST_STORE_SECRET: a fresh random secret per job (unless the environment already has one), so a
local stranger who finds the store's port cannot join the job or fail it.
Each rank is bound to its block of the launcher's CPUs (one CPU each, round robin, when there are
more ranks than CPUs), as mpirun binds; ``--bind none`` leaves the ranks floating.
Output lines are prefixed with "[rank k]". If any rank fails (non-zero exit, signal) the others
are stopped (SIGTERM, then SIGKILL after a grace period) and tdist-run exits with that rank's
status (128 + N for a rank killed by signal N; a rank killed by a signal is named before ranks
that merely exited non-zero in the same instant); on --timeout it stops all ranks and exits 124.
On SIGTERM / SIGHUP / Ctrl-C it stops all ranks; if tdist-run itself is killed, the ranks get
SIGKILL (PR_SET_PDEATHSIG). Processes a rank started in its session are killed at the end. With
several ranks per GPU it runs an MPS daemon for the job (tools/tdist_mps.py) and stops it afterwards.

The installed package runs this module as the ``tdist-run`` command; in a source checkout or a
build tree ``tools/tdist-run`` runs this file. It uses the standard library only (no extension).
"""
import argparse
import os
import random
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.realpath(__file__))


def load_mps():
    """The MPS helper (tools/tdist_mps.py): ``tdist._mps`` in the installed package, else the file
    beside this one (an installed prefix's share/tdist) or in the checkout's tools/; None if absent."""
    if __package__:
        try:
            from . import _mps
            return _mps
        except ImportError:
            pass
    import importlib.util
    for path in (os.path.join(HERE, "_mps.py"), os.path.join(HERE, "tdist_mps.py"),
                 os.path.join(HERE, os.pardir, os.pardir, "tools", "tdist_mps.py")):
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("tdist_mps", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    return None


def port_free(port):
    for fam, addr in ((socket.AF_INET, "127.0.0.1"),):
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            s.bind((addr, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def core_sets(n, cpus=None):
    """The CPUs each of ``n`` local ranks is bound to (``--bind core``): the launcher's allowed CPUs in
    ``n`` contiguous blocks, or, with more ranks than CPUs, one CPU each, round robin. None where the
    system cannot bind."""
    if cpus is None:
        if not hasattr(os, "sched_getaffinity"):
            return None
        cpus = sorted(os.sched_getaffinity(0))
    c = len(cpus)
    if n <= c:
        return [set(cpus[r * c // n:(r + 1) * c // n]) for r in range(n)]
    return [{cpus[r % c]} for r in range(n)]


def pick_ports():
    """A port P such that P (torch's store) and P+1 (tdist's store) are both free."""
    for _ in range(200):
        p = random.randint(20000, 60000)
        if port_free(p) and port_free(p + 1):
            return p
    raise SystemExit("tdist-run: could not find two free adjacent ports")


def pump(stream, prefix, out, lock):
    for raw in iter(stream.readline, b""):
        with lock:
            out.write(prefix + raw.decode(errors="replace"))
            out.flush()
    stream.close()


def count_gpus():
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([d for d in vis.split(",") if d.strip() != ""])
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        return len([ln for ln in r.stdout.splitlines() if ln.startswith("GPU ")])
    except (OSError, subprocess.SubprocessError):
        return 0


def signal_groups(procs, sig, everything=False):
    """Send ``sig`` to the process group of each process still running (``everything``: also of
    those whose leader has exited, so a rank's children)."""
    for q in procs:
        if everything or q.poll() is None:
            try:
                os.killpg(q.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def still_running(procs):
    """How many of ``procs`` are still running (polls every one of them, so each exit status is
    known)."""
    return [q.poll() for q in procs].count(None)


def interrupt_on_termination():
    """SIGTERM and SIGHUP raise KeyboardInterrupt: the same clean-up path as Ctrl-C."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)


def stop_gracefully(procs, grace):
    """SIGTERM, up to ``grace`` seconds for them to exit, then SIGKILL."""
    signal_groups(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while still_running(procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    signal_groups(procs, signal.SIGKILL)


def parse_hosts(spec):
    """[(host, n)] of "h1:2,h2:2" (a host without ":n" runs one rank); ValueError naming the entry."""
    hosts = []
    for item in spec.split(","):
        name, _, n = item.strip().rpartition(":") if ":" in item else (item.strip(), "", "1")
        if not name or not n.isdigit() or int(n) < 1:
            raise ValueError(f"--hosts: {item.strip()!r} is not HOST:N with N >= 1")
        hosts.append((name, int(n)))
    if not hosts:
        raise ValueError("--hosts: no host given")
    return hosts


MAX_HOSTFILE_BYTES = 1 << 20


def parse_hostfile(path):
    """[(host, n)] of a hostfile, Open MPI's format: one host per line, ``HOST``, ``HOST slots=N`` or
    ``HOST:N``; ``#`` starts a comment; a host named twice adds its ranks to its first line (as
    mpirun does). ValueError naming the file, line and entry."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_HOSTFILE_BYTES + 1)
    except OSError as e:
        raise ValueError(f"--hostfile {path}: {e.strerror}") from None
    if len(data) > MAX_HOSTFILE_BYTES:
        raise ValueError(f"--hostfile {path}: larger than {MAX_HOSTFILE_BYTES} bytes")
    hosts = {}
    for no, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        where = f"--hostfile {path} line {no}"
        name, n = line[0], 1
        rest = line[1:]
        if ":" in name:
            if rest:
                raise ValueError(f"{where}: {raw.strip()!r}: HOST:N takes nothing after it")
            name, _, cnt = name.rpartition(":")
            rest = [f"slots={cnt}"]
        for opt in rest:
            key, eq, val = opt.partition("=")
            if key == "slots" and eq and val.isdigit() and int(val) >= 1:
                n = int(val)
            elif key in ("max_slots", "max-slots") and eq and val.isdigit():
                continue  # a cap mpirun reads; the slots given are what runs
            else:
                raise ValueError(f"{where}: {opt!r} is not slots=N with N >= 1")
        if not name:
            raise ValueError(f"{where}: {raw.strip()!r} names no host")
        hosts[name] = hosts.get(name, 0) + n
    if not hosts:
        raise ValueError(f"--hostfile {path}: no host in it")
    return list(hosts.items())


def forwarded_env(names):
    """The variables every host gets: each TDIST_* of this environment but the secret, and
    ``--env`` NAME (this environment's value) or NAME=VALUE."""
    env = {k: v for k, v in os.environ.items() if k.startswith("TDIST_") and k != "TDIST_STORE_SECRET"}
    for item in names:
        k, eq, v = item.partition("=")
        if not k.isidentifier():
            raise ValueError(f"--env: {item!r} is not NAME or NAME=VALUE")
        if k == "TDIST_STORE_SECRET":
            raise ValueError("--env: TDIST_STORE_SECRET is passed on the remote shell's stdin, not by --env")
        if eq:
            env[k] = v
        elif k in os.environ:
            env[k] = os.environ[k]
        else:
            raise ValueError(f"--env: {k} is not set here")
    return env


def host_command(a, cmd, h, hosts, master, port, env):
    """The shell command string host ``h`` runs: read the secret from stdin, then this launcher for
    its ranks."""
    n = hosts[h][1]
    launcher = [sys.executable, os.path.realpath(__file__), "-n", str(n), "--nnodes", str(len(hosts)),
                "--node-rank", str(h), "--first-rank", str(sum(c for _, c in hosts[:h])),
                "--world-size", str(sum(c for _, c in hosts)), "--master-addr", master, "--master-port", str(port),
                "--grace", str(a.grace), "--mps", a.mps, "--bind", a.bind]
    if a.timeout:
        launcher += ["--timeout", str(a.timeout)]
    if a.wait_timeout_ms is not None:
        launcher += ["--wait-timeout-ms", str(a.wait_timeout_ms)]
    assigns = [f"{k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    return ("IFS= read -r TDIST_STORE_SECRET && export TDIST_STORE_SECRET && cd " + shlex.quote(os.getcwd()) +
            " && exec env " + " ".join(assigns + [shlex.join(launcher + ["--"] + list(cmd))]))


def run_hosts(a, cmd, ap):
    """--hosts / --hostfile: one launcher per host through the remote shell; returns the exit status."""
    try:
        hosts = parse_hostfile(a.hostfile) if a.hostfile else parse_hosts(a.hosts)
        env = forwarded_env(a.env)
    except ValueError as e:
        ap.error(str(e))
    rsh = a.rsh or os.environ.get("TDIST_RSH") or "ssh -o BatchMode=yes {host}"
    if "{host}" not in rsh:
        ap.error(f"--rsh must name the host as {{host}}, got {rsh!r}")
    master = a.master_addr or hosts[0][0]
    port = a.master_port or random.randint(20000, 59999)
    secret = os.environ.get("TDIST_STORE_SECRET") or secrets.token_hex(32)
    procs = []
    for h, (name, _) in enumerate(hosts):
        argv = [part.replace("{host}", name) for part in shlex.split(rsh)]
        argv.append(host_command(a, cmd, h, hosts, master, port, env))
        try:
            p = subprocess.Popen(argv, stdin=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            for q in procs:
                os.killpg(q.pid, signal.SIGKILL)
            sys.exit(f"tdist-run: cannot start the remote shell {argv[0]!r} for host {name}: {e}")
        try:
            p.stdin.write((secret + "\n").encode())
            p.stdin.close()
        except OSError:
            pass  # the remote shell exited at once: its status says why
        procs.append(p)

    interrupt_on_termination()
    state = {"status": 0, "failed_at": None}

    def note_failure():
        """The first host whose launcher failed: name it once and keep its status."""
        bad = [(h, q.returncode) for h, q in enumerate(procs) if q.returncode not in (None, 0)]
        if bad and state["failed_at"] is None:
            h, code = bad[0]
            why = f"signal {-code}" if code < 0 else f"code {code}"
            more = " (the remote shell could not run it there)" if code == 255 else ""
            rest = f"; the other hosts get {a.host_grace:g} s to end" if len(procs) > 1 else ""
            print(f"tdist-run: host {h} ({hosts[h][0]}) failed ({why}){more}{rest}", file=sys.stderr)
            state["status"], state["failed_at"] = (128 - code if code < 0 else code), time.monotonic()

    start = time.monotonic()
    backstop = a.timeout + a.host_grace + a.grace if a.timeout else 0
    try:
        while still_running(procs):
            note_failure()
            if state["failed_at"] is not None and time.monotonic() - state["failed_at"] > a.host_grace:
                print("tdist-run: stopping the hosts still running", file=sys.stderr)
                break
            if backstop and time.monotonic() - start > backstop:
                print(f"tdist-run: the hosts did not end within --timeout {a.timeout:g} s; stopping them",
                      file=sys.stderr)
                state["status"] = state["status"] or 124
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        state["status"] = state["status"] or 130
    if still_running(procs):
        stop_gracefully(procs, a.grace)
    for q in procs:
        q.wait()
    note_failure()
    return state["status"]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tdist-run", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--nranks", type=int, default=None, help="number of local ranks")
    ap.add_argument("--timeout", type=float, default=0, help="stop the job after S seconds (0: never)")
    ap.add_argument("--wait-timeout-ms", type=int, default=None,
                    help="bound every device-side wait (sets TDIST_WAIT_TIMEOUT_MS)")
    ap.add_argument("--master-port", type=int, default=0, help="MASTER_PORT (default: a free one)")
    ap.add_argument("--mps", choices=["auto", "on", "off"], default="auto",
                    help="MPS daemon for several ranks per GPU (auto: when ranks > GPUs > 0)")
    ap.add_argument("--grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL")
    ap.add_argument("--bind", choices=["core", "none"], default="core",
                    help="core (default): bind each rank to its block of this launcher's CPUs (one CPU each, round "
                         "robin, with more ranks than CPUs), as mpirun binds; none: ranks float")
    ap.add_argument("--nnodes", type=int, default=int(os.environ.get("NNODES", "1") or 1),
                    help="hosts of the job (default NNODES or 1); each host runs tdist-run with its --node-rank")
    ap.add_argument("--node-rank", type=int, default=int(os.environ.get("NODE_RANK", "0") or 0),
                    help="this host's index, 0 .. nnodes-1 (default NODE_RANK or 0): its ranks are "
                         "node_rank * n .. node_rank * n + n - 1")
    ap.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR") if os.environ.get("NNODES") else None,
                    help="address of host 0 (rank 0 serves the store there); needed with --nnodes > 1")
    ap.add_argument("--first-rank", type=int, default=None,
                    help="global rank of this host's first rank (default node_rank * n; hosts with other counts)")
    ap.add_argument("--world-size", type=int, default=None, help="ranks of the whole job (default nnodes * n)")
    ap.add_argument("--hosts", default=None, help="HOST:N,HOST:N,...: start the job on these hosts (remote shell)")
    ap.add_argument("--hostfile", default=None, help="the hosts of --hosts from a file, Open MPI's format: "
                    "one 'HOST slots=N' (or HOST, HOST:N) per line, # comments")
    ap.add_argument("--rsh", default=None, help="with --hosts: the remote shell prefix, {host} replaced "
                    "(default $TDIST_RSH or 'ssh -o BatchMode=yes {host}')")
    ap.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                    help="with --hosts: also set this variable on every host (repeatable)")
    ap.add_argument("--host-grace", type=float, default=30.0,
                    help="with --hosts: seconds the other hosts get after one fails, before they are stopped")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if not cmd:
        ap.error("no command given (tdist-run -n N -- command ...)")
    if a.hosts is not None and a.hostfile is not None:
        ap.error("give --hosts or --hostfile, not both")
    if a.hosts is not None or a.hostfile is not None:
        if a.nranks is not None or a.nnodes != 1 or a.node_rank != 0 or a.first_rank is not None or \
                a.world_size is not None:
            ap.error("--hosts gives every host's rank count: it does not go with -n, --nnodes, --node-rank, "
                     "--first-rank or --world-size")
        sys.exit(run_hosts(a, cmd, ap))
    if a.nranks is None:
        ap.error("-n N (local ranks) or --hosts HOST:N,... is required")
    if a.nranks < 1:
        ap.error(f"-n must be >= 1 (got {a.nranks})")

    multi = a.nnodes > 1
    if a.nnodes < 1 or not 0 <= a.node_rank < a.nnodes:
        ap.error(f"--node-rank must be in [0, --nnodes) (got {a.node_rank} of {a.nnodes})")
    if multi:
        # every host's launcher must agree on the store: where, which port, which secret
        if not a.master_addr:
            ap.error("--nnodes > 1 needs --master-addr (host 0's address) or MASTER_ADDR with NNODES")
        if not a.master_port:
            a.master_port = int(os.environ.get("MASTER_PORT", "0") or 0)
        if not a.master_port:
            ap.error("--nnodes > 1 needs --master-port (or MASTER_PORT): the same on every host")
        if not os.environ.get("TDIST_STORE_SECRET"):
            ap.error("--nnodes > 1 needs TDIST_STORE_SECRET in the environment, the same on every host "
                     "(e.g. from `python3 -c 'import secrets; print(secrets.token_hex(32))'`), so that only "
                     "the job's ranks can join its store")
    port = a.master_port or pick_ports()
    secret = os.environ.get("TDIST_STORE_SECRET") or secrets.token_hex(32)
    base = a.node_rank * a.nranks if a.first_rank is None else a.first_rank
    world = a.nnodes * a.nranks if a.world_size is None else a.world_size
    if base < 0 or base + a.nranks > world:
        ap.error(f"ranks {base} .. {base + a.nranks - 1} of this host do not fit in a job of {world}")
    master = a.master_addr if multi else "127.0.0.1"
    mps = None
    if a.mps != "off":
        gpus = count_gpus()
        tdist_mps = load_mps()
        want = a.mps == "on" or (gpus > 0 and tdist_mps is not None and tdist_mps.needed(a.nranks, gpus))
        if want:
            if tdist_mps is None:
                sys.exit("tdist-run: --mps on, but the MPS helper (tools/tdist_mps.py) is missing")
            mps = tdist_mps.start(a.nranks, gpus or None)

    lock = threading.Lock()
    procs, pumps = [], []
    # Ranks die with the launcher, even when it is SIGKILLed (PR_SET_PDEATHSIG). preexec_fn runs
    # between fork and exec, so every rank is started before any pump thread exists.
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        parent = os.getpid()

        def die_with_launcher():
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the launcher died before prctl took effect
                os._exit(137)
    except (OSError, AttributeError):
        die_with_launcher = None
    # Bound ranks: with ranks floating, a 4-rank all-to-all on 2 cores took 175-295 us per call from
    # one run to the next, bound 158-166 us (benchmarks/NOTES.md): the scheduler's placement varied.
    cores = core_sets(a.nranks) if a.bind == "core" else None

    def start_rank(r):
        if die_with_launcher is not None:
            die_with_launcher()
        if cores is not None:
            try:
                os.sched_setaffinity(0, cores[r])
            except OSError:
                pass  # a container that refuses the call: the rank floats, as with --bind none
    for r in range(a.nranks):
        env = dict(os.environ)
        env.update(RANK=str(base + r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(a.nranks), MASTER_ADDR=master, MASTER_PORT=str(port),
                   TDIST_STORE_SECRET=secret, NNODES=str(a.nnodes), NODE_RANK=str(a.node_rank))
        if a.wait_timeout_ms is not None:
            env["TDIST_WAIT_TIMEOUT_MS"] = str(a.wait_timeout_ms)
        if mps is not None:
            env.update(tdist_mps.rank_env(mps, r) if hasattr(tdist_mps, "rank_env") else {})
        try:
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True, preexec_fn=lambda r=r: start_rank(r))
        except OSError as e:
            for q in procs:
                os.killpg(q.pid, signal.SIGKILL)
            sys.exit(f"tdist-run: cannot start {cmd[0]!r}: {e}")
        procs.append(p)
    for r, p in enumerate(procs):
        t = threading.Thread(target=pump, args=(p.stdout, f"[rank {base + r}] ", sys.stdout, lock), daemon=True)
        t.start()
        pumps.append(t)

    interrupt_on_termination()

    status = 0
    start = time.monotonic()
    interrupted = False
    try:
        while True:
            running = [q for q in procs if q.poll() is None]
            failed = [(i, q.returncode) for i, q in enumerate(procs) if q.returncode not in (None, 0)]
            if failed:
                # Ranks that report a lost peer exit right after it dies, often within one poll
                # interval: a rank killed by a signal is the likelier cause, so it is named first.
                failed.sort(key=lambda f: (f[1] >= 0, f[0]))
                r, code = failed[0]
                why = f"signal {-code}" if code < 0 else f"code {code}"
                print(f"tdist-run: rank {base + r} failed ({why}); stopping the other ranks", file=sys.stderr)
                status = 128 - code if code < 0 else code
                break
            if not running:
                break
            if a.timeout and time.monotonic() - start > a.timeout:
                print(f"tdist-run: job exceeded --timeout {a.timeout:g} s; stopping all ranks",
                      file=sys.stderr)
                status = 124
                break
            time.sleep(0.02)
    except KeyboardInterrupt:
        interrupted = True
        status = 130
    if status != 0 or interrupted:
        stop_gracefully(procs, a.grace)
    for q in procs:
        q.wait()
    # Nothing a rank started may outlive the job (ranks run in their own sessions).
    signal_groups(procs, signal.SIGKILL, everything=True)
    for t in pumps:
        t.join(timeout=5)
    if mps is not None:
        tdist_mps.stop(mps)
    sys.exit(status)


if __name__ == "__main__":
    main()
