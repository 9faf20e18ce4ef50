"""The one module that talks to Triton's internals.

It makes a kind body's launches compile exactly what a real launch compiles, with no GPU:

* a stub driver answers ``get_current_target()`` (and the device questions launchers ask) for the
  surveyed target, so ``JITFunction.run`` builds its binder and options for that target;
* ``knobs.runtime.jit_cache_hook`` receives Triton's own specialization (signature, constexprs,
  attrs, options) right before ``JITFunction.run`` would compile, records it and tells Triton to
  skip compiling and launching; a warmup (``fn.warmup(...)``) is recorded too, but Triton compiles
  it, since the body goes on to read the compiled kernel (``n_regs``, ``metadata.shared``): the stub
  driver "loads" it with the figures the real driver would report, read from the object, and
  "launches" it by doing nothing;
* ``JITFunction.run`` returns a stand-in for the kernel it launched (:class:`SurveyedKernel`): a
  library that keeps it and launches it again later records that launch again;
* ``@triton.autotune`` is resolved the way its ``run`` resolves it (pruned configs), every config
  becoming a launch unless the key pins one; an autotuner subclass with a ``run`` of its own runs it,
  every config it benchmarks (Triton's ``_bench``) becoming a launch; ``@triton.heuristics`` runs
  unchanged; what a library's benchmarking asks of the device (synchronize, events, streams,
  ``triton.testing.do_bench``) answers at once;
* :func:`compile_launch` compiles a captured launch with ``triton.compile`` on an ``ASTSource``
  built from those same objects, the call ``JITFunction._do_compile`` makes, timing each stage of
  the compile (Triton's compile listener; ptxas, the AMD assembler and lld timed inside their stages).

Private APIs move between Triton versions: keep every such use here.

Its length (over 500 lines) is deliberate: every contact with Triton's internals (the stub driver, the
launch hook, autotuning, compiling, the cache hash, toolchain identity) is here, so that a Triton
upgrade is read and reviewed in one module.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import importlib
import io
import json
import mmap
import os
import pickle
import re
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..keys import config_source
from ..keys import session as capture_mod
from ..keys.session import CapturedLaunch, CaptureSession
from ..model.compile_time import StageTimes
from ..model.targets import TARGETS, Target
from . import management
from .triton_facts import AMDGCN, FP_FUSION_VAR, PTXAS_LOG, object_key

# Each target gets its own fake device index: JITFunction caches binder, backend and target per
# device, so a per-target index keeps one worker from reusing gfx950's binder for sm90.
_DEVICE_INDEX = {name: i for i, name in enumerate(TARGETS)}


def gpu_target(target: Target) -> Any:
    """Triton's GPUTarget for ``target``."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget(target.backend, target.arch, target.warp_size)


def _device_properties(target: Target) -> dict[str, Any]:
    """What Triton's own driver returns from ``utils.get_device_properties`` on the target's GPU.

    The keys and their sources follow the drivers' C code (``backends/*/driver.c``): CUDA reads
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN and MAX_REGISTERS_PER_BLOCK; HIP reads ``sharedMemPerBlock``,
    ``regsPerBlock`` and ``gcnArchName`` (Triton 3.9 adds ``max_threads_per_sm`` and
    ``cooperativeLaunch``).
    """
    dev = target.device
    props: dict[str, Any] = {
        "max_shared_mem": dev.shared_memory_per_block_optin if target.is_nvidia else dev.shared_memory_per_block,
        "max_num_regs": dev.regs_per_block,
        "multiprocessor_count": dev.multi_processor_count,
        "warpSize": dev.warp_size,
        "sm_clock_rate": dev.clock_rate,
        "mem_clock_rate": dev.memory_clock_rate,
        "mem_bus_width": dev.memory_bus_width,
    }
    if target.is_amd:
        props["arch"] = dev.gcnArchName
        props["max_threads_per_sm"] = dev.max_threads_per_multi_processor
        props["cooperativeLaunch"] = dev.cooperative_launch
    return props


class _NoLaunch:
    """The stub driver's launcher: a compiled kernel launched under a survey (a warmed-up kernel,
    launched through ``JITFunction.run`` or directly) runs nowhere."""

    def __init__(self, src: Any, metadata: Any):
        self.src, self.metadata = src, metadata

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


def _driver_attributes(binary: bytes, target: Target) -> tuple[int, int, int]:
    # (registers, local memory bytes per thread, max threads per block), as the vendor's driver reads them.
    if target.is_amd:
        from ..objects.amd_object import driver_attributes as amd

        return amd(binary)
    from ..objects.nvidia_object import driver_attributes as nvidia

    return nvidia(binary, target)


class StubDriver:
    """A Triton driver for a GPU that is not there: answers device questions for one target."""

    launcher_cls = _NoLaunch

    def __init__(self, target: Target):
        self.target = target
        props = _device_properties(target)
        self.utils = types.SimpleNamespace(get_device_properties=lambda device=None: dict(props),
                                           load_binary=self._load_binary, unload_module=lambda module: None)

    def _load_binary(self, name: str, binary: bytes, shared: int, device: int) -> tuple[Any, Any, int, int, int]:
        """What ``CompiledKernel._init_handles`` gets from loading the object: no module or function
        handle (None: nothing to unload when the kernel is collected, whichever driver is active by
        then), and the driver's figures, read from the object: registers, local memory / 4 (Triton's
        ``n_spills``) and the most threads a block may have."""
        regs, local_bytes, max_threads = _driver_attributes(binary, self.target)
        return None, None, regs, local_bytes // 4, max_threads

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
        return _bench_once

    def get_empty_cache_for_benchmark(self) -> Any:
        """The buffer ``triton.testing.do_bench`` clears between timed runs (to flush L2): a meta one."""
        import torch

        return torch.empty(0, dtype=torch.int32, device="meta")

    def clear_cache(self, cache: Any) -> None:
        """Nothing to flush on a device that is not there."""
        return None


def _bench_once(fn: Any, quantiles: Any = None, **kwargs: Any) -> Any:
    """Benchmark ``fn`` on the stand-in device: call it once (its launches are captured) and report 0 ms."""
    fn()
    return [0.0] * len(quantiles) if quantiles else 0.0


def _do_bench_once(fn: Any, warmup: Any = 25, rep: Any = 100, grad_to_none: Any = None, quantiles: Any = None,
                   return_mode: str = "mean") -> Any:
    """``triton.testing.do_bench`` (its signature) on the stand-in device: :func:`_bench_once`."""
    timed = _bench_once(fn, quantiles)
    return [timed] if return_mode == "all" and not quantiles else timed


# The fields of torch's _CudaDeviceProperties (torch 2.11 to 2.13) that the target's record holds.
_TORCH_DEVICE_FIELDS = (
    "name", "major", "minor", "multi_processor_count", "total_memory", "warp_size",
    "regs_per_multiprocessor", "max_threads_per_multi_processor", "max_threads_per_block",
    "shared_memory_per_block", "shared_memory_per_block_optin", "shared_memory_per_multiprocessor",
    "L2_cache_size", "clock_rate", "memory_clock_rate", "memory_bus_width", "gcnArchName",
    "is_integrated", "is_multi_gpu_board",
)


