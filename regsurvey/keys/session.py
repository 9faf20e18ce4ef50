"""Capture sessions: what a kind body launched while regsurvey surveyed one key.

While a kind body runs, the launches it makes (through the project's own launcher's
``kernel[grid](...)`` or through :func:`launch`) are recorded here instead of running. This module
holds only the recording; :mod:`regsurvey.compile.toolchain` is what hooks Triton to feed it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..model.compile_time import StageTimes
from ..model.fix import Variant
from ..model.targets import Target
from ..model.words import count


@dataclass
class CapturedLaunch:
    """One launch as Triton's binder specialized it: enough to compile exactly that kernel."""

    kernel: str  # the jit function's name
    jit_function: Any  # triton.runtime.JITFunction
    signature: dict[str, Any]
    constexprs: dict[Any, Any]
    attrs: dict[Any, Any]
    options: dict[str, Any]
    specialization_data: str  # Triton's own JSON form of the above (what JITFunction.preload takes)
    config: int | None = None  # autotune config index, when the launch went through @triton.autotune
    where: str = ""  # file:line of the call that launched it (the innermost frame outside Triton and regsurvey)
    # Where ``where`` lies outside the surveyed project (an installed library's launcher): file:line of the
    # innermost frame inside it, the kind body's (or the project's) call into the library; else "".
    project_where: str = ""
    # A warmup (``fn.warmup(...)``) is compiled by Triton itself while the body runs, since the body
    # goes on to use the compiled kernel: that kernel (Triton's CompiledKernel), its compile time and the
    # seconds of each stage of that compile (None: not measured, Triton's own cache had it).
    compiled: Any = None
    compile_s: float = 0.0
    stage_s: StageTimes | None = None
    ptxas_log: str | None = None  # that compile's ptxas -v log, where regsurvey made it (a cubin's spills)
    name: str | None = None  # what the kind body called the launch (``rs.name``)
    # ``regsurvey fix``: the launcher's config file entry a variant's launch was passed, with the variant
    # written into it (``keys.config_source.ConfigSource.to_dict``); None elsewhere.
    config_source: dict[str, Any] | None = None
    # Triton's cache hash of the launch on its target, once computed (compile.toolchain.triton_cache_hash): a
    # launch handed to another worker carries it, checked there against the launch it made again.
    cache_hash: str | None = None


