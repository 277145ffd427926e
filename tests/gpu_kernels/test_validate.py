"""The torch-facing layers' argument checks (pure Python: they run without torch or a GPU)."""
import pytest

from tdist_kernels import KernelArgError
from tdist_kernels import _validate as v


def test_reverse_a2a_shape():
    assert v.check_reverse_a2a((12, 3, 5), 4) == (3, 3, 5)
    with pytest.raises(KernelArgError, match=r"dim 0 \(10\) must be S \* world_size.*world_size=4"):
        v.check_reverse_a2a((10, 3, 5), 4)


def test_dispatch_shape():
    assert v.check_dispatch_a2a((7, 8, 5), 4) == (7, 2, 5)
    with pytest.raises(KernelArgError, match=r"dim 1 \(6\) must be H \* world_size"):
        v.check_dispatch_a2a((7, 6, 5), 4)


def test_tensor_checks():
    assert v.check_tensor("op", "a", (2, 3), "torch.bfloat16", True, 2) == "bfloat16"
    with pytest.raises(KernelArgError, match="must be a CUDA tensor"):
        v.check_tensor("op", "a", (2, 3), "torch.float16", False, 2)
    with pytest.raises(KernelArgError, match=r"must have 3 dimensions, got shape \(2, 3\)"):
        v.check_tensor("op", "a", (2, 3), "torch.float16", True, 3)
    with pytest.raises(KernelArgError, match="dtype int8; supported: float16, bfloat16, float32"):
        v.check_tensor("op", "a", (2, 3), "torch.int8", True, 2)
    with pytest.raises(KernelArgError, match="empty dimension"):
        v.check_tensor("op", "a", (0, 3), "torch.float16", True, 2)


def test_matmul_checks():
    with pytest.raises(KernelArgError, match=r"a.shape\[1\] \(4\) must equal b.shape\[0\] \(5\)"):
        v.check_matmul("ag_gemm", (3, 4), (5, 6))
    with pytest.raises(KernelArgError, match=r"M\) must be a multiple of world_size=4"):
        v.check_gemm_rs((10, 4), 4)
    with pytest.raises(KernelArgError, match="dtypes differ: a=float16, b=bfloat16"):
        v.check_same_dtype("ag_gemm", a="torch.float16", b="torch.bfloat16")


def test_variant_and_buffer_num():
    with pytest.raises(KernelArgError, match="variant='udma' is not one of 'pipeline', 'bulk', 'wait_notify'"):
        v.check_variant("reverse_all_to_all", "udma", ("pipeline", "bulk", "wait_notify"))
    with pytest.raises(KernelArgError, match="buffer_num=0 must be an int >= 1"):
        v.check_buffer_num(0)


def test_signal_sizes_follow_the_seed():
    from tdist_kernels import all_to_all as a2a
    # seed 002: region A [nbs, W] + region B [buffer_num, nbd * H]
    assert a2a.wait_notify_signal_slots(4, 100, 3, 130, 16, 64, 2) == 7 * 4 + 2 * 3 * 3
    # pipeline: [buffer_num, W, nbd * H]
    assert a2a.pipeline_signal_slots(4, 100, 3, 130, 64, 2) == 2 * 4 * 3 * 3


def test_resources_key_buffers_plans_and_pe_map_by_team():
    """Resources under a team (what group= sets): cached objects are keyed by the team's handle, the
    world's keys stay as they were, and the kernels' PE map is the team's (start, stride)."""
    from tdist_kernels._resources import Resources

    class Team:  # the fields of a shmem.Team the resources read
        handle, is_world, start, stride, size, rank = 3, False, 1, 2, 2, 0

    r = Resources()
    assert r._keyed(("a", 1)) == ("a", 1) and r.pe_map() == (0, 1) and r.team_key() is None
    prev = r.enter(Team())
    assert r._keyed(("a", 1)) == ("team", 3, ("a", 1)) and r.pe_map() == (1, 2) and r.team_key() == 3
    assert r.local("x", lambda: "team's") == "team's" and ("team", 3, "x") in r._local
    r.leave(prev)
    assert r.local("x", lambda: "world's") == "world's" and r._local["x"] == "world's"
    assert r.enter(None) is None and r.pe_map() == (0, 1)  # None: the world
