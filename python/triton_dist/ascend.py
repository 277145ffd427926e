"""tdist's one insertion point in triton-ascend: the start of the "ttadapter" stage (seed 000 4.1).

``install()`` wraps triton-ascend's ``ttadapter`` stage. Before its ``triton-adapter-opt`` runs, a
kernel whose TTIR holds tdist marker calls (docs/COMPILE.md section 1) goes through

    triton-adapter-opt --mlir-print-op-generic             (TTIR in MLIR's generic form)
    tdist-opt --tdist-pipeline=ascend-ttir                 (raise into the seven ops, then lower
                                                            them to the aclshmem link-time form)

and triton-ascend's own stage takes the result, so every later stage (TTIR -> Linalg -> bishengir)
is triton-ascend's, unchanged. A kernel without markers is handed over untouched. If tdist-opt is
missing, a kernel with markers fails with an error saying so: it never reaches triton-ascend with
calls nobody implements.

``compile_to_ttadapter`` runs the "ttir" and "ttadapter" stages alone (no CANN needed) and returns
every intermediate text; ``python -m triton_dist.compile`` writes them for a kernel file.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .language._front import MARKER_LIB, SHMEM_LIB

ASCEND_TARGET = ("npu", "Ascend910B1", 0)
_original_add_stages = None  # triton-ascend's own AscendBackend.add_stages, once install() wrapped it


class ToolNotFound(FileNotFoundError):
    pass


def _repo():
    return Path(__file__).resolve().parents[2]


def find_tool(name, env):
    """Path of a tdist tool: ``$<env>``, the installed package's ``bin/``, the newest
    ``<repo>/build*/compiler/bin/<name>``, then PATH."""
    value = os.environ.get(env)
    if value:
        if not Path(value).is_file():
            raise ToolNotFound(f"{env}={value!r} does not name a file")
        return value
    tried = []
    try:
        import tdist
        tried.append(Path(tdist.__file__).resolve().parent / "bin" / name)
    except Exception:  # bindings absent on a compile-only machine
        pass
    tried += sorted(_repo().glob(f"build*/compiler/bin/{name}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in tried:
        if p.is_file():
            return str(p)
    found = shutil.which(name)
    if found:
        return found
    raise ToolNotFound(f"{name} not found: tried ${env} (unset), {', '.join(map(str, tried)) or 'no build'} and PATH; "
                       "build the compiler (scripts/build.sh with MLIR 22 installed) or set " + env)


def _adapter_opt():
    from triton.backends.ascend.compiler import _get_triton_adapter_opt_path
    return _get_triton_adapter_opt_path()


def run_tool(cmd, stdin_text, what):
    """Run one toolchain step; its stderr in the error when it fails."""
    r = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tdist: {what} failed (exit {r.returncode}):\n  {' '.join(map(str, cmd))}\n"
                           f"{r.stderr.strip()}")
    return r.stdout


def has_markers(ttir: str) -> bool:
    return f'"{MARKER_LIB}"' in ttir or f'"{SHMEM_LIB}"' in ttir


@dataclass
class Lowered:
    generic: str  # the TTIR in MLIR's generic form
    hivm: str  # after the HIVM lowering (link-time form): what triton-adapter-opt takes
    dist: str | None = None  # after raise-triton-distributed alone: the seven ops (when asked for)


def lower_ttir(ttir: str, with_dist: bool = False) -> Lowered:
    """The ttadapter-stage insertion: TTIR with markers -> TTIR with aclshmem calls. ``with_dist``
    also prints the raised module (the seven distributed ops), for inspection."""
    generic = run_tool([_adapter_opt(), "-", "--mlir-print-op-generic", "--mlir-print-debuginfo", "-o", "-"], ttir,
                       "triton-adapter-opt (TTIR to generic form)")
    opt = find_tool("tdist-opt", "TDIST_OPT")
    base = [opt, "-", "--allow-unregistered-dialect", "--mlir-print-debuginfo", "-o", "-"]
    hivm = run_tool(base + ["--tdist-pipeline=ascend-ttir", "--mlir-print-op-generic"], generic,
                    "tdist-opt --tdist-pipeline=ascend-ttir")
    dist = None
    if with_dist:
        dist = run_tool(base + ["--raise-triton-distributed"], generic, "tdist-opt --raise-triton-distributed")
    return Lowered(generic, hivm, dist)


class _Text:
    """What triton-ascend's ttadapter stage reads of its input: ``str(mod)``."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def _wrap(stage, record=None, with_dist=False):

    def ttadapter(src, metadata):
        text = str(src)
        if has_markers(text):
            low = lower_ttir(text, with_dist=with_dist)
            if record is not None:
                record.append(low)
            src = _Text(low.hivm)
        return stage(src, metadata)

    return ttadapter


