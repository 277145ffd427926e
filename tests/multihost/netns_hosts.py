"""Several test hosts on one machine: a network namespace per host, joined by a bridge in a switch
namespace of its own (nothing is added to the machine's own network), and a UTS namespace per rank
with the host's name, so tdist sees one host per namespace. Every address is inside
10.77.<job>.0/24, on those namespaces only.

    with Hosts(3) as hosts:            # needs root (ip netns, unshare)
        procs = hosts.launch([0, 0, 1, 2], cmd, env)   # host of each rank
"""
import os
import shutil
import subprocess
import secrets
import socket


def why_not():
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (ip netns, unshare --uts)"
    for tool in ("ip", "unshare"):
        if not shutil.which(tool):
            return f"{tool} not found (iproute2 / util-linux)"
    name = f"tdist-probe-{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return f"ip netns add is not permitted here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    r = subprocess.run(["unshare", "--uts", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"unshare --uts is not permitted here: {r.stderr.strip()}"
    return None


def _ip(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")


class Hosts:
    def __init__(self, n):
        self.n = n
        self.tag = f"{os.getpid() % 10000}{secrets.token_hex(2)}"
        self.sub = 1 + os.getpid() % 250  # 10.77.<sub>.0/24
        self.switch = f"tdsw{self.tag}"
        self.names = [f"tdh{self.tag}-{h}" for h in range(n)]
        self.made = []

    def addr(self, h):
        return f"10.77.{self.sub}.{h + 1}"

    def __enter__(self):
        try:
            subprocess.run(["ip", "netns", "add", self.switch], check=True, capture_output=True)
            self.made.append(self.switch)
            _ip("link", "add", "br0", "type", "bridge", ns=self.switch)
            _ip("link", "set", "br0", "up", ns=self.switch)
            for h, ns in enumerate(self.names):
                subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
                self.made.append(ns)
                a, b = f"tv{self.tag}{h}a", f"tv{self.tag}{h}b"
                _ip("link", "add", a, "type", "veth", "peer", "name", b, ns=self.switch)
                _ip("link", "set", b, "netns", ns, ns=self.switch)
                _ip("link", "set", a, "master", "br0", ns=self.switch)
                _ip("link", "set", a, "up", ns=self.switch)
                _ip("link", "set", "lo", "up", ns=ns)
                _ip("link", "set", b, "name", "eth0", ns=ns)
                _ip("addr", "add", f"{self.addr(h)}/24", "dev", "eth0", ns=ns)
                _ip("link", "set", "eth0", "up", ns=ns)
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.made = []

    def launch(self, host_of_rank, cmd, env=None, master_port=None):
        """Start rank r of the job on host host_of_rank[r] (torchrun's environment, tdist's store
        on host 0 at MASTER_PORT + 1, a fresh store secret). Returns the Popen objects, output
        merged, in rank order."""
        world = len(host_of_rank)
        port = master_port or _free_port()
        secret = secrets.token_hex(32)
        procs = []
        for r, h in enumerate(host_of_rank):
            local = [q for q in range(world) if host_of_rank[q] == h]
            e = dict(os.environ if env is None else env)
            e.update(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(local.index(r)),
                     LOCAL_WORLD_SIZE=str(len(local)), MASTER_ADDR=self.addr(host_of_rank[0]),
                     MASTER_PORT=str(port), TDIST_STORE_SECRET=secret)
            host = f"tdist-host-{h}"
            wrapped = ["ip", "netns", "exec", self.names[h], "unshare", "--uts", "sh", "-c",
                       f'hostname {host} && exec "$@"', "sh"] + list(cmd)
            procs.append(subprocess.Popen(wrapped, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
        return procs


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p if p < 60000 else 29400


def wait_all(procs, timeout):
    """(return codes, outputs) of every rank; ranks still running at the deadline are killed (-9)."""
    import time
    deadline = time.monotonic() + timeout
    outs, rcs = [], []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outs.append(out)
        rcs.append(p.returncode)
    return rcs, outs
