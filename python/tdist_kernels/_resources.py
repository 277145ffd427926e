"""What the torch-facing layers keep between calls, in one object, and the host protocols every op
module uses (each written once).

``RESOURCES`` (a ``Resources``) owns:

* the symmetric buffers of every op, made once per key (op, shapes, dtype, variant, tiles, grid)
  with ``shmem.aclshmem_create_tensor`` (collective) and freed by ``release()`` (collective);
* local objects kept with them (staging buffers, views of a symmetric buffer, peer views);
* the side streams ("comm" for copies and signals, "gemm" for a second GEMM stream), one per device;
* the placement (``shared_gpu``: whether ranks share a GPU, gathered once, collective) and the SM
  budget of this process (``sm_budget``);
* the team the current op runs over (``scope``, a ``shmem.Team``: the world unless the op was given
  ``group=``). Buffers, views, plans, placement and barriers are per team: an op over a team
  allocates in the team's heap and synchronises its members only (docs/CONTRACT.md section 8).

Host protocols:

* ``signal_round(sig)``: seed 002's protocol around one call: zero the op's signals, barrier over
  the team's PEs, the call, barrier. The first barrier keeps a rank's clear from erasing a faster peer's
  signals of this round; the second keeps the next round's clear (and pushes into a peer's buffers)
  behind every rank's end of this round.
* ``Resources.epoch_buffers``: the buffers of a one-launch epoch protocol (flags that only grow),
  their flag area zeroed once when made, before any peer can signal into it.
* ``side_stream(role, uses)``: work forked onto a side stream after everything before it on the
  current stream, joined back at the end.
* ``contiguous_out(out)``: a contiguous stand-in for a strided ``out``, copied into it at the end.
"""
import contextlib
import os

from ._common import KernelArgError


