"""``amdsmi`` (AMD SMI's Python package) as a survey of an AMD target sees it: the target's one GPU.

``compile.standin_state.standing_in`` makes this module ``sys.modules["amdsmi"]`` on an AMD target, whether or
not the real package (which needs ROCm's ``libamd_smi.so`` and an amdgpu driver) is installed. It answers
the calls libraries make to find and name their GPU (vLLM's ROCm platform: processor handles, ASIC info,
VRAM, UUID, NUMA node, link type) from ``model.targets``; any other ``amdsmi_*`` function raises
:class:`AmdSmiLibraryException` with AMDSMI_STATUS_NOT_SUPPORTED, and is recorded as a check that found
nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from ..model.targets import Target
from . import standin_state

AMDSMI_STATUS_NOT_SUPPORTED = 2
AMDSMI_STATUS_NOT_INIT = 32


class AmdSmiException(Exception):
    """The base of amdsmi's errors."""


class AmdSmiLibraryException(AmdSmiException):
    """An error status from the library (``err_code``)."""

    def __init__(self, err_code: int, text: str = ""):
        super().__init__(f"Error code:\n\t{err_code} | {text}")
        self.err_code = err_code


class AmdSmiParameterException(AmdSmiException):
    """A call made with an argument of the wrong kind."""


class AmdSmiInitFlags(enum.IntEnum):
    """amdsmi_init's flags."""

    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1
    INIT_NON_AMD_CPUS = 1 << 2
    INIT_NON_AMD_GPUS = 1 << 3
    INIT_AMD_APUS = INIT_AMD_CPUS | INIT_AMD_GPUS


class AmdSmiMemoryType(enum.IntEnum):
    """amdsmi_get_gpu_memory_total's memory kinds."""

    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiLinkType(enum.IntEnum):
    """amdsmi_topo_get_link_type's link kinds."""

    INTERNAL = 0
    XGMI = 1
    PCIE = 2
    NOT_APPLICABLE = 3
    UNKNOWN = 4


class AmdSmiProcessorType(enum.IntEnum):
    """amdsmi_get_processor_type's kinds."""

    UNKNOWN = 0
    AMD_GPU = 1
    AMD_CPU = 2
    NON_AMD_GPU = 3
    NON_AMD_CPU = 4
    AMD_CPU_CORE = 5
    AMD_APU = 6


class _Processor:
    """A processor handle: the one GPU of the target."""

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"<amdsmi processor {self.index} (regsurvey's stand-in)>"


_GPU = _Processor(0)
_VENDOR_NAME = "Advanced Micro Devices Inc. [AMD/ATI]"


def _target() -> Target:
    target = standin_state.active_target()
    if target is None or not target.is_amd:
        raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_INIT, "AMDSMI_STATUS_NOT_INIT - no AMD GPU")
    return target


def _gpu(handle: Any) -> Target:
    if handle is not _GPU:
        raise AmdSmiParameterException(f"{handle!r} is not a processor handle")
    return _target()


def amdsmi_init(flag: int = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
    """Initialise (the stand-in needs nothing)."""
    _target()


def amdsmi_shut_down() -> None:
    """Shut down (nothing to release)."""


def amdsmi_get_processor_handles() -> list[_Processor]:
    """The GPUs: one, as torch's stand-in reports."""
    _target()
    return [_GPU]


def amdsmi_get_processor_type(processor_handle: Any) -> dict[str, Any]:
    """An AMD GPU."""
    _gpu(processor_handle)
    return {"processor_type": AmdSmiProcessorType.AMD_GPU.name}


def amdsmi_get_gpu_asic_info(processor_handle: Any) -> dict[str, Any]:
    """The ASIC's names and IDs: market name, PCI IDs, gfx version, compute units (the CUs, which on RDNA are
    twice HIP's multiprocessors: HIP counts workgroup processors)."""
    target = _gpu(processor_handle)
    facts = standin_state.facts(target)
    return {"market_name": target.device.name, "vendor_id": "0x1002", "vendor_name": _VENDOR_NAME,
            "subvendor_id": "0x1002", "device_id": f"0x{facts.pci_device_id:04x}", "rev_id": "0x00",
            "asic_serial": "0x0000000000000000", "oam_id": 0,
            "num_compute_units": target.physical_compute_units, "target_graphics_version": str(target.arch)}


def amdsmi_get_gpu_board_info(processor_handle: Any) -> dict[str, Any]:
    """The board's product name (serial numbers are one machine's: zeros)."""
    target = _gpu(processor_handle)
    return {"model_number": target.device.name, "product_serial": "0", "fru_id": "0",
            "product_name": target.device.name, "manufacturer_name": "AMD"}


def amdsmi_get_gpu_device_uuid(processor_handle: Any) -> str:
    """The GPU's UUID: one machine's, so zeros (as torch's stand-in)."""
    _gpu(processor_handle)
    return "00000000-0000-0000-0000-000000000000"


def amdsmi_get_gpu_memory_total(processor_handle: Any, mem_type: int) -> int:
    """Bytes of VRAM (the figure torch's ``total_memory`` gives); other memory kinds are not answered."""
    target = _gpu(processor_handle)
    if int(mem_type) not in (AmdSmiMemoryType.VRAM, AmdSmiMemoryType.VIS_VRAM):
        return _not_supported(f"amdsmi_get_gpu_memory_total({int(mem_type)})")
    return standin_state.facts(target).memory_total


def amdsmi_get_gpu_vram_info(processor_handle: Any) -> dict[str, Any]:
    """VRAM kind (HBM on Instinct, GDDR6 or LPDDR5 on Radeon) and size (MB)."""
    target = _gpu(processor_handle)
    facts = standin_state.facts(target)
    return {"vram_type": facts.vram_type, "vram_vendor": "UNKNOWN", "vram_size": facts.memory_total >> 20}


def amdsmi_get_gpu_device_bdf(processor_handle: Any) -> str:
    """The PCI location: one machine's, so zeros."""
    _gpu(processor_handle)
    return "0000:00:00.0"


def amdsmi_get_processor_handle_from_bdf(bdf: str) -> _Processor:
    """The handle at a PCI location (the one GPU is at zeros)."""
    _target()
    if bdf not in ("0000:00:00.0", "00:00.0"):
        raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED, f"no GPU at {bdf}")
    return _GPU


def amdsmi_topo_get_numa_node_number(processor_handle: Any) -> int:
    """NUMA node 0."""
    _gpu(processor_handle)
    return 0


def amdsmi_topo_get_link_type(processor_handle_src: Any, processor_handle_dst: Any) -> dict[str, Any]:
    """The link between two GPUs: the same GPU, internal."""
    _gpu(processor_handle_src), _gpu(processor_handle_dst)
    return {"hops": 0, "type": AmdSmiLinkType.INTERNAL}


def _not_supported(call: str) -> Any:
    standin_state.note_unanswered(f"amdsmi {call}")
    raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED, "AMDSMI_STATUS_NOT_SUPPORTED")


def __getattr__(name: str) -> Callable[..., Any]:
    if not name.startswith("amdsmi_"):
        raise AttributeError(name)

    def not_answered(*args: Any, **kwargs: Any) -> Any:
        return _not_supported(name)

    not_answered.__name__ = name
    return not_answered
