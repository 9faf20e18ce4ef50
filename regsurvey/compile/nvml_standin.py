"""NVML (libnvidia-ml) as a survey of an NVIDIA target sees it: the target's one GPU.

``compile.management.standing_in`` gives :data:`NVML_LIBRARY` for ``ctypes.CDLL("libnvidia-ml.so.1")``: an
object whose attributes are NVML's C functions, answered in Python with ctypes' calling convention (output
arguments by ``byref``, status codes returned). Every ``pynvml`` goes through those functions (nvidia-ml-py's,
a library's vendored copy such as ``vllm.third_party.pynvml``, torch's own NVML calls), so each answers the
same. The answers come from ``model.targets`` (``DeviceProperties``, ``ManagementFacts``); docs/figures.md,
"What a launcher sees", lists them, and ``tests/gpu/nvml_answers.py`` compares them with a real H200's.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from ..model.targets import Target
from .standin_state import active_target, facts, note_unanswered, uuid

# NVML return codes and constants (nvml.h).
NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_NOT_FOUND = 6
_NVML_ERROR_TEXT = {0: b"Success", 2: b"Invalid Argument", 3: b"Not Supported", 6: b"Not Found",
                    7: b"Insufficient Size"}
_NVML_BRAND_NVIDIA = 14  # what the H200 answers
_FP32_CORES_PER_SM = 128  # Hopper and Blackwell: nvmlDeviceGetNumGpuCores = SMs x 128 (16896 on the H200)

_HANDLES = (ctypes.c_char * 8)()  # device i's handle is this buffer's address + i: stable, never dereferenced


def _out(argument: Any) -> Any:
    """The object an output argument points at: ``byref(x)`` or ``pointer(x)`` gives ``x``."""
    if hasattr(argument, "_obj"):
        return argument._obj
    if hasattr(argument, "contents"):
        return argument.contents
    return argument


def _value(argument: Any) -> Any:
    """A by-value argument as Python: ctypes scalars' value, strings as text."""
    value = getattr(argument, "value", argument)
    return value.decode() if isinstance(value, bytes) else value


def _set_handle(argument: Any, index: int) -> None:
    ctypes.c_void_p.from_buffer(_out(argument)).value = ctypes.addressof(_HANDLES) + index


def _device_index(handle: Any) -> int | None:
    address = ctypes.cast(handle, ctypes.c_void_p).value if not isinstance(handle, int) else handle
    index = (address or 0) - ctypes.addressof(_HANDLES)
    return index if index == 0 else None  # one GPU, as torch's stand-in says


def _write_text(buffer: Any, length: Any, text: str) -> int:
    data = text.encode()
    if len(data) + 1 > int(_value(length)):
        return NVML_ERROR_INSUFFICIENT_SIZE
    ctypes.memmove(buffer, data + b"\0", len(data) + 1)
    return NVML_SUCCESS


class NvmlLibrary:
    """What ``ctypes.CDLL("libnvidia-ml.so.1")`` gives under :func:`standing_in` on an NVIDIA target.

    Each attribute is one of NVML's C functions taking ctypes arguments and returning NVML's status
    code; functions not answered here return NVML_ERROR_NOT_SUPPORTED (and are recorded).
    """

    _name = "libnvidia-ml.so.1 (regsurvey's stand-in)"

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        answer = _NVML_FUNCTIONS.get(name)
        if answer is None:
            def not_supported(*args: Any) -> int:
                note_unanswered(f"NVML {name}")
                return NVML_ERROR_NOT_SUPPORTED
            answer = not_supported
        else:
            answer = _answering(answer)
        # pynvml sets restype/argtypes on what it gets: a fresh function object per lookup takes them.
        return answer

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.__getattr__(name)