class Resources:
    """Caches, side streams and placement of the torch-facing layers (one instance: ``RESOURCES``)."""

    def __init__(self):
        self._symmetric = {}  # key -> tuple of symmetric tensors
        self._local = {}  # key -> a local object (staging buffer, view of a symmetric buffer)
        self._views = {}  # id of a cached symmetric tensor -> its views on every PE (shmem.peer_tensor)
        self._streams = {}  # (device, role) -> side stream
        self._sm_info = {}  # device -> sm_info()
        self._placement = {}  # device -> shared_gpu()
        # key -> a prepared eager call (an op's buffers, grid and cached ``_launch.Launch``): the ops'
        # fast path for a repeated call with the same shapes, dtypes, alignment and variant
        self.plans = {}
        self._hooked = False
        self._scope = None  # the shmem.Team of the current op; None: the world
        self._unmapped = None  # PEs without a load/store mapping from this one (None: not asked yet)

    # -- the team of the current op ------------------------------------------------------------

    def scope(self):
        """The ``shmem.Team`` the current op runs over (the world team unless ``group=`` was given)."""
        if self._scope is not None:
            return self._scope
        import shmem as ash
        return ash.team_world()

    def enter(self, team):
        """Make ``team`` (a ``shmem.Team``) the current op's; returns what to give ``leave``."""
        prev = self._scope
        self._scope = None if team is None or team.is_world else team
        return prev

    def leave(self, prev):
        self._scope = prev

    def pe_map(self):
        """``(pe0, pes)`` of the current team, the kernels' last two team arguments: member ``r`` is world
        PE ``pe0 + r * pes`` (``_common.team_pe``)."""
        sc = self._scope
        return (0, 1) if sc is None else (sc.start, sc.stride)

    def team_key(self):
        """What keys a cache entry by team: None for the world (the keys of world ops stay as they
        were), else the team's handle."""
        return None if self._scope is None else self._scope.handle

    def _keyed(self, key):
        """``key`` of a buffer or local object of the current team (the world's keys unchanged)."""
        tk = self.team_key()
        return key if tk is None else ("team", tk, key)

    # -- runtime -------------------------------------------------------------------------------

    def runtime(self, mapped=True):
        """(torch, shmem, tdist), once tdist is initialised on the CUDA backend. ``mapped``: and every PE
        is reachable by load/store from this one (the kernels' ``dl.symm_at`` loads and stores need
        it; a PE reached only through the ROCE engine, NVSHMEM, is refused by name)."""
        import torch
        import shmem as ash
        import tdist
        if not self._hooked:
            tdist.on_finalize(self.forget)
            self._hooked = True
        if not tdist.initialized():
            raise KernelArgError("tdist_kernels.ops: tdist is not initialised; call shmem.init_from_env(...) or "
                                 "shmem.aclshmem_init(attr) with the CUDA backend first")
        if tdist.cuda_device() < 0:
            raise KernelArgError("tdist_kernels.ops: tdist runs on the CPU backend; these ops need the CUDA backend")
        if mapped:
            if self._unmapped is None:
                me = tdist.my_pe()
                self._unmapped = [pe for pe, b in enumerate(tdist.p2p_heap_bases()) if b == 0 and pe != me]
            if self._unmapped:
                pes = self._unmapped
                raise tdist.NotSupported(
                    f"tdist_kernels.ops: PE {tdist.my_pe()} reaches PE(s) {pes[:8]}{' ...' if len(pes) > 8 else ''} "
                    "only through the ROCE engine (NVSHMEM: another host, or TDIST_ROCE_PEERS=all), and these ops' "
                    "kernels load and store through peer mappings; run them among PEs of one host, or write the "
                    "exchange with libshmem_device puts and signals, which the engine carries")
        return torch, ash, tdist

    # -- placement -----------------------------------------------------------------------------

    def sm_info(self):
        """How ``sm_budget`` was derived for this process's current device: ``reported`` (the
        multiprocessor count CUDA reports to this process), ``mps_pct`` (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
        or None) and ``budget``."""
        import torch
        dev = torch.cuda.current_device()
        if dev not in self._sm_info:
            reported = torch.cuda.get_device_properties(dev).multi_processor_count
            pct = os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") or None
            self._sm_info[dev] = {"reported": reported, "mps_pct": pct, "budget": reported}
        return dict(self._sm_info[dev])

    def sm_budget(self):
        """SMs this rank may keep busy: the multiprocessor count this process sees, which under MPS is
        already its share. Measured on the H200 (2026-11-29): an MPS client with
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 is reported 66 of 132 SMs, at 25 % 32 (torch's
        multi_processor_count, cudaDevAttrMultiProcessorCount in tdist-bench, and even the ``%nsmid``
        register read in a kernel: MPS virtualises all three). So the percentage must not be applied
        again (that gave 33 at 2 ranks, 8 at 4 and 1 at 8). Persistent grids are capped further by
        ``_common.resident_grid`` (co-residency with the other ranks)."""
        return self.sm_info()["budget"]

    def shared_gpu(self):
        """Whether some ranks share a GPU (MPS) rather than each having its own: the device UUIDs of all
        ranks, gathered once at the first call (collective, host only)."""
        import torch
        dev = torch.cuda.current_device()
        key = (dev, self.team_key())
        if key not in self._placement:
            import shmem as ash
            self.runtime()
            uid = str(torch.cuda.get_device_properties(dev).uuid).encode()[:48].ljust(48)
            uids = ash.team_allgather(self.scope(), uid)
            self._placement[key] = len(set(uids)) < len(uids)
        return self._placement[key]

    # -- buffers -------------------------------------------------------------------------------

    def symmetric(self, key, *specs):
        """The symmetric tensors of ``key``, one per ``(shape, dtype)`` spec, made at the first call
        with that key (collective over the current team: its members ask for the same keys in the
        same order), in the team's heap when the op runs over a team."""
        full = self._keyed(key)
        if full not in self._symmetric:
            import shmem as ash
            team = self._scope
            self._symmetric[full] = tuple(ash.aclshmem_create_tensor(shape, dtype, team=team)
                                          for shape, dtype in specs)
        return self._symmetric[full]

    def epoch_buffers(self, key, what, *specs):
        """The symmetric tensors of an epoch-protocol op (flags that only grow, no reset per call), made
        at its first call with ``key``: the last spec is the flag area, zeroed once on every rank
        before any peer can signal into it (a barrier follows the clear). Refused inside CUDA-graph
        capture when they do not exist yet (making them synchronises)."""
        import torch
        if self._keyed(key) not in self._symmetric:
            if torch.cuda.is_current_stream_capturing():
                raise KernelArgError(f"{what}: its buffers are created at the first call with these shapes, which "
                                     "cannot happen inside CUDA-graph capture: call it once eagerly first")
            import shmem as ash
            bufs = self.symmetric(key, *specs)
            bufs[-1].zero_()
            torch.cuda.synchronize()
            ash.team_barrier(self._scope)
        return self.symmetric(key, *specs)

    def local(self, key, make):
        """A cached local object, a staging buffer or a view of a symmetric buffer: ``release()``
        drops it without freeing anything through shmem. Keyed by team like the symmetric buffers."""
        full = self._keyed(key)
        if full not in self._local:
            self._local[full] = make()
        return self._local[full]

    def peer_views(self, t, world):
        """``shmem.peer_tensor(t, pe)`` for every member ``r < world`` of the current team (its world PE),
        made once per cached buffer (not per call)."""
        if id(t) not in self._views:
            import shmem as ash
            team = self.scope()
            self._views[id(t)] = [ash.peer_tensor(t, team.pe(r)) for r in range(world)]
        return self._views[id(t)]

    def stream(self, role):
        """One side stream per (device, role): "comm" for copies and signals, "gemm" for the second
        GEMM stream."""
        import torch
        key = (torch.cuda.current_device(), role)
        if key not in self._streams:
            self._streams[key] = torch.cuda.Stream(device=key[0])
        return self._streams[key]

    def release(self):
        """Free every cached symmetric buffer (collective: every PE calls it; a team's buffers are freed
        among its members, in the order they were made) and drop the local ones and the plans."""
        _, ash, _ = self.runtime(mapped=False)
        self.plans.clear()
        self._views.clear()
        self._local.clear()
        for bufs in self._symmetric.values():
            for t in bufs:
                ash.aclshmem_free_tensor(t)
        self._symmetric.clear()

    def forget(self):
        """Drop everything that holds heap addresses or depends on the job (buffers, views, plans,
        placement) without freeing through shmem: ``tdist.finalize`` calls it, since the heap goes
        away with it and a later init is a new job."""
        self.plans.clear()
        self._views.clear()
        self._local.clear()
        self._symmetric.clear()
        self._placement.clear()
        self._scope = None
        self._unmapped = None


