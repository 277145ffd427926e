"""Triton-distributed's names on CPU ranks through the real triton-ascend (compat_cpu_worker.py):
host helpers on numpy, the Ascend swizzle helpers, libshmem_device's team / p / wait / barrier names,
dl.wait over consecutive slots, the cann extension's import path; and names the aclshmem library
has no symbol for fail naming themselves."""
import pytest

from conftest import REPO
from test_cpu_ranks import _run


@pytest.mark.parametrize("n", [2, 4])
def test_compat_worker_on_cpu_ranks(n):
    r = _run(n, REPO / "tests" / "ascend" / "compat_cpu_worker.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(" 0 failure(s)") == n, r.stdout
    assert "FAIL" not in r.stdout, r.stdout


def test_cann_extension_import_path():
    import triton_dist  # noqa: F401  (installs the import path)
    import triton.language.extra.cann.extension as ext
    from triton_dist.language.extra.cann import extension
    assert ext is extension


def test_missing_names_name_themselves():
    from triton_dist.language.extra import libshmem_device as shm
    # the proxy's stub resolves the backend's function when a kernel calling it is compiled
    with pytest.raises(AttributeError, match=r"libaclshmem_device .* has no 'broadcast_block'"):
        shm.broadcast_block(0, None, None, 1, 0, _builder=object())
    from triton_dist.language.extra import language_extra as le
    with pytest.raises(NotImplementedError, match=r"language_extra.tid: not available on platform 'cpu'"):
        le.tid(0, _builder=object())
