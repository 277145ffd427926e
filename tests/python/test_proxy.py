"""ModuleProxy / dispatch (seed 000 section 7.2) and platform predicates (7.3)."""
import types

import pytest
import triton
import triton.language as tl
from triton.language import core as tlc

from triton_dist import utils
from triton_dist.language.extra._proxy import ModuleProxy, dispatch


def _mod(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def yes():
    return True


def no():
    return False


def test_exactly_one_predicate():
    a, b = _mod("a", x=1), _mod("b", x=2)
    assert ModuleProxy([(no, a), (yes, b)]).x == 2
    with pytest.raises(RuntimeError, match=r"exactly one .* but none of \['no', 'no'\]"):
        ModuleProxy([(no, a), (no, b)])
    with pytest.raises(RuntimeError, match=r"\['yes', 'yes'\] of"):
        ModuleProxy([(yes, a), (yes, b)])


def test_getattr_forwarding_and_missing_name():
    p = ModuleProxy([(yes, _mod("backend_a", f=len))])
    assert p.f is len and p.active_module.__name__ == "backend_a"
    with pytest.raises(AttributeError, match="backend_a .* has no 'nothing'"):
        p.nothing
    with pytest.raises(AttributeError, match="read-only"):
        p.f = 3


def test_dispatch_resolves_by_name_at_call_time(compile_ptx):
    calls = []

    @tlc.builtin
    def impl_v1(x, _semantic=None):
        calls.append("v1")
        return _semantic.add(x, 1, True)

    backend = _mod("backend", bump=impl_v1)
    proxy = ModuleProxy([(yes, backend)])

    @dispatch(proxy)
    def bump(x):
        """stub"""

    @triton.jit
    def k(p):
        tl.store(p, bump(tl.load(p)))

    compile_ptx(k, {"p": "*i32"})
    assert calls == ["v1"]

    @tlc.builtin
    def impl_v2(x, _semantic=None):
        calls.append("v2")
        return _semantic.add(x, 2, True)

    backend.bump = impl_v2  # same name, new function: picked up at the next compilation
    compile_ptx(k, {"p": "*i32"})
    assert calls == ["v1", "v2"]


def test_platform_override(monkeypatch):
    monkeypatch.setenv("TDIST_PLATFORM", "ascend")
    assert utils.is_ascend() and not utils.is_cuda() and not utils.is_cpu()
    assert utils.current_platform() == "ascend"
    monkeypatch.setenv("TDIST_PLATFORM", "tpu")
    with pytest.raises(ValueError, match="'tpu' is not a platform"):
        utils.is_cuda()


def test_probe_uses_smi_tools(monkeypatch):
    monkeypatch.delenv("TDIST_PLATFORM", raising=False)
    monkeypatch.setattr(utils.shutil, "which", lambda t: "/usr/bin/npu-smi" if t == "npu-smi" else None)
    assert utils.is_ascend() and not utils.is_cuda() and not utils.is_hip() and not utils.is_maca()
    assert not utils.is_cpu()
    monkeypatch.setattr(utils.shutil, "which", lambda t: None)
    assert utils.is_cpu() and utils.current_platform() == "cpu"


def test_libshmem_device_selected_cuda():
    from triton_dist.language.extra import libshmem_device
    assert libshmem_device._proxy.active_module.__name__.endswith("cuda.libshmem_device")
    assert libshmem_device.CMP_GE == 3  # module __getattr__ forwards constants


def test_unsupported_platform_names_itself(compile_ptx):
    from triton_dist.language.extra import unsupported
    proxy = ModuleProxy([(yes, unsupported.make("hip", "tdist has no HIP backend"))])

    @dispatch(proxy)
    def fence():
        pass

    @triton.jit
    def k(p):
        fence()

    with pytest.raises(triton.compiler.errors.CompilationError, match="not available on platform 'hip'"):
        compile_ptx(k, {"p": "*i32"})
