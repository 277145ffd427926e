"""tdist-run: environment, output prefixes, failure propagation, timeouts, no orphans."""
import os
import subprocess
import sys
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
RUN = [sys.executable, str(REPO / "tools" / "tdist-run")]


def run(args, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run(RUN + args, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def test_environment_and_prefixes():
    code = ("import os; print('|'.join(os.environ[k] for k in "
            "('RANK','WORLD_SIZE','LOCAL_RANK','LOCAL_WORLD_SIZE','MASTER_ADDR','MASTER_PORT')))")
    p, _ = run(["-n", "3", "--mps", "off", "--", sys.executable, "-c", code])
    assert p.returncode == 0, p.stderr
    lines = sorted(ln for ln in p.stdout.splitlines() if ln.startswith("[rank "))
    assert len(lines) == 3
    ports = set()
    for r, line in enumerate(lines):
        prefix, body = line.split("] ", 1)
        assert prefix == f"[rank {r}"
        rank, world, lrank, lworld, addr, port = body.split("|")
        assert (rank, world, lrank, lworld, addr) == (str(r), "3", str(r), "3", "127.0.0.1")
        ports.add(port)
    assert len(ports) == 1


def test_store_secret_per_job():
    """Every job gets its own random store secret, the same on every rank, never printed; one set in
    the environment is kept."""
    code = "import os; print(os.environ.get('TDIST_STORE_SECRET', ''))"
    env = {k: v for k, v in os.environ.items() if k != "TDIST_STORE_SECRET"}
    secrets = []
    for _ in range(2):
        p = subprocess.run(RUN + ["-n", "2", "--mps", "off", "--", sys.executable, "-c", code],
                           capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 0, p.stderr
        got = {ln.split("] ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("[rank ")}
        assert len(got) == 1, got
        secret = got.pop()
        assert len(secret) >= 32 and all(c in "0123456789abcdef" for c in secret), secret
        assert secret not in p.stderr
        secrets.append(secret)
    assert secrets[0] != secrets[1]
    p = subprocess.run(RUN + ["-n", "2", "--mps", "off", "--", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=60, env=dict(env, TDIST_STORE_SECRET="mine"))
    assert {ln.split("] ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("[rank ")} == {"mine"}


def test_failing_rank_stops_the_others(tmp_path):
    # rank 2 fails at once; the others would sleep for a minute and record their pids
    script = tmp_path / "job.py"
    script.write_text(
        "import os, sys, time\n"
        f"open(os.path.join({str(tmp_path)!r}, 'pid' + os.environ['RANK']), 'w').write(str(os.getpid()))\n"
        "if os.environ['RANK'] == '2':\n"
        "    time.sleep(0.5); sys.exit(3)\n"
        "time.sleep(60)\n")
    p, secs = run(["-n", "4", "--mps", "off", "--grace", "1", "--", sys.executable, str(script)])
    assert p.returncode == 3
    assert "rank 2 failed (code 3)" in p.stderr
    assert secs < 20
    for r in range(4):
        pid = int((tmp_path / f"pid{r}").read_text())
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", f"rank {r} still running"


def test_killed_rank_reports_signal():
    p, _ = run(["-n", "2", "--mps", "off", "--grace", "1", "--", sys.executable, "-c",
                "import os, signal, time\n"
                "if os.environ['RANK'] == '1': os.kill(os.getpid(), signal.SIGKILL)\n"
                "time.sleep(60)"])
    assert p.returncode == 128 + 9
    assert "rank 1 failed (signal 9)" in p.stderr


def test_timeout_stops_everything():
    p, secs = run(["-n", "2", "--mps", "off", "--timeout", "1", "--grace", "1", "--",
                   sys.executable, "-c", "import time; time.sleep(60)"])
    assert p.returncode == 124
    assert "exceeded --timeout" in p.stderr
    assert secs < 15


def test_bad_usage():
    p, _ = run(["-n", "0", "--", "true"])
    assert p.returncode != 0 and "-n must be >= 1" in p.stderr
    p, _ = run(["-n", "2"])
    assert p.returncode != 0 and "no command given" in p.stderr
    p, _ = run(["-n", "1", "--mps", "off", "--", "/nonexistent/program"])
    assert p.returncode != 0 and "cannot start" in p.stderr


# --hosts through a remote shell that stays on this machine: FAKEHOST names the "host"
FAKE_RSH = "env FAKEHOST={host} sh -c"


def test_hosts_one_command():
    """--hosts a:2,b:1: one launcher per host through --rsh, global ranks in host order, each host's
    local ranks, host 0 as the store's address, one secret for all, --env and TDIST_* forwarded."""
    code = ("import os; print('|'.join(os.environ.get(k, '-') for k in ('FAKEHOST','RANK','WORLD_SIZE','LOCAL_RANK',"
            "'LOCAL_WORLD_SIZE','NODE_RANK','MASTER_ADDR','FOO','TDIST_WAIT_TIMEOUT_MS','TDIST_STORE_SECRET')))")
    env = dict(os.environ, TDIST_WAIT_TIMEOUT_MS="4321")
    env.pop("TDIST_STORE_SECRET", None)
    p = subprocess.run(RUN + ["--hosts", "a:2,b:1", "--rsh", FAKE_RSH, "--env", "FOO=x y", "--mps", "off", "--",
                              sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    rows = sorted(ln.split("] ", 1)[1].split("|") for ln in p.stdout.splitlines() if ln.startswith("[rank "))
    assert [r[:8] for r in rows] == [["a", "0", "3", "0", "2", "0", "a", "x y"],
                                     ["a", "1", "3", "1", "2", "0", "a", "x y"],
                                     ["b", "2", "3", "0", "1", "1", "a", "x y"]], rows
    assert {r[8] for r in rows} == {"4321"}
    secrets_seen = {r[9] for r in rows}
    assert len(secrets_seen) == 1 and len(secrets_seen.pop()) == 64


def test_hosts_failure_and_bad_specs():
    """A failing host ends the job with its status, named, and the others are stopped after
    --host-grace; bad --hosts / --env / --rsh and -n beside --hosts are named errors."""
    p, took = run(["--hosts", "a:1,b:1", "--rsh", FAKE_RSH, "--host-grace", "1", "--mps", "off", "--", "sh", "-c",
                   'test "$RANK" != 1 || exit 5; sleep 60'])
    assert p.returncode == 5 and "host 1 (b) failed (code 5)" in p.stderr, (p.returncode, p.stderr)
    assert took < 20, took
    for args, want in ((["--hosts", "a:0"], "'a:0' is not HOST:N"),
                       (["--hosts", "a:2", "-n", "2"], "does not go with -n"),
                       (["--hosts", "a:1", "--rsh", "ssh"], "must name the host as {host}"),
                       (["--hosts", "a:1", "--env", "1BAD"], "'1BAD' is not NAME"),
                       (["--hosts", "a:1", "--env", "TDIST_STORE_SECRET=x"], "passed on the remote shell's stdin")):
        p, _ = run(args + ["--", "true"])
        assert p.returncode == 2 and want in p.stderr, (args, p.stderr)


def test_hostfile(tmp_path):
    """--hostfile in Open MPI's format: slots=N, HOST:N and bare HOST lines, comments, a host named
    twice adding its ranks; malformed lines are errors naming the file and line."""
    hf = tmp_path / "hosts"
    hf.write_text("# two fake hosts\n\na slots=2  # first\nb\n  a:1\n")
    code = "import os; print(os.environ['FAKEHOST'], os.environ['RANK'], os.environ['LOCAL_WORLD_SIZE'])"
    p, _ = run(["--hostfile", str(hf), "--rsh", FAKE_RSH, "--mps", "off", "--", sys.executable, "-c", code])
    assert p.returncode == 0, p.stderr
    rows = sorted(ln.split("] ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("[rank "))
    assert rows == ["a 0 3", "a 1 3", "a 2 3", "b 3 1"], rows
    for text, want in (("a slots=0\n", "line 1: 'slots=0' is not slots=N"),
                       ("a\nb cpus=2\n", "line 2: 'cpus=2' is not slots=N"),
                       ("a:2 slots=3\n", "line 1: 'a:2 slots=3': HOST:N takes nothing after it"),
                       ("# nothing\n", "no host in it")):
        hf.write_text(text)
        p, _ = run(["--hostfile", str(hf), "--rsh", FAKE_RSH, "--", "true"])
        assert p.returncode == 2 and want in p.stderr, (text, p.stderr)
    p, _ = run(["--hostfile", str(tmp_path / "missing"), "--", "true"])
    assert p.returncode == 2 and "No such file" in p.stderr, p.stderr
    p, _ = run(["--hostfile", str(hf), "--hosts", "a:1", "--", "true"])
    assert p.returncode == 2 and "not both" in p.stderr, p.stderr


def test_bind_cores():
    """--bind core (the default) gives each rank its block of the launcher's CPUs, one CPU each round
    robin when there are more ranks than CPUs; --bind none leaves them as the launcher's."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    from tdist.run import core_sets
    assert core_sets(2, [0, 1, 2, 3, 4]) == [{0, 1}, {2, 3, 4}]
    assert core_sets(4, [3, 5]) == [{3}, {5}, {3}, {5}]
    assert core_sets(1, [0, 1]) == [{0, 1}]
    cpus = sorted(os.sched_getaffinity(0))
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    p, _ = run(["-n", "3", "--mps", "off", "--", sys.executable, "-c", code])
    assert p.returncode == 0, p.stderr
    got = sorted(ln.split("] ", 1) for ln in p.stdout.splitlines() if ln.startswith("[rank "))
    assert [g[1] for g in got] == [str(sorted(s)) for s in core_sets(3, cpus)], got
    p, _ = run(["-n", "2", "--bind", "none", "--mps", "off", "--", sys.executable, "-c", code])
    assert p.returncode == 0 and p.stdout.count(str(cpus)) == 2, p.stdout