def _device_props_namespace(target: Target) -> Any:
    """What ``torch.cuda.get_device_properties`` returns on the target's GPU.

    The PCI location and UUID belong to one machine, not to the GPU model: zeros here.
    """
    fields = {name: getattr(target.device, name) for name in _TORCH_DEVICE_FIELDS}
    return types.SimpleNamespace(
        **fields, pci_bus_id=0, pci_device_id=0, pci_domain_id=0, uuid=types.SimpleNamespace(bytes=bytes(16)),
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


def _launch_site(project_dirs: tuple[str, ...] = ()) -> tuple[str, str]:
    """file:line of the innermost caller outside Triton and regsurvey: where the launch was made; and,
    where that lies outside the project (in ``project_dirs``: an installed library's launcher), file:line
    of the innermost caller inside it (the kind body's call into the library), else ""."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # all of regsurvey
    import triton

    triton_dir = os.path.dirname(os.path.abspath(triton.__file__))
    inside = tuple(d.rstrip(os.sep) + os.sep for d in project_dirs)
    where = ""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if path.startswith((here, triton_dir)):
            continue
        # Code made at run time ("<string>") names no file: it is no project's.
        own = bool(inside) and not frame.filename.startswith("<") and path.startswith(inside)
        if not where:
            where = f"{frame.filename}:{frame.lineno}"
            if own or not inside:
                return where, ""
        elif own:
            return where, f"{frame.filename}:{frame.lineno}"
    return where, ""


def _tuples(value: Any) -> Any:
    # JSON turned the options' tuples into lists; Triton's options hash sees the difference.
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _record_launch(*, key: Any, repr: str, fn: Any, compile: dict, is_manual_warmup: bool,
                   already_compiled: bool) -> bool:
    """jit_cache_hook: record the specialization and tell Triton not to compile or launch; a warmup is
    recorded and Triton compiles it (the body reads the compiled kernel: see :func:`_warmed_up`)."""
    session = capture_mod.current_session()
    if session is None:
        return False  # not surveying: let Triton carry on
    data = json.loads(compile["specialization_data"])
    options = {k: _tuples(v) for k, v in data["options"].items()}
    if is_manual_warmup:
        session.warmup_started = time.perf_counter()
        _CLOCK.start()
    kernel = _python_name(fn)
    where, project_where = _launch_site(session.project_dirs)
    session.launches.append(CapturedLaunch(
        kernel=kernel,
        jit_function=fn.jit_function,
        signature=dict(compile["signature"]),
        constexprs=dict(compile["constants"]),
        attrs=dict(compile["configs"][0]),
        options=options,
        specialization_data=compile["specialization_data"],
        config=session.config_index if session.config_index is not None else _pick_index(session.tuner),
        where=where,
        project_where=project_where,
        name=session.name_launch(kernel, fn.jit_function),
        config_source=session.pending_source,
    ))
    session.pending_source = None
    return not is_manual_warmup


def _python_name(fn: Any) -> str:
    """The kernel's Python name, until it is compiled under its own (a function made from another's code,
    as triton_kernels' ``specialize`` makes them, keeps that code's qualified name but sets ``__name__``)."""
    name = getattr(getattr(fn.jit_function, "fn", None), "__name__", None)
    return name if isinstance(name, str) and name else fn.name.split(".")[-1]


def _warmed_up(*, key: Any, repr: str, fn: Any, compile: dict, is_manual_warmup: bool,
               already_compiled: bool) -> None:
    """jit_post_compile_hook: Triton compiled a warmup the body asked for; the launch recorded for it
    takes the compiled kernel (the survey reads it instead of compiling again) and its compile time."""
    session = capture_mod.current_session()
    if session is None or session.warmup_started is None or not session.launches:
        return
    device = compile["device"]
    kernel_cache = fn.jit_function.device_caches[device][0]
    launch = session.launches[-1]
    launch.compiled = kernel_cache.get(key)
    launch.compile_s = round(time.perf_counter() - session.warmup_started, 3)
    launch.stage_s = _CLOCK.take()
    session.warmup_started = None
    session.compiled_here.append((kernel_cache, key))


@contextlib.contextmanager
def _forgetting_warmups(session: CaptureSession) -> Iterator[None]:
    """Drop the kernels warmups compiled from Triton's in-process cache when the body ends: a later
    key's launch of the same kernel must reach the launch hook again, not find it compiled."""
    try:
        yield
    finally:
        for kernel_cache, key in session.compiled_here:
            kernel_cache.pop(key, None)
        session.compiled_here.clear()


class SurveyedKernel:
    """What ``JITFunction.run`` returns for a launch under a survey, where a GPU launch returns the
    CompiledKernel it launched.

    Libraries keep that kernel and launch it directly the next time the same specialization comes up
    (FlagGems' ``LibEntry``: ``kernel[grid](*args)``); on the GPU that runs the same binary again, so
    here it records the same launch again, in whichever key is being surveyed then. Anything else read
    from it (``n_regs``, ``metadata``, ``asm``) is read from the CompiledKernel, compiled on first use
    (and the key's row then takes that compile).
    """

    def __init__(self, launch: CapturedLaunch, target: Target):
        self._launch, self._target = launch, target

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        launch = self._launch

        def runner(*args: Any, stream: Any = None) -> None:
            session = capture_mod.current_session()
            if session is not None:
                where, project_where = _launch_site(session.project_dirs)
                session.launches.append(dataclasses.replace(
                    launch, where=where, project_where=project_where, compiled=None, compile_s=0.0, stage_s=None,
                    ptxas_log=None, name=session.name_launch(launch.kernel, launch.jit_function)))

        return runner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # private names (and copy/pickle probes) are the proxy's own
            raise AttributeError(name)
        launch = self._launch
        if launch.compiled is None:
            start = time.perf_counter()
            launch.compiled, launch.ptxas_log, launch.stage_s = _triton_compile(launch, self._target)
            launch.compile_s = round(time.perf_counter() - start, 3)
        return getattr(launch.compiled, name)


def _surveyed_jit_run(original: Callable[..., Any]) -> Callable[..., Any]:
    """JITFunction.run under a survey: the launch hook records the launch and skips it, and Triton's
    run then returns None; return what stands in for the launched kernel instead (SurveyedKernel)."""

    @functools.wraps(original)
    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        def call() -> Any:
            session = capture_mod.current_session()
            before = len(session.launches) if session is not None else 0
            varied_args, varied_kwargs = _with_variant(self, self.arg_names, args, kwargs)
            kernel = original(self, *varied_args, grid=grid, warmup=warmup, **varied_kwargs)
            if kernel is None and session is not None and len(session.launches) > before:
                return SurveyedKernel(session.launches[-1], session.target)
            return kernel

        return _probed(self, call)

    return run


def _varied_kernel(kernel: Any) -> bool:
    """Whether the variant being surveyed (``regsurvey fix``) changes the launches of ``kernel`` (a JITFunction
    or a wrapper of one): those of the jit function the variant names (its Python name), or, for a kernel
    compiled under a name of its own, the call being made again because its unchanged launch was the base
    build's (:func:`_probed`)."""
    session = capture_mod.current_session()
    if session is None or session.variant is None or session.variant_probe:
        return False
    try:
        jit = innermost_jit_function(kernel)
    except TypeError:
        return False
    if session.variant_jit is not None:
        return jit is session.variant_jit
    return getattr(getattr(jit, "fn", None), "__name__", None) == session.variant.kernel