def install():
    """Insert tdist at the start of triton-ascend's ttadapter stage (idempotent)."""
    global _original_add_stages
    if _original_add_stages is not None:
        return
    from triton.backends.ascend import compiler as ac
    _original_add_stages = original = ac.AscendBackend.add_stages

    def add_stages(self, stages, options):
        original(self, stages, options)
        if "ttadapter" in stages:
            stages["ttadapter"] = _wrap(stages["ttadapter"])

    ac.AscendBackend.add_stages = add_stages


def triton_is_ascend():
    try:
        import triton.backends.ascend.compiler  # noqa: F401
        return True
    except ImportError:
        return False


@dataclass
class Compiled:
    name: str
    ttir: str  # stage "ttir" (markers)
    dist: str | None  # the seven ops (None when the kernel has no distributed op)
    hivm: str | None  # handed to triton-adapter-opt
    ttadapter: str  # stage "ttadapter": what bishengir-compile takes


TOOL_CRASH_RETRIES = 2


def _retry_tool_crash(name, stage):
    """``stage()``, run again (at most ``TOOL_CRASH_RETRIES`` times) when one of triton-ascend's tools
    it runs dies by a signal: its ``triton-adapter-opt`` crashed with SIGSEGV once in about 150
    kernel compiles (17 runs of the MoE worker on CPU ranks, 2 cores), on input it compiled in
    every other run. An error exit of the tool (a real compile error) is raised at once; each retry
    says so on stderr."""
    for attempt in range(TOOL_CRASH_RETRIES + 1):
        try:
            return stage()
        except subprocess.CalledProcessError as e:
            if e.returncode >= 0 or attempt == TOOL_CRASH_RETRIES:
                raise
            import sys
            print(f"tdist: compiling {name}: {Path(str(e.cmd[0])).name} died by signal {-e.returncode}; "
                  f"running it again ({attempt + 1} of {TOOL_CRASH_RETRIES})", file=sys.stderr, flush=True)


def compile_to_ttadapter(fn, signature, constants, target=ASCEND_TARGET, options=None, with_dist=True):
    """Run triton-ascend's "ttir" and "ttadapter" stages for one kernel, with tdist inserted
    (``with_dist``: also keep the raised module, the seven distributed ops)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton._C.libtriton import ir

    src = ASTSource(fn, signature=signature, constants=constants)
    backend = make_backend(GPUTarget(*target))
    opts = backend.parse_options(dict(options or {}, **src.parse_options()))
    stages = {}
    (_original_add_stages or type(backend).add_stages)(backend, stages, opts)
    record = []
    ttadapter_stage = _wrap(stages["ttadapter"], record, with_dist)
    metadata = {"hash": src.hash(), "target": target, **opts.__dict__}
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    mod = src.make_ir(opts, backend.get_codegen_implementation(), backend.get_module_map(), context)
    mod = stages["ttir"](mod, metadata)
    ttir = str(mod)
    ttadapter = _retry_tool_crash(fn.__name__, lambda: (record.clear(), ttadapter_stage(mod, metadata))[1])
    low = record[0] if record else None
    return Compiled(fn.__name__, ttir, low.dist if low else None, low.hivm if low else None, ttadapter)


def write_files(compiled: Compiled, out_dir) -> list:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [(f"{compiled.name}.ttir", compiled.ttir), (f"{compiled.name}.ttadapter", compiled.ttadapter)]
    if compiled.dist is not None:
        files += [(f"{compiled.name}.dist.ttir", compiled.dist), (f"{compiled.name}.hivm.ttir", compiled.hivm)]
    written = []
    for name, text in files:
        (out / name).write_text(text)
        written.append(out / name)
    return written


def scratch_dir():
    return tempfile.mkdtemp(prefix="tdist-ascend-")