def _answering(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        target = active_target()
        if target is None or not target.is_nvidia:
            return NVML_ERROR_NOT_SUPPORTED
        return function(target, *args)
    return call


def _nvml_functions() -> dict[str, Callable[..., Any]]:
    def ok(target: Target, *args: Any) -> int:
        return NVML_SUCCESS

    def error_string(target: Target, code: Any) -> bytes:
        return _NVML_ERROR_TEXT.get(int(_value(code)), b"Unknown Error")

    def count(target: Target, out: Any) -> int:
        _out(out).value = 1
        return NVML_SUCCESS

    def handle_by_index(target: Target, index: Any, out: Any) -> int:
        if int(_value(index)) != 0:
            return NVML_ERROR_INVALID_ARGUMENT
        _set_handle(out, 0)
        return NVML_SUCCESS

    def handle_by_uuid(target: Target, text: Any, out: Any) -> int:
        if _value(text) != uuid(target):
            return NVML_ERROR_NOT_FOUND
        _set_handle(out, 0)
        return NVML_SUCCESS

    def handle_by_bus(target: Target, text: Any, out: Any) -> int:
        if str(_value(text)).lower() not in ("00000000:00:00.0", "0000:00:00.0"):
            return NVML_ERROR_NOT_FOUND
        _set_handle(out, 0)
        return NVML_SUCCESS

    def device(function: Callable[..., int]) -> Callable[..., int]:
        def on_device(target: Target, handle: Any, *args: Any) -> int:
            if _device_index(handle) is None:
                return NVML_ERROR_INVALID_ARGUMENT
            return function(target, *args)
        return on_device

    def text(value: Callable[[Target], str]) -> Callable[..., int]:
        return lambda target, buffer, length: _write_text(buffer, length, value(target))

    def number(value: Callable[[Target], int]) -> Callable[..., int]:
        def answer(target: Target, out: Any) -> int:
            _out(out).value = value(target)
            return NVML_SUCCESS
        return answer

    def capability(target: Target, major: Any, minor: Any) -> int:
        _out(major).value, _out(minor).value = target.device.major, target.device.minor
        return NVML_SUCCESS

    def memory(target: Target, out: Any) -> int:
        struct, total = _out(out), facts(target).memory_total
        reserved = total - target.device.total_memory
        if hasattr(struct, "reserved"):  # nvmlMemory_v2_t
            struct.total, struct.reserved, struct.free, struct.used = total, reserved, total - reserved, 0
        else:  # nvmlMemory_t: the reserve counts as used
            struct.total, struct.free, struct.used = total, total - reserved, reserved
        return NVML_SUCCESS

    def pci(target: Target, out: Any) -> int:
        struct = _out(out)
        for name, value in (("busIdLegacy", b"0000:00:00.0"), ("busId", b"00000000:00:00.0"), ("domain", 0),
                            ("bus", 0), ("device", 0),
                            ("pciDeviceId", facts(target).pci_device_id << 16 | 0x10DE),
                            ("pciSubSystemId", facts(target).subsystem_id)):
            if hasattr(struct, name):
                setattr(struct, name, value)
        return NVML_SUCCESS

    def max_clock(target: Target, kind: Any, out: Any) -> int:
        mhz = {0: target.device.clock_rate, 1: target.device.clock_rate,  # graphics, SM
               2: target.device.memory_clock_rate}.get(int(_value(kind)))  # memory
        if mhz is None:
            note_unanswered(f"NVML nvmlDeviceGetMaxClockInfo({int(_value(kind))})")
            return NVML_ERROR_NOT_SUPPORTED
        _out(out).value = mhz // 1000
        return NVML_SUCCESS

    def architecture(target: Target) -> int:
        # NVML_DEVICE_ARCH_HOPPER 9; _BLACKWELL 10, the data-center parts (10.x) and the RTX ones (12.0) alike
        return {9: 9, 10: 10, 12: 10}.get(target.device.major, 0)

    return {
        "nvmlInit": ok, "nvmlInit_v2": ok, "nvmlInitWithFlags": ok, "nvmlShutdown": ok,
        "nvmlErrorString": error_string,
        "nvmlSystemGetDriverVersion": text(lambda t: facts(t).driver_version),
        "nvmlSystemGetNVMLVersion": text(lambda t: f"{facts(t).cuda_driver_version // 1000}."
                                                   f"{facts(t).driver_version}"),
        "nvmlSystemGetCudaDriverVersion": number(lambda t: facts(t).cuda_driver_version),
        "nvmlSystemGetCudaDriverVersion_v2": number(lambda t: facts(t).cuda_driver_version),
        "nvmlDeviceGetCount": count, "nvmlDeviceGetCount_v2": count,
        "nvmlDeviceGetHandleByIndex": handle_by_index, "nvmlDeviceGetHandleByIndex_v2": handle_by_index,
        "nvmlDeviceGetHandleByUUID": handle_by_uuid,
        "nvmlDeviceGetHandleByPciBusId": handle_by_bus, "nvmlDeviceGetHandleByPciBusId_v2": handle_by_bus,
        "nvmlDeviceGetIndex": device(number(lambda t: 0)),
        "nvmlDeviceGetMinorNumber": device(number(lambda t: 0)),
        "nvmlDeviceGetName": device(text(lambda t: t.device.name)),
        "nvmlDeviceGetUUID": device(text(uuid)),
        "nvmlDeviceGetCudaComputeCapability": device(capability),
        "nvmlDeviceGetArchitecture": device(number(architecture)),
        "nvmlDeviceGetMemoryInfo": device(memory), "nvmlDeviceGetMemoryInfo_v2": device(memory),
        "nvmlDeviceGetPciInfo": device(pci), "nvmlDeviceGetPciInfo_v2": device(pci),
        "nvmlDeviceGetPciInfo_v3": device(pci),
        "nvmlDeviceGetMaxClockInfo": device(max_clock),
        "nvmlDeviceGetMemoryBusWidth": device(number(lambda t: t.device.memory_bus_width)),
        "nvmlDeviceGetMultiGpuBoard": device(number(lambda t: t.device.is_multi_gpu_board)),
        "nvmlDeviceGetComputeMode": device(number(lambda t: 0)),  # NVML_COMPUTEMODE_DEFAULT
        "nvmlDeviceGetBrand": device(number(lambda t: _NVML_BRAND_NVIDIA)),
        "nvmlDeviceGetNumGpuCores": device(number(lambda t: t.device.multi_processor_count * _FP32_CORES_PER_SM)),
    }


_NVML_FUNCTIONS = _nvml_functions()
NVML_LIBRARY = NvmlLibrary()