def _probed(kernel: Any, call: Callable[[], Any]) -> Any:
    """Make a launcher's call into Triton (``call``: an autotuner's, heuristics' or jit function's run), under
    a variant whose kernel is compiled under a name of its own: first unchanged, recording its launches, then,
    where one of them is the base build's (its compiled name and config), again with the variant applied to
    that jit function, the unchanged launches dropped. Any other call is made once, as it is."""
    session = capture_mod.current_session()
    if session is None or session.variant is None or session.variant_probe or session.variant_jit is not None:
        return call()
    try:
        jit = innermost_jit_function(kernel)
    except TypeError:
        return call()
    if getattr(jit, "_repr", None) is None or getattr(jit.fn, "__name__", None) == session.variant.kernel:
        return call()
    before, naming = len(session.launches), session.naming_state()
    session.variant_probe = True
    try:
        result = call()
    finally:
        session.variant_probe = False
    variant = session.variant
    if not any(compiled_name(launch) == variant.kernel and variant.config in (None, launch.config)
               for launch in session.launches[before:]):
        return result
    del session.launches[before:]
    session.restore_naming(naming)
    session.variant_jit = jit
    try:
        return call()
    finally:
        session.variant_jit = None


# What a jit function's ``repr`` is handed (Triton's code generator makes the same): the specialization's
# constexprs by parameter name, and its signature.
_SpecializationProxy = collections.namedtuple("_SpecializationProxy", ["constants", "signature"])


def compiled_name(launch: CapturedLaunch) -> str:
    """The name Triton compiles ``launch``'s kernel under (the object's symbol): its jit function's ``repr``
    of the specialization (triton_kernels' ``_matmul_NNT_bf16xbf16xmxfp4_32x256x256x1``), else its name."""
    proxy = _SpecializationProxy(_named_constexprs(launch), launch.signature)
    try:
        name = str(launch.jit_function.repr(proxy))
    except Exception:  # a repr the launch's specialization does not satisfy: the Python name then
        return launch.kernel
    return name[name.rfind(".") + 1:]


def _with_variant(kernel: Any, names: list[str], args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A launch's arguments (``names``: the parameters', in order) with the variant's options and constexprs,
    where the variant being surveyed changes ``kernel``'s launches: a value passed by position is replaced
    there, any other is passed by name (a launch option, a constexpr left to its default)."""
    if not _varied_kernel(kernel):
        return args, kwargs
    session = capture_mod.current_session()
    assert session is not None and session.variant is not None
    positional, named = list(args), dict(kwargs)
    session.variant_reached += 1
    passed = {**dict(zip(names, args)), **kwargs}
    entry = config_source.source_of(session.config_reads, passed, session.variant.settings)
    if entry is not None:  # the launcher passed an entry of a config file it read: the patch to that file
        session.pending_source = config_source.config_source(
            entry, session.variant.settings, session.project_dirs[0] if session.project_dirs else "",
            list(sys.path)).to_dict()
    for name, value in session.variant.settings:
        if name in names and names.index(name) < len(positional):
            positional[names.index(name)] = value
        else:
            named[name] = value
    return tuple(positional), named


def _surveyed_heuristics_run(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Heuristics.run under a survey: a variant's constexprs are in place before the heuristics compute the
    values that depend on them (an ``EVEN_K`` from a changed ``BLOCK_K``)."""
    def call() -> Any:
        varied_args, varied_kwargs = _with_variant(self, self.arg_names, args, kwargs)
        return _original_heuristics_run(self, *varied_args, **varied_kwargs)

    return _probed(self, call)


def _pinned(session: CaptureSession, tuner: Any) -> int | None:
    """The config an autotuner is pinned to: the variant's (``regsurvey fix``), else ``rs.pin_config``'s."""
    if session.variant is not None and session.variant.config is not None and _varied_kernel(tuner):
        return session.variant.config
    return session.pinned_configs.get(id(tuner))


def _surveyed_autotune_run(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Autotuner.run under a survey: each config a real launch could pick becomes a launch.

    Returns what the launch of the first (the picked) config returned, as a GPU launch returns the
    picked kernel."""
    session = capture_mod.current_session()
    if session is None:
        return _original_autotune_run(self, *args, **kwargs)
    return _probed(self, lambda: _launch_configs(session, self, args, kwargs))


def _launch_configs(session: CaptureSession, self: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """The launches of :func:`_surveyed_autotune_run`: the configs a real launch could pick (the pinned one
    alone), each launched once."""
    self.nargs = dict(zip(self.arg_names, args))
    pinned = _pinned(session, self)
    if pinned is not None:
        candidates = [self.configs[pinned]]
    elif len(self.configs) > 1:
        candidates = list(self.prune_configs(kwargs))  # an early-prune hook may yield them
    else:
        candidates = list(self.configs)
    picked = None
    with session.one_launch():  # one launch of the kind body, whatever configs it becomes
        for position, config in enumerate(candidates):
            session.config_index = _config_index(self.configs, config, position)
            try:
                if config.pre_hook is not None:
                    config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
                kernel = self.fn.run(*args, **kwargs, **config.all_kwargs())
            finally:
                session.config_index = None
            if position == 0:
                picked = kernel
    # As after a run that benchmarked nothing: wrappers such as FlagGems' LibEntry read the pick.
    self.best_config = candidates[0] if candidates else None
    self.nargs = None
    return picked


def _surveyed_bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
    """Autotuner._bench under a survey, for autotuners with a ``run`` of their own (FlagGems' LibTuner):
    the config is launched once, through Triton's own benchmark call (the config's and the tuner's
    hooks, the conflict check), and timed at 0 ms, so that the tuner's own pruning and policy decide
    which configs become launches and every config it benchmarks is a row with its index. A pinned
    tuner (``rs.pin_config``) launches only the pinned config; the others time as failed (inf)."""
    session = capture_mod.current_session()
    if session is None:
        return _original_bench(self, *args, config=config, **meta)
    pinned = _pinned(session, self)
    index = _config_index(self.configs, config, len(session.benched))
    if pinned is not None and index != pinned:
        return [float("inf")] * 3
    before = len(session.launches)
    missing = object()
    cached = self.__dict__.get("do_bench", missing)  # Autotuner.do_bench is a cached_property
    self.__dict__["do_bench"] = _bench_once
    session.config_index = index
    try:
        return _original_bench(self, *args, config=config, **meta)
    finally:
        session.config_index = None
        if cached is missing:
            del self.__dict__["do_bench"]
        else:
            self.__dict__["do_bench"] = cached
        session.benched.extend(session.launches[before:])


def _surveyed_own_run(own_run: Callable[..., Any]) -> Callable[..., Any]:
    """An autotuner subclass's own ``run`` under a survey: it runs as written (its pruning, its policy,
    its caches of picks), benchmarking through :func:`_surveyed_bench`. Its launch of the pick after
    benchmarking repeats the kernel the pick's benchmark launched: that launch is dropped. A pick
    launched without benchmarking (found in the tuner's cache) is recorded with the pick's index."""

    @functools.wraps(own_run)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        session = capture_mod.current_session()
        if session is None or session.tuner is self:  # not surveying, or a subclass's run calling super().run
            return own_run(self, *args, **kwargs)
        return _probed(self, lambda: _own_run_launches(session, own_run, self, args, kwargs))

    return run


def _own_run_launches(session: CaptureSession, own_run: Callable[..., Any], self: Any, args: tuple,
                      kwargs: dict[str, Any]) -> Any:
    """:func:`_surveyed_own_run`'s call of the tuner's own run: its benchmarks and its pick one launch."""
    outer = session.tuner, session.benched
    session.tuner, session.benched = self, []
    first = len(session.launches)
    try:
        with session.one_launch():  # its benchmarks and its pick: one launch of the kind body
            return own_run(self, *args, **kwargs)
    finally:
        benched = session.benched
        session.tuner, session.benched = outer
        kept = {id(b) for b in benched}
        seen = {(id(b.jit_function), b.specialization_data) for b in benched}
        session.launches[first:] = [
            launch for launch in session.launches[first:]
            if id(launch) in kept or (id(launch.jit_function), launch.specialization_data) not in seen
        ]


def _pick_index(tuner: Any) -> int | None:
    """The index of the config an autotuner has picked (None: no tuner, or no pick among its configs)."""
    pick = getattr(tuner, "best_config", None)
    if pick is None:
        return None
    try:
        return tuner.configs.index(pick)
    except ValueError:
        return None


def _own_run_autotuners() -> list[type]:
    """The Autotuner subclasses, imported so far, that define their own ``run``."""
    from triton.runtime.autotuner import Autotuner

    found, todo = [], list(Autotuner.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "run" in vars(cls):
            found.append(cls)
    return found


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


class _StandInEvent:
    """``torch.cuda.Event`` on the stand-in device: records nothing; every interval it is asked for
    lasts ``_STAND_IN_INTERVAL_MS``."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing

    def record(self, stream: Any = None) -> None:
        return None

    def wait(self, stream: Any = None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end_event: Any) -> float:
        return _STAND_IN_INTERVAL_MS


# Nothing runs, so no interval can be measured. A benchmark loop sized from a first reading
# (triton.testing.do_bench imported by name: repetitions = budget / estimate) divides by it: 0 would
# raise, and a long interval makes such a loop run each function the fewest times (each call is a row).
_STAND_IN_INTERVAL_MS = 1e6


class _StandInStream:
    """``torch.cuda.Stream`` on the stand-in device: stream 0, nothing to wait for."""

    cuda_stream = 0
    device_index = 0

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any):
        self.priority = priority

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> Any:
        return event if event is not None else _StandInEvent()

    def __enter__(self) -> _StandInStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_original_autotune_run: Any = None
