"""The one module that talks to Triton's internals.

It makes a kind body's launches compile exactly what a real launch compiles, with no GPU:

* a stub driver answers ``get_current_target()`` (and the device questions launchers ask) for the
  surveyed target, so ``JITFunction.run`` builds its binder and options for that target;
* ``knobs.runtime.jit_cache_hook`` receives Triton's own specialization (signature, constexprs,
  attrs, options) right before ``JITFunction.run`` would compile, records it and tells Triton to
  skip compiling and launching;
* ``@triton.autotune`` is resolved the way its ``run`` resolves it (pruned configs), every config
  becoming a launch unless the key pins one; ``@triton.heuristics`` runs unchanged;
* :func:`compile_launch` compiles a captured launch with ``triton.compile`` on an ``ASTSource``
  built from those same objects, the call ``JITFunction._do_compile`` makes.

Private APIs move between Triton versions: keep every such use here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import capture as capture_mod
from .capture import CapturedLaunch, CaptureSession
from .targets import TARGETS, Target

# Each target gets its own fake device index: JITFunction caches binder, backend and target per
# device, so a per-target index keeps one worker from reusing gfx950's binder for sm90.
_DEVICE_INDEX = {name: i for i, name in enumerate(TARGETS)}


def gpu_target(target: Target) -> Any:
    """Triton's GPUTarget for ``target``."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget(target.backend, target.arch, target.warp_size)


def _device_properties(target: Target) -> dict[str, Any]:
    # The keys Triton's own drivers return from utils.get_device_properties.
    return {
        "max_shared_mem": target.shared_bytes_per_cu if target.is_nvidia else target.shared_bytes_per_cu,
        "max_num_regs": target.regs_per_lane if target.is_nvidia else target.regs_per_lane * target.warp_size,
        "multiprocessor_count": target.compute_units,
        "warpSize": target.warp_size,
        "sm_clock_rate": 0,
        "mem_clock_rate": 0,
        "mem_bus_width": 0,
        "arch": str(target.arch) if target.is_amd else f"sm_{target.arch}",
    }


class StubDriver:
    """A Triton driver for a GPU that is not there: answers device questions for one target."""

    def __init__(self, target: Target):
        self.target = target
        props = _device_properties(target)
        self.utils = types.SimpleNamespace(get_device_properties=lambda device=None: dict(props))

    @staticmethod
    def is_active() -> bool:
        """Never picked by Triton's own driver discovery."""
        return False

    def get_current_target(self) -> Any:
        """The surveyed target."""
        return gpu_target(self.target)

    def get_current_device(self) -> int:
        """A device index unique to the target (see _DEVICE_INDEX)."""
        return _DEVICE_INDEX[self.target.name]

    def get_current_stream(self, device: int | None = None) -> int:
        """No stream: nothing is launched."""
        return 0

    def get_active_torch_device(self) -> Any:
        """Launchers allocate on the 'meta' device while surveyed."""
        import torch

        return torch.device("meta")

    def get_device_interface(self) -> Any:
        """torch.cuda, patched by :func:`capturing` to describe the target."""
        import torch

        return torch.cuda

    def get_benchmarker(self) -> Any:
        """A benchmarker that calls the kernel once (so its launch is seen) and reports 0 ms.

        With no GPU there is nothing to time: an autotuner then keeps its first config, and every
        config it tried has passed through JITFunction.run.
        """

        def bench(fn: Any, quantiles: Any = None, **kwargs: Any) -> Any:
            fn()
            return [0.0] * len(quantiles) if quantiles else 0.0

        return bench


