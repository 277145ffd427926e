"""tdist_kernels' ops refuse, by name and before any kernel runs, a job where a PE reaches peers only
through the ROCE engine (NVSHMEM): their kernels load and store through peer mappings, and such a peer
has none (an illegal address on the GPU otherwise). No GPU needed: the runtime's answers are stood in
for; the refusal itself is the code under test."""
import pytest

pytest.importorskip("tdist._C", reason="tdist._C not built (cmake -DTDIST_BUILD_PYTHON=ON)")
pytest.importorskip("torch", reason="tdist_kernels needs torch")

import tdist  # noqa: E402
from tdist_kernels._resources import Resources  # noqa: E402


@pytest.fixture
def job(monkeypatch):
    """A CUDA-backend job of 4 PEs as PE 1 sees it; `bases` is its p2p table (0: engine peer)."""
    state = {"bases": [0x1000, 0x2000, 0x3000, 0x4000]}
    monkeypatch.setattr(tdist, "initialized", lambda: True)
    monkeypatch.setattr(tdist, "cuda_device", lambda: 0)
    monkeypatch.setattr(tdist, "my_pe", lambda: 1)
    monkeypatch.setattr(tdist, "p2p_heap_bases", lambda: list(state["bases"]))
    monkeypatch.setattr(tdist, "on_finalize", lambda fn: None)
    return state


def test_every_peer_mapped_runs(job):
    r = Resources()
    torch, ash, td = r.runtime()
    assert td is tdist


def test_engine_peer_is_refused_by_name(job):
    job["bases"] = [0x1000, 0x2000, 0, 0]  # PEs 2 and 3 only through the engine
    r = Resources()
    with pytest.raises(tdist.NotSupported, match=r"PE 1 reaches PE\(s\) \[2, 3\] only through the ROCE engine"):
        r.runtime()
    # freeing the ops' buffers still works in such a job
    r.runtime(mapped=False)


def test_the_answer_is_per_job(job):
    r = Resources()
    r.runtime()
    job["bases"] = [0x1000, 0x2000, 0, 0x4000]
    r.runtime()  # asked once per job: the table does not change within one
    r.forget()  # what tdist.finalize calls: a later init is a new job
    with pytest.raises(tdist.NotSupported, match=r"\[2\]"):
        r.runtime()