_original_bench: Any = None
_original_heuristics_run: Any = None


@contextlib.contextmanager
def device_as(target: Target) -> Iterator[Target]:
    """Make the device look like ``target`` to Triton (the active driver) and to the project's code
    (``torch.cuda`` device queries, ``torch.version.hip``/``cuda``, the vendor's management library and
    commands: :mod:`.management`) until the block ends.

    Keys files are imported inside this (a library may ask for the device at import), and every kind
    body runs inside it, under :func:`capturing`.
    """
    import torch
    import triton
    from triton.runtime.driver import driver

    props = _device_props_namespace(target)
    previous_driver = driver._active
    driver.set_active(StubDriver(target))
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(management.standing_in(target))  # NVML, AMD SMI, nvidia-smi ...
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
                # What a library's own benchmarking touches (FlagGems' tuner: triton.testing.do_bench):
                # nothing runs, so there is nothing to wait for or to time.
                "synchronize": lambda device=None: None,
                "Event": _StandInEvent,
                "Stream": _StandInStream,
                "current_stream": lambda device=None: _StandInStream(),
                "default_stream": lambda device=None: _StandInStream(),
                "stream": lambda stream=None: contextlib.nullcontext(stream),
                "set_device": lambda device: None,
            }.items():
                stack.enter_context(_patched(cuda, name, value))
            del triton  # imported so the patches above land on an initialised package
            yield target
    finally:
        driver._active = previous_driver


@contextlib.contextmanager
def capturing(session: CaptureSession) -> Iterator[CaptureSession]:
    """Run a kind body inside this: its launches land in ``session`` and nothing runs on a GPU.

    The device looks like ``session.target`` (:func:`device_as`).
    """
    global _original_autotune_run, _original_bench, _original_heuristics_run
    import triton.testing
    from triton import knobs
    from triton.runtime import autotuner
    from triton.runtime.jit import JITFunction

    if _original_autotune_run is None:
        _original_autotune_run = autotuner.Autotuner.run
        _original_bench = autotuner.Autotuner._bench
        _original_heuristics_run = autotuner.Heuristics.run
    token = capture_mod.begin(session)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(device_as(session.target))
            stack.enter_context(timing_stages())  # a warmup's compile, and one the body reads, are timed too
            stack.enter_context(_patched(knobs.runtime, "jit_cache_hook", _record_launch))
            stack.enter_context(_patched(knobs.runtime, "jit_post_compile_hook", _warmed_up))
            stack.enter_context(_forgetting_warmups(session))
            stack.enter_context(_patched(JITFunction, "run", _surveyed_jit_run(JITFunction.run)))
            stack.enter_context(_patched(autotuner.Autotuner, "run", _surveyed_autotune_run))
            stack.enter_context(_patched(autotuner.Autotuner, "_bench", _surveyed_bench))
            stack.enter_context(_patched(autotuner.Heuristics, "run", _surveyed_heuristics_run))
            for tuner_class in _own_run_autotuners():
                stack.enter_context(_patched(tuner_class, "run", _surveyed_own_run(vars(tuner_class)["run"])))
            stack.enter_context(_patched(triton.testing, "do_bench", _do_bench_once))
            if session.variant is not None:  # regsurvey fix: the config files the launcher reads
                stack.enter_context(config_source.noting_json_reads(session.config_reads))
            yield session
    finally:
        capture_mod.end(token)


@dataclass(frozen=True)
class CompiledObject:
    """What one compile produced: the binary, the IR texts and Triton's metadata."""

    kernel_name: str  # the symbol name in the object
    triton_hash: str  # Triton's cache key hash: equal hash = the same kernel a launch compiles
    binary: bytes  # hsaco (AMD) or cubin (NVIDIA)
    asm: dict[str, str]  # ttir, ttgir, llir, amdgcn / ptx as text; for a cubin ptxas' log (PTXAS_LOG), if any
    shared: int  # Triton's dynamic shared memory / LDS bytes
    num_warps: int
    metadata: dict[str, Any]
    # The seconds of each stage of the compile (None: not measured, Triton's own cache had the kernel).
    stage_s: StageTimes | None = None


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


@dataclass(frozen=True)
class PortableLaunch:
    """A captured launch as data that another worker of the same checkout and target turns back into the same
    launch without running the kind body (:func:`restored_launch`): the launch's fields pickled, every
    JITFunction among them (the kernel, a constexpr function) named ``module:qualname``; and its Triton cache
    hash, which the launch made again must have."""

    payload: bytes
    cache_hash: str


class NotRestorable(Exception):
    """A portable launch this process cannot make again exactly: a JITFunction that is not importable by its
    name here, or one whose launch made again hashes otherwise (then the kind body must run)."""


# What a portable launch carries of a CapturedLaunch: the kernel's specialization and what its row says of it.
# Not a warmup's compiled kernel (the receiving worker compiles, or takes the build the first compiled), nor a
# fix variant's config source (variants are not shared).
_PORTABLE_FIELDS = ("kernel", "jit_function", "signature", "constexprs", "attrs", "options",
                    "specialization_data", "config", "where", "project_where", "name")


