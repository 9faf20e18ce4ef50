"""The vendors' management interfaces, answering as on the target's GPU while a survey runs.

Some libraries find their GPU without torch: vLLM picks its platform through NVML (its own copy of
``pynvml``) and AMD SMI (``amdsmi``), and Triton's ``testing`` asks ``nvidia-smi`` for clocks. On a
machine with no GPU those find nothing, and the library then builds for no GPU at all (vLLM: NVIDIA's
tiles, no ``waves_per_eu`` and OCP fp8 on gfx942). Under :func:`standing_in` they answer what the
target's GPU answers (``model.targets.ManagementFacts`` and ``DeviceProperties``), whether or not their
packages are installed:

- **NVML**: ``ctypes.CDLL("libnvidia-ml.so.1")`` gives :mod:`.nvml_standin`'s library, which answers the C functions
  every ``pynvml`` (nvidia-ml-py's, a library's vendored copy, torch's own NVML calls) goes through. A copy
  already loaded is pointed at it too. On an AMD target the library is missing, as it is on such a machine.
- **AMD SMI**: ``import amdsmi`` gives :mod:`regsurvey.compile.amdsmi_standin` on an AMD target; on an
  NVIDIA target the package is missing.
- **The commands**: ``nvidia-smi``, ``amd-smi`` and ``rocm-smi`` first on ``PATH`` answer their common
  queries (``--query-gpu``, ``-L``; ``static``/``list``; ``--showproductname``); the other vendor's says
  that it cannot reach its driver, as it does on such a machine.

- **Compiled extensions** linked against a GPU machine's libraries (the driver's ``libcuda.so.1``, torch's
  GPU build): they import as :class:`UnloadedExtension`, as they import on the GPU (vLLM's CUDA platform
  imports one unconditionally); using one raises, naming it.

A query they cannot answer is recorded (``standin_state.unanswered``), and :func:`no_gpu_signs` says what
a library that ran concluded when that was not the target's GPU, so that a survey can warn.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import json
import os
import shutil
import stat
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from typing import Any

from ..model.targets import Target
from . import amdsmi_standin
from .nvml_standin import NVML_LIBRARY
from .standin_state import active_target, facts, set_active_target, unanswered, uuid

_NVML_NAMES = ("libnvidia-ml.so", "nvml.dll")
_AMD_SMI_NAMES = ("libamd_smi.so", "librocm_smi64.so")


def _library_kind(name: Any) -> str | None:
    base = os.path.basename(str(name or ""))
    if base.startswith(_NVML_NAMES):
        return "nvml"
    if base.startswith(_AMD_SMI_NAMES):
        return "amdsmi"
    return None


def _loading(original: type) -> type:
    """``ctypes.CDLL`` as a survey sees it: the vendor management libraries by name are the stand-ins
    (or missing, on the other vendor's target); every other library loads as before."""

    class CDLL(original):  # type: ignore[misc, valid-type]
        def __new__(cls, name: Any, *args: Any, **kwargs: Any) -> Any:
            kind = _library_kind(name)
            target = active_target()
            if kind is None or target is None:
                return super().__new__(cls)
            if kind == "nvml" and target.is_nvidia:
                return NVML_LIBRARY
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    CDLL.__qualname__ = CDLL.__name__ = original.__name__
    CDLL.__module__ = original.__module__
    return CDLL


def _nvml_copies() -> list[Any]:
    """Loaded modules that are a copy of pynvml (nvidia-ml-py's, or vendored: vllm.third_party.pynvml)."""
    copies = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if namespace and "_LoadNvmlLibrary" in namespace and "nvmlLib" in namespace:
            copies.append(module)
    return copies


@contextlib.contextmanager
def _nvml_copies_pointed(target: Target) -> Iterator[None]:
    """A pynvml copy imported before the survey bound ``CDLL`` then: point its library at the stand-in."""
    pointed = []
    for module in _nvml_copies():
        previous = module.nvmlLib
        module.nvmlLib = NVML_LIBRARY if target.is_nvidia else None
        cache = getattr(module, "_nvmlGetFunctionPointer_cache", None)
        if isinstance(cache, dict):
            cache.clear()
        pointed.append((module, previous))
    try:
        yield
    finally:
        for module, previous in pointed:
            if module.nvmlLib is NVML_LIBRARY or module.nvmlLib is None:
                module.nvmlLib = previous


# ---------------------------------------------------------------------------------------------------------
# The commands: small scripts first on PATH, each answering from the facts written into it.

_SCRIPT = '''#!{python} -S
# regsurvey's stand-in for {tool} on {target} (regsurvey/compile/management.py): what the GPU answers.
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("regsurvey_smi_commands", {logic!r})
smi_commands = importlib.util.module_from_spec(spec)
spec.loader.exec_module(smi_commands)
sys.exit(smi_commands.main({tool!r}, json.loads({facts!r}), sys.argv[1:]))
'''


def command_facts(target: Target) -> dict[str, Any]:
    """What the command stand-ins answer for ``target`` (their scripts carry it as JSON)."""
    m, d = facts(target), target.device
    return {
        "target": target.name, "vendor": "nvidia" if target.is_nvidia else "amd", "name": d.name,
        "compute_cap": f"{d.major}.{d.minor}", "memory_total_mib": m.memory_total // (1 << 20),
        "memory_reserved_mib": (m.memory_total - d.total_memory) // (1 << 20),
        "driver_version": m.driver_version, "cuda_driver_version": m.cuda_driver_version,
        "pci_device_id": m.pci_device_id, "uuid": uuid(target),
        "clock_sm_mhz": d.clock_rate // 1000, "clock_memory_mhz": d.memory_clock_rate // 1000,
        "gfx_version": str(target.arch) if target.is_amd else "", "compute_units": target.physical_compute_units,
        "vram_bytes": m.memory_total, "vram_type": m.vram_type,
    }


_COMMANDS = ("nvidia-smi", "amd-smi", "rocm-smi")
_command_dirs: dict[str, str] = {}
_command_parent: str | None = None  # where the directories go; None: the temporary directory


def keep_commands_in(directory: str | None) -> None:
    """Make this process's command stand-ins under ``directory`` (a Ray actor's own directory, removed when
    the actor ends, or swept when it was killed), not in the temporary directory."""
    global _command_parent
    _command_parent = directory
    _command_dirs.clear()


def _command_dir(target: Target) -> str:
    """A directory of this process holding the command stand-ins for ``target`` (made once;
    ``regsurvey-smi-TARGET-PID-*``, removed at exit, and by the next process to make one if this one was
    killed first)."""
    if target.name in _command_dirs and os.path.isdir(_command_dirs[target.name]):
        return _command_dirs[target.name]
    parent = _command_parent or tempfile.gettempdir()
    _sweep_commands(parent)
    directory = tempfile.mkdtemp(prefix=f"regsurvey-smi-{target.name}-{os.getpid()}-", dir=parent)
    logic = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smi_commands.py")
    data = json.dumps(command_facts(target))
    for tool in _COMMANDS:
        path = os.path.join(directory, tool)
        with open(path, "w") as script:
            script.write(_SCRIPT.format(python=sys.executable, tool=tool, target=target.name, facts=data,
                                        logic=logic))
        os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    _command_dirs[target.name] = directory
    import atexit
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _sweep_commands(parent: str) -> None:
    """Remove the command stand-ins of processes gone (killed at a time-out: their exit handlers never ran)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        parts = name.split("-")  # regsurvey-smi-TARGET-PID-RANDOM
        if len(parts) != 5 or parts[:2] != ["regsurvey", "smi"] or not parts[3].isdigit():
            continue
        pid = int(parts[3])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        except (PermissionError, OverflowError):
            continue


# ---------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _module_as(name: str, module: Any) -> Iterator[None]:
    """``sys.modules[name]`` is ``module`` inside (None: ``import name`` raises ImportError)."""
    missing: Any = object()
    previous = sys.modules.get(name, missing)
    sys.modules[name] = module
    try:
        yield
    finally:
        if previous is missing:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous


@contextlib.contextmanager
def _set(obj: Any, name: str, value: Any) -> Iterator[None]:
    missing = object()
    previous = getattr(obj, name, missing)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if previous is missing:
            delattr(obj, name)
        else:
            setattr(obj, name, previous)


@contextlib.contextmanager
def standing_in(target: Target) -> Iterator[Target]:
    """NVML, AMD SMI and the smi commands answer as on ``target``'s GPU inside the block (see the module)."""
    previous = set_active_target(target)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_set(ctypes, "CDLL", _loading(ctypes.CDLL)))
            stack.enter_context(_set(ctypes.cdll, "_dlltype", ctypes.CDLL))
            stack.enter_context(_nvml_copies_pointed(target))
            stack.enter_context(_module_as("amdsmi", amdsmi_standin if target.is_amd else None))
            stack.enter_context(_extensions_standing_in())
            path = os.environ.get("PATH", "")
            stack.enter_context(_environment("PATH", _command_dir(target) + (os.pathsep + path if path else "")))
            yield target
    finally:
        set_active_target(previous)


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


