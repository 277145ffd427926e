"""libshmem_device constants shared by every backend module (one definition).

Comparison codes and signal ops use tdist's values (include/tdist/abi.h); the ``NVSHMEM_*`` names
are aliases *by meaning*, so Triton-distributed code that names them works.
"""
import triton
import triton.language as tl
from triton.language import core as tlc

from .. import core as dlcore

CMP_EQ = tl.constexpr(0)
CMP_NE = tl.constexpr(1)
CMP_GT = tl.constexpr(2)
CMP_GE = tl.constexpr(3)
CMP_LT = tl.constexpr(4)
CMP_LE = tl.constexpr(5)
NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE, NVSHMEM_CMP_GT = CMP_EQ, CMP_NE, CMP_GT
NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE = CMP_GE, CMP_LT, CMP_LE
SIGNAL_SET = tl.constexpr(dlcore.SIGNAL_SET)
SIGNAL_ADD = tl.constexpr(dlcore.SIGNAL_ADD)
NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD = SIGNAL_SET, SIGNAL_ADD


def sig_op_name(sig_op, what):
    """"set" / "add" for SIGNAL_SET / SIGNAL_ADD (or the names themselves); an error naming the value
    otherwise."""
    v = tlc._unwrap_if_constexpr(sig_op)
    names = {dlcore.SIGNAL_SET: "set", dlcore.SIGNAL_ADD: "add", "set": "set", "add": "add"}
    if v not in names:
        raise dlcore.DistributedError(f"{what}: sig_op={v!r} is not SIGNAL_SET (1) / SIGNAL_ADD (2)")
    return names[v]

# Device-side teams (include/tdist/NVIDIA/device.cuh TDISTX_TEAM_*). The runtime's teams
# (tdist.team_split_strided) exist on the host only; on the device there is the world team, and the
# node and shared teams are the world team (every PE of a tdist job is mapped into every other PE).
# SHARED and NODE have values no host team handle can take (host handles are small indices), so a
# host handle passed to a device call is never mistaken for one of them.
TEAM_INVALID = tl.constexpr(-1)
TEAM_WORLD = tl.constexpr(0)
TEAM_SHARED = tl.constexpr(0x100001)
TEAM_NODE = tl.constexpr(0x100002)
NVSHMEM_TEAM_INVALID, NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED = TEAM_INVALID, TEAM_WORLD, TEAM_SHARED
NVSHMEMX_TEAM_NODE = NVSHMEM_TEAM_NODE = TEAM_NODE
WORLD_TEAMS = (0, 0x100001, 0x100002)


def check_team(team, what):
    """A constant team must be a device-side team (or TEAM_INVALID); a run-time team is checked on
    the device. Returns the constant or None."""
    t = tlc._unwrap_if_constexpr(team)
    if isinstance(t, bool) or not isinstance(t, int):
        return None
    if t not in WORLD_TEAMS and t != -1:
        raise dlcore.DistributedError(
            f"{what}: team {t} has no device-side state in tdist: only NVSHMEM_TEAM_WORLD, NVSHMEMX_TEAM_NODE and "
            "NVSHMEM_TEAM_SHARED (all the world team) exist on the device; translate the PEs of a split team on the "
            "host (tdist.team_translate_pe) and pass world PE numbers")
    return t


@tlc.builtin
def _check_team(team, what, _semantic=None, _builder=None):
    check_team(team, tlc._unwrap_if_constexpr(what))


@triton.jit
def _world_like(team):
    return (team == 0) | (team == 0x100001) | (team == 0x100002)


@triton.jit
def team_my_pe(team):
    """This PE's number in ``team`` (its world PE: every device-side team is the world team); -1 for
    a team without device-side state, as NVSHMEM answers for an invalid team."""
    _check_team(team, "libshmem_device.team_my_pe")
    return tl.where(_world_like(team), dlcore.rank(), -1)


@triton.jit
def team_n_pes(team):
    """The number of PEs in ``team``; -1 for a team without device-side state."""
    _check_team(team, "libshmem_device.team_n_pes")
    return tl.where(_world_like(team), dlcore.num_ranks(), -1)


@triton.jit
def team_translate_pe(src_team, pe_in_src_team, dest_team):
    """The number in ``dest_team`` of PE ``pe_in_src_team`` of ``src_team``: the same number when both
    are device-side teams and it is in range, else -1."""
    _check_team(src_team, "libshmem_device.team_translate_pe")
    _check_team(dest_team, "libshmem_device.team_translate_pe")
    pe = tl.cast(pe_in_src_team, tl.int32)
    ok = _world_like(src_team) & _world_like(dest_team) & (pe >= 0) & (pe < dlcore.num_ranks())
    return tl.where(ok, pe, -1)