class _LaunchPickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        from triton.runtime.jit import JITFunction

        if isinstance(obj, JITFunction):
            return ("jit", jit_function_name(obj))
        return None


class _LaunchUnpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        kind, name = pid
        if kind != "jit":
            raise NotRestorable(f"unknown reference {kind!r}")
        return _jit_function_named(name)


def _jit_function_named(name: str) -> Any:
    """The JITFunction ``module:qualname`` in this process: the last one Triton made under that name (its
    registry, which kernels made inside functions are in too: torchao's), else the module's attribute
    (through autotune/heuristics wrappers)."""
    from triton.runtime import jit

    made = getattr(jit, "_triton_jit_function_registry", {}).get(name)
    if made is not None:
        return made
    module_name, _, qualname = name.partition(":")
    if module_name == "__main__":
        raise NotRestorable(f"kernel {name} was defined in a script, not in a module")
    try:
        obj: Any = importlib.import_module(module_name)
        if "<" in qualname:  # made inside a function (Triton before 3.9 keeps no registry): one alive here
            return _alive(name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return innermost_jit_function(obj)
    except (ImportError, AttributeError, TypeError) as exc:
        raise NotRestorable(f"kernel {name} is not importable here: {exc}") from None


def _alive(name: str) -> Any:
    """The JITFunction called ``name`` among this process's objects (the last made, where several are)."""
    import gc

    from triton.runtime.jit import JITFunction

    if name not in _ALIVE:  # one look over the heap finds every kernel made in a function so far
        for obj in gc.get_objects():
            if issubclass(type(obj), JITFunction) and "<" in obj.fn.__qualname__:  # type(): a proxy warns on __class__
                _ALIVE[jit_function_name(obj)] = obj
    if name not in _ALIVE:
        raise NotRestorable(f"kernel {name} is not in this process (made by code that has not run here)")
    return _ALIVE[name]


_ALIVE: dict[str, Any] = {}  # the kernels made inside functions found alive in this process, by name


def portable_launch(launch: CapturedLaunch, target: Target) -> PortableLaunch | None:
    """``launch`` as a :class:`PortableLaunch` (its cache hash computed, and kept on it), or None where it
    cannot travel (a value that does not pickle)."""
    if launch.cache_hash is None:
        launch.cache_hash = triton_cache_hash(launch, target)
    buffer = io.BytesIO()
    try:
        _LaunchPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
            {name: getattr(launch, name) for name in _PORTABLE_FIELDS})
    except Exception:  # the project's constexprs may be anything
        return None
    return PortableLaunch(buffer.getvalue(), launch.cache_hash)


def restored_launch(portable: PortableLaunch, target: Target) -> CapturedLaunch:
    """The launch ``portable`` was made from, made again in this process: raises :class:`NotRestorable` where
    its Triton cache hash here is not the one it travelled with (another source, another environment)."""
    try:
        fields = _LaunchUnpickler(io.BytesIO(portable.payload)).load()
    except NotRestorable:
        raise
    except Exception as exc:
        raise NotRestorable(f"{type(exc).__name__}: {exc}") from None
    launch = CapturedLaunch(**fields)
    if triton_cache_hash(launch, target) != portable.cache_hash:
        raise NotRestorable(f"kernel {launch.kernel} hashes otherwise here than where its kind body ran")
    launch.cache_hash = portable.cache_hash
    return launch


def launch_option_names(target: Target) -> frozenset[str]:
    """The launch options Triton's backend for ``target`` takes (``num_warps``, ``waves_per_eu``, ``maxnreg``
    ...): the fields of its options (HIPOptions, CUDAOptions)."""
    import dataclasses as fields_of

    from triton.compiler import make_backend

    options = make_backend(gpu_target(target)).parse_options({})
    return frozenset(f.name for f in fields_of.fields(options))


def constexpr_values(launch: CapturedLaunch) -> dict[str, Any]:
    """The launch's constexpr arguments by name, as JSON scalars (``{"BLOCK": 512, "EVEN": True}``): what
    the build was specialized on besides its options (an autotune config's kwargs and the heuristics'
    values are constexprs too). A dtype is given by its name; any other value by its ``repr``."""
    values = {}
    for name, value in _named_constexprs(launch).items():
        if is_tl_dtype(value):
            value = str(value)
        elif not isinstance(value, (bool, int, float, str, type(None))):
            value = repr(value)
        values[name] = value
    return values


def _named_constexprs(launch: CapturedLaunch) -> dict[str, Any]:
    """The launch's constexprs by argument name, as Triton holds them (one inside a tuple argument, not named
    by one argument, left out)."""
    names = list(launch.signature)  # Triton's signature: every argument by name, in order
    return {names[path[0]]: value for path, value in launch.constexprs.items()
            if isinstance(path, tuple) and len(path) == 1 and isinstance(path[0], int) and path[0] < len(names)}


def _triton_compile(launch: CapturedLaunch, target: Target) -> tuple[Any, str | None, StageTimes | None]:
    """``triton.compile`` of a captured launch, the call ``JITFunction._do_compile`` makes; for an NVIDIA
    target the log of its ``ptxas -v`` run; and the seconds of each stage of the compile (both None when
    Triton's cache had the kernel: nothing ran)."""
    import triton
    from triton.compiler import ASTSource

    src = ASTSource(launch.jit_function, launch.signature, launch.constexprs, launch.attrs)
    with timing_stages():
        _CLOCK.start()
        if not target.is_nvidia:
            kernel = triton.compile(src, target=gpu_target(target), options=dict(launch.options))
            return kernel, None, _CLOCK.take()
        with _ptxas_log() as log:
            kernel = triton.compile(src, target=gpu_target(target), options=dict(launch.options))
        return kernel, log.getvalue() or None, _CLOCK.take()


# The tools a backend's last stage runs, timed as stages of their own (``StageTimes``), by the function of
# the backend's compiler module that runs each: ptxas through ``subprocess.run`` in ``make_cubin``; the AMD
# assembler (3.9: the module's own ``assemble_amdgcn``; 3.6: libtriton's ``amd.assemble_amdgcn``) and lld
# (libtriton's ``amd.link_hsaco``, in-process) in ``make_hsaco``. What else the stage did (temporary files)
# stays the stage's.
_STAGE_TOOLS: dict[str, tuple[str, ...]] = {"cubin": ("ptxas",), "hsaco": ("assembler", "lld")}
_NVIDIA_TOOLS = {"subprocess": {"run": "ptxas"}}
_AMD_TOOLS = {"assemble_amdgcn": "assembler", "amd": {"assemble_amdgcn": "assembler", "link_hsaco": "lld"}}