def _device_props_namespace(target: Target) -> Any:
    major, minor = (target.arch // 10, target.arch % 10) if isinstance(target.arch, int) else (9, 4)
    return types.SimpleNamespace(
        name=target.device_name,
        multi_processor_count=target.compute_units,
        gcnArchName=f"{target.arch}:sramecc+:xnack-" if target.is_amd else "",
        major=major, minor=minor,
        total_memory=(288 if target.name == "gfx950" else 192 if target.is_amd else 141) * 2**30,
        warp_size=target.warp_size,
        regs_per_multiprocessor=target.regs_per_lane if target.is_nvidia else 512 * 64 * 4,
        max_threads_per_multi_processor=2048,
        shared_memory_per_block_optin=_device_properties(target)["max_shared_mem"],
        shared_memory_per_multiprocessor=target.shared_bytes_per_cu,
        L2_cache_size=(4 if target.is_amd else 60) * 2**20,
        is_integrated=False,
    )


@contextlib.contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    missing = object()
    old = getattr(obj, name, missing)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if old is missing:
            delattr(obj, name)
        else:
            setattr(obj, name, old)


def _launch_site() -> str:
    """file:line of the innermost caller outside Triton and regsurvey: where the launch was made."""
    here = os.path.dirname(os.path.abspath(__file__))
    import triton

    triton_dir = os.path.dirname(os.path.abspath(triton.__file__))
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if not path.startswith((here, triton_dir)):
            return f"{frame.filename}:{frame.lineno}"
    return ""


def _tuples(value: Any) -> Any:
    # JSON turned the options' tuples into lists; Triton's options hash sees the difference.
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _record_launch(*, key: Any, repr: str, fn: Any, compile: dict, is_manual_warmup: bool,
                   already_compiled: bool) -> bool:
    """jit_cache_hook: record the specialization and tell Triton not to compile or launch."""
    session = capture_mod.current_session()
    if session is None:
        return False  # not surveying: let Triton carry on
    data = json.loads(compile["specialization_data"])
    options = {k: _tuples(v) for k, v in data["options"].items()}
    session.launches.append(CapturedLaunch(
        kernel=fn.name.split(".")[-1],
        jit_function=fn.jit_function,
        signature=dict(compile["signature"]),
        constexprs=dict(compile["constants"]),
        attrs=dict(compile["configs"][0]),
        options=options,
        specialization_data=compile["specialization_data"],
        config=getattr(session, "_config_index", None),
        where=_launch_site(),
    ))
    return True


def _surveyed_autotune_run(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Autotuner.run under a survey: each config a real launch could pick becomes a launch."""
    session = capture_mod.current_session()
    if session is None:
        return _original_autotune_run(self, *args, **kwargs)
    self.nargs = dict(zip(self.arg_names, args))
    pinned = session.pinned_configs.get(id(self))
    if pinned is not None:
        candidates = [self.configs[pinned]]
    elif len(self.configs) > 1:
        candidates = list(self.prune_configs(kwargs))  # an early-prune hook may yield them
    else:
        candidates = list(self.configs)
    for position, config in enumerate(candidates):
        session._config_index = _config_index(self.configs, config, position)  # type: ignore[attr-defined]
        try:
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            self.fn.run(*args, **kwargs, **config.all_kwargs())
        finally:
            session._config_index = None  # type: ignore[attr-defined]
    # As after a run that benchmarked nothing: wrappers such as FlagGems' LibEntry read the pick.
    self.best_config = candidates[0] if candidates else None
    self.nargs = None
    return None


def _config_index(configs: list[Any], config: Any, position: int) -> int:
    """The row's ``config`` index: the config's place in the autotuner's list, or, for a config that an
    early-prune hook made anew (gemlite rewrites block sizes per shape), its place among the pruned."""
    try:
        return configs.index(config)  # Config compares by its kwargs, options and pre-hook
    except ValueError:
        return position


class _DeviceGuard:
    """``torch.cuda.device(x.device)`` under a survey: launchers select the tensor's device before they
    launch (FlagGems does for every op), and a meta tensor has no CUDA device to select; on the GPU the
    guard changes nothing that a launch compiles."""

    def __init__(self, device: Any = None):
        self.idx = 0

    def __enter__(self) -> _DeviceGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_original_autotune_run: Any = None


@contextlib.contextmanager
def capturing(session: CaptureSession) -> Iterator[CaptureSession]:
    """Run a kind body inside this: its launches land in ``session`` and nothing runs on a GPU.

    The device looks like ``session.target`` to Triton (active driver) and to the launcher
    (``torch.cuda`` device queries, ``torch.version.hip``/``cuda``).
    """
    global _original_autotune_run
    import torch
    import triton
    from triton import knobs
    from triton.runtime import autotuner
    from triton.runtime.driver import driver

    target = session.target
    props = _device_props_namespace(target)
    if _original_autotune_run is None:
        _original_autotune_run = autotuner.Autotuner.run
    token = capture_mod.begin(session)
    previous_driver = driver._active
    driver.set_active(StubDriver(target))
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_patched(knobs.runtime, "jit_cache_hook", _record_launch))
            stack.enter_context(_patched(autotuner.Autotuner, "run", _surveyed_autotune_run))
            stack.enter_context(_patched(torch.version, "hip", target.torch_hip_version))
            stack.enter_context(_patched(torch.version, "cuda", None if target.is_amd else "13.0"))
            cuda = torch.cuda
            for name, value in {
                "is_available": lambda: True,
                "device_count": lambda: 1,
                "current_device": lambda: 0,
                "get_device_properties": lambda device=None: props,
                "get_device_name": lambda device=None: target.device_name,
                "get_device_capability": lambda device=None: (props.major, props.minor),
                "device": _DeviceGuard,
            }.items():
                stack.enter_context(_patched(cuda, name, value))
            del triton  # imported so the patches above land on an initialised package
            yield session
    finally:
        driver._active = previous_driver
        capture_mod.end(token)


@dataclass(frozen=True)
class CompiledObject:
    """What one compile produced: the binary, the IR texts and Triton's metadata."""

    kernel_name: str  # the symbol name in the object
    triton_hash: str  # Triton's cache key hash: equal hash = the same kernel a launch compiles
    binary: bytes  # hsaco (AMD) or cubin (NVIDIA)
    asm: dict[str, str]  # ttir, ttgir, llir, amdgcn / ptx as text
    shared: int  # Triton's dynamic shared memory / LDS bytes
    num_warps: int
    metadata: dict[str, Any]


def triton_cache_hash(launch: CapturedLaunch, target: Target) -> str:
    """The hash ``triton.compile`` would give this launch, computed without compiling.

    The same key Triton's own cache uses (triton_key, source and dependencies, signature, constexprs,
    attrs, backend, options, cache-invalidating environment): equal hash = the same kernel.
    """
    import hashlib

    from triton import knobs
    from triton._C.libtriton import get_cache_invalidating_env_vars
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.cache import get_cache_key

    src = ASTSource(launch.jit_function, launch.signature, launch.constexprs, launch.attrs)
    backend = make_backend(gpu_target(target))
    options = backend.parse_options(dict(launch.options, **src.parse_options()))
    key = get_cache_key(src, backend, options, env_vars=get_cache_invalidating_env_vars())
    stages_hook = getattr(knobs.runtime, "add_stages_inspection_hook", None)  # Triton >= 3.9
    if stages_hook is not None:
        key += stages_hook()[0]
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def compile_launch(launch: CapturedLaunch, target: Target) -> CompiledObject:
    """Compile a captured launch exactly as ``JITFunction._do_compile`` would."""
    import triton
    from triton.compiler import ASTSource

    src = ASTSource(launch.jit_function, launch.signature, launch.constexprs, launch.attrs)
    kernel = triton.compile(src, target=gpu_target(target), options=dict(launch.options))
    binary_key = "hsaco" if target.is_amd else "cubin"
    asm = {k: v for k, v in kernel.asm.items() if isinstance(v, str)}
    meta = kernel.metadata._asdict()
    return CompiledObject(
        kernel_name=meta["name"],
        triton_hash=kernel.hash,
        binary=kernel.asm[binary_key],
        asm=asm,
        shared=int(meta.get("shared", 0) or 0),
        num_warps=int(meta["num_warps"]),
        metadata={k: v for k, v in meta.items() if isinstance(v, (int, str, float, bool))},
    )


@functools.cache
def toolchain_info(backend: str) -> dict[str, Any]:
    """The toolchain a survey was made with: a changed entry makes two surveys not comparable."""
    import triton
    from triton import knobs

    info: dict[str, Any] = {
        "triton": triton.__version__,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        # force_disable_fp_fusion is newer than Triton 3.6.
        "fp_fusion": bool(knobs.language.default_fp_fusion)
        and not getattr(knobs.language, "force_disable_fp_fusion", False),
        "fp_fusion_env": os.environ.get("TRITON_DEFAULT_FP_FUSION"),
        # Environment variables that change what Triton compiles (part of its cache key).
        "env": _cache_invalidating_env(),
    }
    if backend == "hip":
        from triton.backends.amd import compiler as amd

        # Triton 3.9 builds AMD code with a separately versioned codegen; 3.6 uses its bundled LLVM,
        # which triton's own version already pins.
        revision = getattr(amd, "get_amd_codegen_revision", None)
        info["amd_codegen_revision"] = revision() if revision else None
    else:
        from triton.backends.nvidia import compiler as nv

        # Which ptxas compiles an arch moved between Triton versions (3.6: the 12.x ptxas below
        # sm_100; 3.9: the 13.x "ptxas-blackwell" from sm_90 on): record it per target.
        info["ptxas"] = {
            t.name: nv.get_ptxas_version(int(t.arch)).strip().splitlines()[-1]
            for t in TARGETS.values() if t.is_nvidia
        }
    return info


def _cache_invalidating_env() -> dict[str, str]:
    from triton._C.libtriton import get_cache_invalidating_env_vars

    return {k: str(v) for k, v in sorted(get_cache_invalidating_env_vars().items())}


def warm_up() -> None:
    """Do once what every compile process does first: hash Triton's own sources (its cache key's
    ``triton_key``, 0.3 s) and make each backend. Run in the worker forkserver, so that workers are
    forked with it done."""
    from triton.compiler import make_backend
    from triton.runtime.cache import triton_key

    triton_key()
    for target in TARGETS.values():
        with contextlib.suppress(Exception):  # a backend this Triton lacks: its keys fail, with a message
            make_backend(gpu_target(target))


def ptxas_path(arch: int) -> str:
    """The ptxas Triton runs for compute capability ``arch`` (e.g. 90)."""
    from triton.backends.nvidia import compiler as nv

    return str(nv.get_ptxas(arch).path)


def ptxas_codegen_flags() -> list[str]:
    """The ptxas flags beyond ``-lineinfo -v --gpu-name`` that this Triton passes by default.

    Triton 3.9 adds ``--regAllocOptLevel=2`` (a ptxas 13 work-around); 3.6 does not. Read from the
    backend's own ``make_cubin`` so that a re-run of ptxas reproduces Triton's cubin byte for byte.
    """
    import inspect

    from triton.backends.nvidia.compiler import CUDABackend

    source = inspect.getsource(CUDABackend.make_cubin)
    return ["--regAllocOptLevel=2"] if "'--regAllocOptLevel=2'" in source or '"--regAllocOptLevel=2"' in source else []


def install_launch_recorder(record: Callable[[Any, tuple, dict, Any, str | None], None],
                            offline_target: Target | None = None) -> None:
    """Make every ``JITFunction.run`` of this process report its launch to ``record``.

    ``record(jit_function, args, kwargs, grid, specialization_data)`` is called for each launch, with
    Triton's specialization JSON when this launch compiled (None when it hit Triton's in-process
    cache). With ``offline_target``, a stub driver stands in for a GPU: nothing is compiled or
    launched, and every launch reports its specialization for that target.
    """
    from triton import knobs
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    original = JITFunction.run
    compiled: list[str] = []

    def hook(*, key: Any, repr: str, fn: Any, compile: dict, is_manual_warmup: bool,
             already_compiled: bool) -> bool:
        compiled.append(compile["specialization_data"])
        return offline_target is not None  # offline: skip the compile and the launch

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        compiled.clear()
        try:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            if not warmup:
                record(self, args, dict(kwargs), grid, compiled[-1] if compiled else None)

    if offline_target is not None:
        driver.set_active(StubDriver(offline_target))
    knobs.runtime.jit_cache_hook = hook
    JITFunction.run = run  # type: ignore[method-assign]


def innermost_jit_function(kernel: Any) -> Any:
    """The JITFunction under ``@triton.autotune`` / ``@triton.heuristics`` wrappers."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(kernel, JITFunction):
        kernel = getattr(kernel, "fn", None)
        seen += 1
        if kernel is None or seen > 16:
            raise TypeError("not a Triton kernel (no JITFunction inside)")
    return kernel


def jit_function_name(fn: Any) -> str:
    """``module:qualname`` of a JITFunction, the way Triton names it in specialization data."""
    return f"{fn.fn.__module__}:{fn.fn.__qualname__}"


def is_tl_dtype(value: Any) -> bool:
    """True for a ``triton.language`` dtype passed as a (constexpr) argument."""
    import triton.language as tl

    return isinstance(value, tl.dtype)


def tl_dtype(name: str) -> Any:
    """The ``triton.language`` dtype called ``name`` (e.g. ``bf16``)."""
    import triton.language as tl

    return tl.dtype(name)