# ---------------------------------------------------------------------------------------------------------
# Compiled extensions that need the GPU's driver or a GPU build of torch to load.

# Libraries only a GPU machine has (the driver, the vendor runtimes, torch's GPU builds): an extension
# linked against one of them loads there, and cannot load here.
_GPU_RUNTIME_LIBRARIES = ("libcuda.so", "libcudart.so", "libnvrtc.so", "libtorch_cuda.so", "libc10_cuda.so",
                          "libamdhip64.so", "libhsa-runtime64.so", "libtorch_hip.so", "libc10_hip.so")


class UnloadedExtension(types.ModuleType):
    """A compiled extension that needs a GPU machine's libraries to load: imported as this stand-in under
    a survey, as it imports on the GPU; using anything in it raises, naming the extension and why."""

    def __init__(self, name: str, why: str):
        super().__init__(name)
        self.__regsurvey_unloaded__ = why

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise AttributeError(f"{self.__name__}.{attribute}: the compiled extension {self.__name__} is not loaded "
                             f"while surveying ({self.__regsurvey_unloaded__})")


def _gpu_library_missing(error: ImportError) -> str | None:
    text = str(error)
    for library in _GPU_RUNTIME_LIBRARIES:
        if library in text:
            return f"it needs {library.rsplit('.so', 1)[0]}.so, which only a GPU machine has"
    return None