class _StageClock:
    """The stage seconds of the compile under way: what Triton's compile listener reports of it
    (``knobs.compilation.listener``, 3.6 and 3.9 alike: its microseconds per stage, each stage's output
    written to Triton's cache included), with the tools timed inside its stages. A worker compiles on one
    thread, one kernel at a time: :meth:`start` before a compile, :meth:`take` after it."""

    def __init__(self) -> None:
        self._tools: dict[str, float] = {}
        self._taken: StageTimes | None = None

    def start(self) -> None:
        """A compile begins: forget what an earlier one (a failed one, or one never taken) left."""
        self._tools.clear()
        self._taken = None

    def tool(self, name: str, seconds: float) -> None:
        """A tool of the compile ran for ``seconds``."""
        self._tools[name] = self._tools.get(name, 0.0) + seconds

    def listen(self, *, times: Any, cache_hit: bool, **_: Any) -> None:
        """Triton's compile listener: the compile ended (a cache hit measures no stage)."""
        if cache_hit:
            self._taken = None
            return
        entries: list[tuple[str, float]] = [("frontend", times.ir_initialization / 1e6)]
        for stage, micros in times.lowering_stages:
            tools = [(tool, self._tools[tool]) for tool in _STAGE_TOOLS.get(stage, ()) if tool in self._tools]
            entries += tools
            # The listener and the tools read the same clock (time.time); its microseconds are truncated.
            entries.append((stage, max(0.0, micros / 1e6 - sum(seconds for _, seconds in tools))))
        entries.append(("store", times.store_results / 1e6))
        self._taken = StageTimes((name, round(seconds, 6)) for name, seconds in entries)
        self._tools.clear()

    def take(self) -> StageTimes | None:
        """The stage seconds of the compile that just ended (None: not measured), once."""
        taken, self._taken = self._taken, None
        return taken


_CLOCK = _StageClock()
_timing = False  # timing_stages() is in force


def _timed_tool(function: Callable[..., Any], tool: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.time()  # the listener's clock
        try:
            return function(*args, **kwargs)
        finally:
            _CLOCK.tool(tool, time.time() - start)

    return timed


class _TimedModule:
    """A module as a backend's compiler module sees it, with the functions that run a tool timed."""

    def __init__(self, module: Any, tools: dict[str, str]):
        self._module, self._tools = module, tools

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        tool = self._tools.get(name)
        return value if tool is None else _timed_tool(value, tool)


def _timing_tools(stack: contextlib.ExitStack, module: Any, tools: dict[str, Any]) -> None:
    """Time the tools a backend's compiler module runs (``tools``: a function's name and its tool, or a
    module's name and its functions'), for as long as ``stack`` holds; a name this Triton lacks is passed."""
    for name, tool in tools.items():
        value = getattr(module, name, None)
        if value is None:
            continue
        timed = _TimedModule(value, tool) if isinstance(tool, dict) else _timed_tool(value, tool)
        stack.enter_context(_patched(module, name, timed))


@contextlib.contextmanager
def timing_stages() -> Iterator[None]:
    """Within it, every compile Triton makes reports the seconds of its stages to the clock that
    :func:`compile_launch` (and a warmup's launch) takes them from. A listener already set (the user's)
    is still told. Nested, it does nothing more."""
    global _timing
    if _timing:
        yield
        return
    from triton import knobs

    listener = knobs.compilation.listener

    def listen(**report: Any) -> None:
        if listener is not None:
            listener(**report)
        _CLOCK.listen(**report)

    with contextlib.ExitStack() as stack:
        stack.enter_context(_patched(knobs.compilation, "listener", listen))
        for module_name, tools in (("triton.backends.nvidia.compiler", _NVIDIA_TOOLS),
                                   ("triton.backends.amd.compiler", _AMD_TOOLS)):
            try:
                module = importlib.import_module(module_name)
            except ImportError:  # a Triton built without this backend: its targets fail with a message
                continue
            _timing_tools(stack, module, tools)
        _timing = True
        try:
            yield
        finally:
            _timing = False


@contextlib.contextmanager
def _ptxas_log() -> Iterator[io.StringIO]:
    """Catch the log of the ``ptxas -v`` run Triton makes for every cubin.

    Triton writes the log to a temporary file and prints it when ``knobs.nvidia.dump_ptxas_log`` is on
    (3.6 and 3.9 alike); the knob is not part of any cache key. The spill bytes it holds spare an
    nvdisasm run per spilling kernel. A user who turned the knob on still sees the log.
    """
    from triton import knobs

    shown = knobs.nvidia.dump_ptxas_log
    caught = io.StringIO()
    try:
        with knobs.nvidia.scope(), contextlib.redirect_stdout(caught):
            knobs.nvidia.dump_ptxas_log = True
            yield caught
    finally:
        if shown and caught.getvalue():
            sys.stdout.write(caught.getvalue())


def compile_launch(launch: CapturedLaunch, target: Target) -> CompiledObject:
    """Compile a captured launch exactly as ``JITFunction._do_compile`` would (a warmup's launch:
    what Triton compiled for it while the body ran)."""

    if launch.compiled is not None:
        kernel, ptxas_log, stage_s = launch.compiled, launch.ptxas_log, launch.stage_s
    else:
        kernel, ptxas_log, stage_s = _triton_compile(launch, target)
    asm = {k: v for k, v in kernel.asm.items() if isinstance(v, str)}
    if ptxas_log is not None:
        asm[PTXAS_LOG] = ptxas_log
    meta = kernel.metadata._asdict()
    return CompiledObject(
        kernel_name=meta["name"],
        triton_hash=kernel.hash,
        binary=kernel.asm[object_key(target)],
        asm=asm,
        shared=int(meta.get("shared", 0) or 0),
        num_warps=int(meta["num_warps"]),
        metadata={k: v for k, v in meta.items() if isinstance(v, (int, str, float, bool))},
        stage_s=stage_s,
    )


@contextlib.contextmanager
def compiling_afresh(afresh: bool = True) -> Iterator[None]:
    """Within it (``afresh``), Triton compiles every kernel it is asked for, none read back from its own
    cache (``~/.triton/cache``, ``TRITON_CACHE_DIR``): ``knobs.compilation.always_compile``, which is no
    part of any cache key; what it compiles is still written there. What ``--force`` means by compile."""
    if not afresh:
        yield
        return
    from triton import knobs

    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        yield


# Messages of toolchain failures that are known to be intermittent: Triton's AMD backend links every
# hsaco with LLD in-process, and under many concurrent compiles (seen at -j 16 with Triton 3.6) a link
# sometimes fails with "target emulation unknown" on an input it links fine the next time.
_FLAKY_MESSAGES = ("LLD failed to link hsaco",)


def is_flaky_failure(exc: BaseException) -> bool:
    """True when ``exc`` is a toolchain failure known to be intermittent (worth one retry)."""
    return any(m in str(exc) for m in _FLAKY_MESSAGES)


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
        "fp_fusion_env": os.environ.get(FP_FUSION_VAR),
        # Environment variables that change what Triton compiles (part of its cache key).
        "env": _cache_invalidating_env(),
    }
    if backend == "hip":
        from triton.backends.amd import compiler as amd

        # Triton 3.9 builds AMD code with a separately versioned codegen, which names its revision; 3.6 to
        # 3.8 with the LLVM linked into libtriton, whose revision only that library's bytes say.
        revision = getattr(amd, "get_amd_codegen_revision", None)
        info["amd_codegen_revision"] = revision() if revision else bundled_llvm_revision()
    else:
        from triton.backends.nvidia import compiler as nv

        # Which ptxas compiles an arch moved between Triton versions (3.6: the 12.x ptxas below
        # sm_100; 3.9: the 13.x "ptxas-blackwell" from sm_90 on): record it per target.
        info["ptxas"] = {
            t.name: nv.get_ptxas_version(int(t.arch)).strip().splitlines()[-1]
            for t in TARGETS.values() if t.is_nvidia
        }
    return info