@dataclass
class CaptureSession:
    """The launches captured for one key on one target."""

    target: Target
    launches: list[CapturedLaunch] = field(default_factory=list)
    pinned_configs: dict[int, int] = field(default_factory=dict)  # id(autotuner) -> config index
    warmup_started: float | None = None  # perf_counter() when Triton began compiling a warmup
    compiled_here: list[tuple[dict, Any]] = field(default_factory=list)  # (kernel cache, key) of warmups
    config_index: int | None = None  # the autotune config whose launch is being made, if any
    tuner: Any = None  # the autotuner whose own ``run`` (a subclass's) is running, if any
    benched: list[CapturedLaunch] = field(default_factory=list)  # launches that tuner's benchmarking made
    launch_name: str | None = None  # the name ``rs.name`` gave the launches that follow
    queued_names: QueuedNames | None = None  # the names ``rs.names`` gave the next launches, one each
    # The surveyed project's directory (absolute, as given and resolved): launch sites inside it are its own.
    project_dirs: tuple[str, ...] = ()
    # Autotuner runs in progress: the launches one makes (a launch per config) are one launch of the kind
    # body, named once: the name the first took (``one_launch_named``: it has been taken).
    one_launch_depth: int = 0
    one_launch_name: str | None = None
    one_launch_named: bool = False
    # ``regsurvey fix``: the launches of one kernel made with options and constexprs changed (the hooks in
    # compile.toolchain apply it where the kind body's call reaches Triton).
    variant: Variant | None = None
    variant_reached: int = 0  # the launches the variant changed (none: it matched no launch of the key)
    # A kernel with a ``repr`` of its own is compiled under a name its launch's specialization spells
    # (triton_kernels' ``_matmul_NNT_..._32x256x256x1``), so its calls are first made unchanged (a probe,
    # ``variant_probe``) and made again, changed, only where one was the base build's launch
    # (``variant_jit``: the JITFunction changed in that second call).
    variant_probe: bool = False
    variant_jit: Any = None
    # The JSON objects the launcher read while a variant is surveyed (keys.config_source), and the config
    # source found for the launch being made, which the launch hook records with it.
    config_reads: list[Any] = field(default_factory=list)
    pending_source: dict[str, Any] | None = None

    def naming_state(self) -> tuple[int | None, str | None, bool]:
        """What naming the next launches depends on (to make a call again as if it had not been made)."""
        taken = self.queued_names.taken if self.queued_names is not None else None
        return taken, self.one_launch_name, self.one_launch_named

    def restore_naming(self, state: tuple[int | None, str | None, bool]) -> None:
        """Naming as :meth:`naming_state` found it."""
        taken, self.one_launch_name, self.one_launch_named = state
        if self.queued_names is not None and taken is not None:
            self.queued_names.taken = taken

    def name_launch(self, kernel: str, jit_function: Any) -> str | None:
        """The name of the launch of ``kernel`` (its JITFunction ``jit_function``) being recorded: the next
        of ``rs.names``' names, where they name it; else ``rs.name``'s. The configs of one autotuned launch
        share the name the first took."""
        if self.one_launch_depth and self.one_launch_named:
            return self.one_launch_name
        queued = self.queued_names.take(kernel, jit_function) if self.queued_names is not None else None
        name = queued if queued is not None else self.launch_name
        if self.one_launch_depth:
            self.one_launch_name, self.one_launch_named = name, True
        return name

    @contextlib.contextmanager
    def one_launch(self) -> Iterator[None]:
        """The launches made inside (an autotuner's, one per config) are one launch of the kind body: they
        take one name (:meth:`name_launch`)."""
        self.one_launch_depth += 1
        try:
            yield
        finally:
            self.one_launch_depth -= 1
            if self.one_launch_depth == 0:
                self.one_launch_name, self.one_launch_named = None, False

    def unused_names(self) -> str | None:
        """What ``rs.names`` named that no launch took, in words (None: every name was taken)."""
        return self.queued_names.unused() if self.queued_names is not None else None


@dataclass
class QueuedNames:
    """``rs.names("gate_up", "down", kernel=...)``: names for the next launches (of ``kernel`` only, when
    given), one each, in launch order."""

    names: list[str]
    kernel: Any = None  # None: any kernel; a str: the kernel's Python name; else the kernel object itself
    taken: int = 0

    def take(self, kernel: str, jit_function: Any) -> str | None:
        """The next name, if one is left and the launch of ``kernel`` (``jit_function``) is one it names."""
        if self.taken >= len(self.names) or not self._names(kernel, jit_function):
            return None
        self.taken += 1
        return self.names[self.taken - 1]

    def _names(self, kernel: str, jit_function: Any) -> bool:
        if self.kernel is None:
            return True
        if isinstance(self.kernel, str):
            return kernel == self.kernel
        # An @triton.autotune or @triton.heuristics object wraps the JITFunction (``fn``, maybe over others).
        wrapper, depth = self.kernel, 0
        while wrapper is not None and depth < 16:
            if wrapper is jit_function:
                return True
            wrapper, depth = getattr(wrapper, "fn", None), depth + 1
        return False

    def unused(self) -> str | None:
        """The names no launch took, in words; None when every one was taken."""
        left = self.names[self.taken:]
        if not left:
            return None
        of = f" of {self.kernel if isinstance(self.kernel, str) else _kernel_name(self.kernel)}" if self.kernel else ""
        return (f"rs.names: {', '.join(map(repr, left))} named no launch (the kind body made "
                f"{count(self.taken, 'launch')}{of} after naming {len(self.names)})")


def _kernel_name(kernel: Any) -> str:
    # The Python name under @triton.autotune / @triton.heuristics wrappers (each keeps the next in ``fn``).
    for _ in range(16):
        if getattr(kernel, "fn", None) is None:
            break
        kernel = kernel.fn
    return str(getattr(kernel, "__name__", kernel))


_session: contextvars.ContextVar[CaptureSession | None] = contextvars.ContextVar(
    "regsurvey_capture_session", default=None)