@contextlib.contextmanager
def _extensions_standing_in() -> Iterator[None]:
    """An extension module that fails to load for want of a GPU machine's library imports as an
    :class:`UnloadedExtension` (and is recorded); every other extension loads, or fails, as before."""
    loader = importlib.machinery.ExtensionFileLoader
    create, execute = loader.create_module, loader.exec_module

    def create_module(self: Any, spec: Any) -> Any:
        try:
            return create(self, spec)
        except ImportError as error:
            why = _gpu_library_missing(error)
            if why is None:
                raise
            return UnloadedExtension(spec.name, why)

    def exec_module(self: Any, module: Any) -> None:
        if not isinstance(module, UnloadedExtension):
            execute(self, module)

    with _set(loader, "create_module", create_module), _set(loader, "exec_module", exec_module):
        yield


# ---------------------------------------------------------------------------------------------------------
# Signs that a library concluded there is no GPU.


def _vllm_platform(target: Target) -> str | None:
    """vLLM's platform, once it has chosen one: it must be the target's vendor's."""
    platforms = sys.modules.get("vllm.platforms")
    chosen = getattr(platforms, "_current_platform", None) if platforms is not None else None
    if chosen is None:
        return None
    expected = "is_rocm" if target.is_amd else "is_cuda"
    with contextlib.suppress(Exception):
        if getattr(chosen, expected)():
            return None
    return (f"vLLM chose {type(chosen).__name__} (vllm.platforms.current_platform), not the "
            f"{'ROCm' if target.is_amd else 'CUDA'} platform of {target.device.name}: it found no GPU")


# Libraries whose choice of platform can be read after a kind body ran: each returns a sentence when the
# choice is not the target's GPU.
_PLATFORM_CHOICES: tuple[Callable[[Target], str | None], ...] = (_vllm_platform,)


def no_gpu_signs(target: Target) -> list[str]:
    """Why a library that ran since the last call may have built for no GPU, one sentence each: a known
    library's platform choice that is not the target's GPU, and each management query the stand-ins did
    not answer (the check that found nothing). Empty when there is no sign."""
    signs = [sign for choice in _PLATFORM_CHOICES if (sign := choice(target)) is not None]
    asked = unanswered()
    if asked:
        signs.append(f"it asked what the survey's stand-ins do not answer ({', '.join(asked)}); "
                     "a library that decides its platform from that may have built for no GPU")
    return signs