# LLVM's own version line (`llc --version`), with the llvm-project commit it was built from:
# "LLVM version 22.0.0git (f6ded0be897e2878612dd903f7e8bb85448269e5)".
_LLVM_VERSION = re.compile(rb"LLVM version \d[\w.]* \(([0-9a-f]{7,40})\)")


def bundled_llvm_revision() -> str | None:
    """The llvm-project commit of the LLVM linked into Triton's own library (``triton/_C/libtriton.so``):
    its AMD codegen before Triton 3.9. No API of Triton's or LLVM's Python bindings says it; LLVM keeps its
    ``--version`` line in the library (about 20 MB in, read through a memory map: 10 to 20 ms; the whole
    half-gigabyte library where it is missing, 0.3 s). None where the library holds no such line (an LLVM
    built without its revision)."""
    from triton._C import libtriton

    path = getattr(libtriton, "__file__", None)
    if path is None:
        return None
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = _LLVM_VERSION.search(data)
            return found[1].decode() if found else None  # (read while the map is open)
    except (OSError, ValueError):
        return None


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


# What cannot_build compiles: one kernel that does nothing, in Triton's own IR.
_PROBE_TTIR = "module {\n  tt.func public @regsurvey_probe() {\n    tt.return\n  }\n}\n"
_PROBE_TIMEOUT_S = 60.0  # (tens of milliseconds; a loaded machine's cold disk: seconds)

# How each part of a compile says it does not know the arch it is asked for (read in what it printed and
# raised), first match wins; its groups are what it says. Triton's own backend ("unsupported
# target", its TargetInfo: 3.5's gfx1250, whose LLVM knew it); Triton 3.9's AMD code generator deriving its
# triple; LLVM, which says so on stderr and goes on, building for no processor in particular
# ("amdgcn-amd-amdhsa--gfx000"); ptxas; LLVM ending the process (a ptxas older than the target: Triton asks
# LLVM for the PTX version that ptxas reads, too old for the target); a Triton without the backend at all.
_DOES_NOT_KNOW: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"unsupported target: '([^']+)'"), "its {vendor} backend does not know {0}"),
    (re.compile(r"invalid AMD GPU architecture: ([\w:+-]+)"), "its LLVM does not know {0}"),
    (re.compile(r"'([^']+)' is not a recognized processor for this target"), "its LLVM does not know {0}"),
    (re.compile(r"Value '([^']+)' is not defined for option 'gpu-name'"), "its {ptxas} does not know {0}"),
    (re.compile(r"LLVM ERROR: PTX version (\d+\.\d+) does not support target '([^']+)'"),
     "its {ptxas} reads PTX {0}, too old for {1}"),
    (re.compile(r"LLVM ERROR: ([^\n]+)"), "its LLVM stops: {0}"),
    (re.compile(r"(0) compatible backends for target"), "it has no {vendor} backend"),
)
# What the probe's child writes of the processor an AMD build is for (the object's .amdgcn_target).
_BUILT_FOR = "regsurvey-probe: built for "
_AMDGCN_TARGET = re.compile(r'\.amdgcn_target\s+"([^"]+)"')


@functools.cache
def cannot_build(target: Target) -> str | None:
    """Why this process's Triton cannot build for ``target``, in a few words (``its LLVM does not know
    gfx1250``); None where it can. Asked once per target and process, by compiling one kernel that does
    nothing through every stage of Triton's pipeline for it, as ``triton.compile`` runs them but past its
    cache (tens of milliseconds): Triton's own passes, LLVM, and ptxas or the AMD assembler and linker, each
    as Triton calls it. In a child process of this one (a fork): LLVM ends the process it runs in on some
    targets it cannot build for. What the compile printed counts as much as whether it raised: LLVM builds for
    a processor it does not know, only saying so on stderr. A failure that names no arch (this probe's own,
    a missing linker) is no answer: None, and the survey's builds say what they say."""
    import tempfile
    import warnings

    try:  # what every child would do first, done once here: Triton's compiler modules and the backend
        from triton.compiler.compiler import make_backend

        make_backend(gpu_target(target))
    except Exception as exc:  # (a Triton without the backend)
        return _does_not_know(target, f"{type(exc).__name__}: {exc}")
    with tempfile.TemporaryFile() as said, tempfile.TemporaryDirectory(prefix="regsurvey-probe-") as scratch:
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():  # (Python 3.12 warns of a fork beside threads: the child runs none)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: says everything into ``said``, then ends without Python's exit handlers
            try:
                _probe_child(target, said.fileno(), scratch)
            finally:
                os._exit(0)
        reaped = False
        try:
            reaped = _reaped(pid, _PROBE_TIMEOUT_S)
        finally:  # (past the time-out, or Ctrl-C: the child goes too; never a pid reaped, which may be reused)
            if not reaped:
                _ended(pid)
        said.seek(0)
        text = said.read().decode(errors="replace")
    why = _does_not_know(target, text)
    built_for = next((line.removeprefix(_BUILT_FOR) for line in text.splitlines() if line.startswith(_BUILT_FOR)),
                     None)
    if why is None and built_for and not re.search(rf"-{re.escape(str(target.arch))}(?::|$)", built_for):
        why = f"its LLVM built for {built_for}, not {target.arch}"
    return why


def _probe_child(target: Target, said: int, scratch: str) -> None:
    """In the probe's child: :func:`_probe_compile`, everything it prints and the exception it raises (if any)
    into the file descriptor ``said`` (its stdout and stderr too: LLVM and MLIR write to the process's
    stderr), and the processor an AMD build is for."""
    os.dup2(said, 1)
    os.dup2(said, 2)
    with open(said, "w", closefd=False) as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            texts = _probe_compile(target, scratch)
        except Exception as exc:  # whatever the compile raised: read with what it printed
            print(f"\n{type(exc).__name__}: {exc}", flush=True)
            return
        found = _AMDGCN_TARGET.search(texts.get(AMDGCN, ""))
        if found:
            print(f"\n{_BUILT_FOR}{found[1]}", flush=True)


def _reaped(pid: int, timeout: float) -> bool:
    """Whether child ``pid`` ended and was reaped within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
        time.sleep(0.002)
    return False


def _ended(pid: int) -> None:
    """Child ``pid``, not yet reaped, killed and reaped."""
    with contextlib.suppress(ChildProcessError, ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _probe_compile(target: Target, scratch: str) -> dict[str, Any]:
    """:data:`_PROBE_TTIR` compiled for ``target`` by Triton's own stages (``backend.add_stages``), in order
    from its IR as ``triton.compile`` takes an IR file (written in ``scratch``), with nothing read from or
    written to its cache; each stage's output by its name (``ttgir`` ... ``hsaco`` or ``cubin``)."""
    import inspect

    from triton._C.libtriton import ir
    from triton.compiler.compiler import IRSource, make_backend

    gpu = gpu_target(target)
    backend = make_backend(gpu)
    path = os.path.join(scratch, "regsurvey_probe.ttir")
    with open(path, "w") as f:
        f.write(_PROBE_TTIR)
    context = ir.context()
    source = IRSource(path, context, backend)
    options = backend.parse_options(source.parse_options())
    metadata: dict[str, Any] = {"target": gpu, **options.__dict__}
    stages: dict[str, Callable[[Any, dict[str, Any]], Any]] = {}
    backend.add_stages(stages, options, source.language)
    made = {"options": options, "codegen_fns": backend.get_codegen_implementation(options),
            "module_map": backend.get_module_map(), "context": context}
    if "target" in inspect.signature(source.make_ir).parameters:  # (Triton 3.5 on)
        made["target"] = gpu
    module = source.make_ir(**made)
    texts: dict[str, Any] = {}
    for name in list(stages)[list(stages).index(source.ext) + 1:]:
        module = texts[name] = stages[name](module, metadata)
    return texts