RESOURCES = Resources()


@contextlib.contextmanager
def signal_round(sig):
    """Seed 002's host protocol around the body, on the current stream (yielded): zero ``sig``,
    barrier over the current team's PEs, the body, barrier."""
    import torch
    main = torch.cuda.current_stream()
    sig.zero_()
    stream_barrier(main)
    yield main
    stream_barrier(main)


def stream_barrier(stream=None):
    """Barrier over the current op's team (``RESOURCES.scope``) on a CUDA stream."""
    import shmem as ash
    ash.team_barrier_on_stream(RESOURCES._scope, stream)


@contextlib.contextmanager
def side_stream(role, uses=()):
    """The side stream ``role`` (yielded), started after everything enqueued so far on the current
    stream; at the end the current stream waits for it, and ``uses`` (tensors the side stream read
    or wrote) are recorded on it for torch's allocator."""
    import torch
    main = torch.cuda.current_stream()
    side = RESOURCES.stream(role)
    side.wait_stream(main)
    yield side
    main.wait_stream(side)
    for t in uses:
        t.record_stream(side)


@contextlib.contextmanager
def contiguous_out(out):
    """``out`` itself when contiguous, else a contiguous tensor of its shape (yielded) that is copied
    into ``out`` at the end."""
    import torch
    o = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    yield o
    if o is not out:
        out.copy_(o)
