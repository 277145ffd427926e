"""MPS control for tdist-run: several ranks on one GPU need CUDA MPS.

Without MPS the GPU time-slices between processes and a cross-process flag round trip takes
about 4.5 ms; under MPS about 1.8 us (H200, 2026-11-29; benchmarks/NOTES.md, GPU section, has
the raw round trip under MPS measured since: 1.53 us). tdist-run calls
needed() / start() / rank_env() / stop().

start() runs a private daemon (`nvidia-cuda-mps-control -d`) with its own pipe and log
directories, so it neither joins nor disturbs a daemon someone else runs; ranks reach it through
CUDA_MPS_PIPE_DIRECTORY. Each rank is capped with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE so that the
persistent kernels of all ranks sharing a GPU are co-resident (a spin-waiting kernel that
occupies every SM would starve the rank it waits for).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

__all__ = ["needed", "start", "rank_env", "stop", "MpsError"]


class MpsError(RuntimeError):
    pass


def needed(n_ranks, n_gpus):
    """True when some GPU would host more than one rank (ranks > GPUs > 0)."""
    return n_gpus > 0 and n_ranks > n_gpus


def _percentage(n_ranks, n_gpus):
    per_gpu = -(-n_ranks // max(n_gpus, 1))  # ceil
    # Leave no rank below one eighth of the SMs (the driver rounds to whole SMs / TPCs).
    return max(100 // per_gpu, 1)


def _count_gpus():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        return len([ln for ln in r.stdout.splitlines() if ln.startswith("GPU ")])
    except (OSError, subprocess.SubprocessError):
        return 0


def start(n_ranks, n_gpus=None, timeout_s=20.0):
    """Start a private MPS control daemon; returns a handle (a dict) for rank_env() / stop().
    ``n_gpus``: the GPUs the ranks will see (tdist-run passes its count, which honours
    CUDA_VISIBLE_DEVICES); default: every GPU nvidia-smi lists."""
    exe = shutil.which("nvidia-cuda-mps-control")
    if exe is None:
        raise MpsError("nvidia-cuda-mps-control is not on PATH: several ranks per GPU need MPS "
                       "(or run with tdist-run --mps off and accept millisecond round trips)")
    if n_gpus is None:
        n_gpus = _count_gpus() or 1
    root = tempfile.mkdtemp(prefix="tdist-mps-")
    pipe_dir, log_dir = os.path.join(root, "pipe"), os.path.join(root, "log")
    os.makedirs(pipe_dir)
    os.makedirs(log_dir)
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe_dir, CUDA_MPS_LOG_DIRECTORY=log_dir)
    r = subprocess.run([exe, "-d"], env=env, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise MpsError(f"nvidia-cuda-mps-control -d failed ({r.returncode}): {r.stderr.strip()}")
    # The daemon creates its control pipe asynchronously.
    deadline = time.monotonic() + min(timeout_s, 5.0)
    while not os.path.exists(os.path.join(pipe_dir, "control")):
        if time.monotonic() > deadline:
            # Not fatal: the first client would fail loudly if the daemon were not there.
            print(f"tdist_mps: warning: no control pipe in {pipe_dir} yet", file=sys.stderr)
            break
        time.sleep(0.05)
    return {"exe": exe, "root": root, "env": {"CUDA_MPS_PIPE_DIRECTORY": pipe_dir,
                                              "CUDA_MPS_LOG_DIRECTORY": log_dir},
            "percentage": _percentage(n_ranks, n_gpus), "n_ranks": n_ranks, "n_gpus": n_gpus}


def rank_env(handle, rank):
    """Environment a rank needs to run as a client of this daemon with its SM cap."""
    env = dict(handle["env"])
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(handle["percentage"])
    return env


def _quit(exe, env, timeout_s):
    try:
        subprocess.run([exe], input="quit\n", env=env, capture_output=True, text=True,
                       timeout=timeout_s)
    except subprocess.SubprocessError:
        pass


def stop(handle, timeout_s=20.0):
    """Stop the daemon started by start() and remove its directories. Safe to call twice."""
    if not handle or handle.get("stopped"):
        return
    env = dict(os.environ, **handle["env"])
    _quit(handle["exe"], env, timeout_s)
    # quit returns before the server exits; wait for the control pipe to disappear.
    pipe = os.path.join(handle["env"]["CUDA_MPS_PIPE_DIRECTORY"], "control")
    deadline = time.monotonic() + timeout_s
    while os.path.exists(pipe) and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(handle["root"], ignore_errors=True)
    handle["stopped"] = True