def _does_not_know(target: Target, said: str) -> str | None:
    """What :data:`_DOES_NOT_KNOW` finds in ``said``, in its words; None where nothing does."""
    for pattern, words in _DOES_NOT_KNOW:
        found = pattern.search(said)
        if found:
            ptxas = _ptxas_named(target, said) if "{ptxas}" in words else ""
            return words.format(*(group.strip() for group in found.groups()), vendor=target.vendor, ptxas=ptxas)
    return None


# Triton's message of a failed ptxas run ends with the command it ran, the ptxas first.
_PTXAS_COMMAND = re.compile(r"Repro command: (\S+)")


def _ptxas_named(target: Target, said: str) -> str:
    """The ptxas that refused the arch, as a refusal names it: ``CUDA 12.8 ptxas``, and its path where it is
    not Triton's own (``TRITON_PTXAS_PATH`` and the like). The one Triton's message names, else the one it
    runs for the target."""
    import subprocess

    import triton

    command = _PTXAS_COMMAND.search(said)
    try:
        path = command[1] if command else ptxas_path(int(target.arch))
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except Exception:  # (none to ask: it says nothing of its release)
        return "ptxas"
    found = re.search(r"release (\d+\.\d+)", version)
    named = f"CUDA {found[1]} ptxas" if found else "ptxas"
    own = os.path.dirname(os.path.realpath(triton.__file__)) + os.sep
    return named if os.path.realpath(path).startswith(own) else f"{named} {path}"


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


class _NotLaunched:
    """What an offline capture's launch returns for the kernel it did not compile: launching it again does
    nothing."""

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def install_launch_recorder(record: Callable[[Any, tuple, dict, Any, str | None], None],
                            offline_target: Target | None = None) -> None:
    """Make every ``JITFunction.run`` of this process report its launch to ``record``.

    ``record(jit_function, args, kwargs, grid, specialization_data)`` is called for each launch, with
    Triton's specialization JSON when this launch compiled (None when it hit Triton's in-process
    cache). A warmup (``fn.warmup(...)``) is a launch too, as in a survey: a launcher that warms a
    kernel up and then launches the compiled kernel itself (``kernel[grid](...)``, which bypasses
    ``JITFunction.run``) is recorded by its warmup. With ``offline_target``, a stub driver stands in
    for a GPU: launches are not compiled or run, and report their specialization for that target; a
    warmup is compiled for that target, so that it returns Triton's compiled kernel, as on a GPU.
    """
    from triton import knobs
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    original = JITFunction.run
    compiled: list[str] = []

    def hook(*, key: Any, repr: str, fn: Any, compile: dict, is_manual_warmup: bool,
             already_compiled: bool) -> bool:
        compiled.append(compile["specialization_data"])
        return offline_target is not None and not is_manual_warmup  # offline: skip compile and launch

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        compiled.clear()
        try:
            kernel = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            record(self, args, dict(kwargs), grid, compiled[-1] if compiled else None)
        # Offline, the launch was skipped and Triton returns None where a GPU returns the kernel it launched;
        # a launcher that keeps it and launches it again itself (FlagGems' LibEntry: kernel[grid](*args))
        # gets one that launches nothing, as that launch, bypassing JITFunction.run, is not recorded on a
        # GPU either.
        return _NotLaunched() if kernel is None and offline_target is not None and not warmup else kernel

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


class LLVMOptionsUnsupported(RuntimeError):
    """The installed Triton cannot compile LLVM IR with LLVM options of one compile's own."""


def recompile_llir(llir: str, arch: str, flags: list[str], fp_fusion: bool) -> tuple[bytes, str]:
    """An AMD build's LLVM IR (as Triton made it, stored with its object) compiled to an hsaco again, with
    the LLVM command-line options ``flags`` (``amdgpu-use-amdgpu-trackers``): Triton's own last two stages
    (``make_amdgcn``, ``make_hsaco``) with other flags. The object and its assembly.

    Triton 3.9's AMD code generator takes the options per compile (``compile_amdgpu``: set for that call,
    then reset); earlier releases set them for the whole process and never unset them: refused there
    (LLVMOptionsUnsupported). Run in a process of its own all the same (``compile.llvm_options``): compiles
    with other options must not run beside it."""
    import tempfile

    import triton
    from triton._C.libtriton import amd
    from triton.backends.amd import compiler as amd_compiler

    compile_amdgpu = getattr(amd_compiler, "compile_amdgpu", None)
    triple = getattr(amd_compiler, "get_amd_codegen_target_triple", None)
    if compile_amdgpu is None or triple is None:
        raise LLVMOptionsUnsupported(f"Triton {triton.__version__} sets LLVM's options for its whole process, not "
                                     f"per compile (Triton 3.9's AMD code generator does)")
    assembly = compile_amdgpu(llir, triple(arch), arch, "", flags=list(flags), enable_fp_fusion=fp_fusion,
                              disable_optimization=False, canonicalize_gep=False, disabled_passes="", dump_ir=False,
                              enable_timing=False)
    relocatable = amd_compiler.assemble_amdgcn(assembly, arch, "")
    with tempfile.TemporaryDirectory(prefix="regsurvey-llvm-") as scratch:
        source, linked = os.path.join(scratch, "in.o"), os.path.join(scratch, "out.hsaco")
        with open(source, "wb") as f:
            f.write(relocatable)
        amd.link_hsaco(source, linked)
        with open(linked, "rb") as f:
            return f.read(), assembly


def jit_dependency_files(kernel: Any) -> set[str]:
    """The source files of a launched kernel and of every ``@triton.jit`` function it calls, as Triton's
    own dependency walk finds them for its cache key: the names its code refers to, looked up in its
    globals (a module's attributes too) and its closure, followed into each jit function found."""
    from triton.runtime.jit import JITCallable

    files: set[str] = set()
    todo = [kernel]
    seen: set[int] = set()
    while todo:
        fn = todo.pop()
        try:
            fn = innermost_jit_function(fn)
        except TypeError:
            continue
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        code = getattr(getattr(fn, "fn", None), "__code__", None)
        if code is None:
            continue
        files.add(code.co_filename)
        scope = dict(getattr(fn.fn, "__globals__", {}))
        for cell, name in zip(fn.fn.__closure__ or (), code.co_freevars):
            with contextlib.suppress(ValueError):
                scope[name] = cell.cell_contents
        names = set(code.co_names) | set(code.co_freevars)
        for name in names:
            value = scope.get(name)
            if isinstance(value, JITCallable) or hasattr(value, "fn"):
                todo.append(value)
            elif isinstance(value, types.ModuleType):
                todo.extend(v for n in names if isinstance(v := getattr(value, n, None), JITCallable))
    return files