def current_session() -> CaptureSession | None:
    """The capture session in progress, if any."""
    return _session.get()


def current_target_or_none() -> Target | None:
    """The target being surveyed, or None outside a survey."""
    session = _session.get()
    return session.target if session is not None else None


def target() -> Target:
    """The target the current key is surveyed for (``rs.target()``), e.g. to pick tiles per arch."""
    session = _session.get()
    if session is None:
        raise RuntimeError("rs.target() is only available while regsurvey surveys a key")
    return session.target


def begin(session: CaptureSession) -> contextvars.Token:
    """Make ``session`` the one that receives launches."""
    return _session.set(session)


def end(token: contextvars.Token) -> None:
    """Restore the session that was active before :func:`begin`."""
    _session.reset(token)


def launch(kernel: Any, *args: Any, grid: Any, **meta: Any) -> Any:
    """Launch ``kernel[grid](*args, **meta)``: under a survey, the launch is captured, not run.

    ``kernel`` is a ``@triton.jit`` function, possibly wrapped by ``@triton.autotune`` or
    ``@triton.heuristics``; it goes through the same ``run`` path a real launch takes.
    """
    return kernel[grid](*args, **meta)


class SkipKey(Exception):
    """Raised by :func:`skip`: the kind body has no kernel to build for this key."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def skip(reason: str) -> None:
    """Skip the key being surveyed: the combination of axis values does not exist (``rs.skip``).

    The key becomes a ``skipped`` row with the reason, not an error; ``check`` ignores it. Call it
    before any launch (launches already made are dropped with the key). Outside a survey (a kind body
    run on a GPU) it raises :class:`SkipKey` all the same, for the caller to pass over the key.
    """
    raise SkipKey(str(reason))


def name(launch_name: str | None) -> None:
    """Name the launches the kind body makes next (``rs.name("up")``), until it names others (or calls
    ``rs.name(None)``): reports tell launches of one key apart by it (the up and the down GEMM of an MoE)
    instead of by kernel and launch index. Names ``rs.names`` gave and no launch took yet are dropped.
    Outside a survey (a kind body run on a GPU) it does nothing.
    """
    session = _session.get()
    if session is not None:
        session.launch_name = None if launch_name is None else str(launch_name)
        session.queued_names = None


def names(*launch_names: str, kernel: Any = None) -> None:
    """Name the next launches one by one, in launch order (``rs.names("gate_up", "down")``): for a library
    call that launches one kernel several times (vLLM's ``fused_experts``: the gate/up GEMM, then the down
    GEMM), without wrapping the library's own functions. ``kernel`` (the ``@triton.jit`` function, or its
    ``@triton.autotune`` / ``@triton.heuristics`` wrapper, or its name) names only that kernel's launches:
    launches of others in between keep their names. An autotuned launch is one launch (all its configs
    take the name). Launches past the names take ``rs.name``'s name, if any; names no launch took by the
    end of the body are said in the key's messages. A later ``rs.names`` or ``rs.name`` replaces the names
    not taken yet. Outside a survey (a kind body run on a GPU) it does nothing.
    """
    session = _session.get()
    if session is not None:
        session.queued_names = QueuedNames([str(n) for n in launch_names], kernel)


def pin_config(kernel: Any, index: int) -> None:
    """Survey only autotune config ``index`` of ``kernel`` (an ``@triton.autotune`` wrapper).

    Without a pin, every config of an autotuned kernel becomes its own row, as each may be the one
    the autotuner picks on the GPU. The GPU fidelity check (``tests/gpu/fidelity.py``) honours a pin
    too: when it runs the kind body on a GPU, the pinned autotuner tunes over config ``index`` alone.
    """
    session = _session.get()
    if session is None:
        raise RuntimeError("rs.pin_config() is only available while regsurvey surveys a key")
    if not hasattr(kernel, "configs"):
        raise TypeError(f"{kernel!r} is not an @triton.autotune kernel")
    if not 0 <= index < len(kernel.configs):
        raise IndexError(f"config {index} out of range: {kernel!r} has {count(len(kernel.configs), 'config')}")
    session.pinned_configs[id(kernel)] = index
