"""What NVML and nvidia-smi answer, read the same way from the real library (on the H200) and from
regsurvey's stand-in (``compile.management``, under a survey of sm90): the second reading of the NVML answers.

On the GPU machine, ``python3 tests/gpu/nvml_answers.py > tests/gpu/nvml-h200.json`` regenerates the fixture
(``benchmarks/device_run.sh nvml`` does it and compares the live answers with the stand-in's);
``tests/compile/test_management.py`` compares the stand-in's answers with the fixture.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from typing import Any

# Answers that belong to one machine, not to the GPU model: the stand-in gives zeros (as torch's stand-in
# does for the UUID and PCI location), or does not answer (board serials, the VBIOS, the NUMA node).
MACHINE_SPECIFIC = ("nvmlDeviceGetUUID", "nvmlDeviceGetSerial", "nvmlDeviceGetBoardPartNumber",
                    "nvmlDeviceGetVbiosVersion", "nvmlDeviceGetPciInfo_v3.busId", "nvmlDeviceGetNumaNodeId",
                    "nvidia-smi -L", "nvidia-smi uuid", "nvmlDeviceGetCurrPcieLinkWidth",
                    "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetBusType", "nvmlDeviceGetPowerManagementLimit",
                    "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetMaxClockInfo(3)")

NVIDIA_SMI_QUERIES = (
    ["--query-gpu=name,compute_cap,memory.total,driver_version,pci.device_id,clocks.max.sm,clocks.max.memory,"
     "count,index", "--format=csv"],
    ["-i", "0", "--query-gpu=name,compute_cap,memory.total,clocks.max.sm,clocks.max.memory",
     "--format=csv,noheader,nounits"],
)


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _MemoryV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Pci(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


def nvml_answers(lib: Any) -> dict[str, Any]:
    """NVML's answers about device 0 through ``lib`` (a ``ctypes.CDLL("libnvidia-ml.so.1")``): each C
    function's status code and what it wrote."""
    out: dict[str, Any] = {"nvmlInit_v2": lib.nvmlInit_v2()}
    count = ctypes.c_uint()
    out["nvmlDeviceGetCount_v2"] = [lib.nvmlDeviceGetCount_v2(ctypes.byref(count)), count.value]
    handle = ctypes.c_void_p()
    lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
    buffer = ctypes.create_string_buffer(96)
    for name in ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetBoardPartNumber", "nvmlDeviceGetSerial",
                 "nvmlDeviceGetVbiosVersion"):
        status = getattr(lib, name)(handle, buffer, 96)
        out[name] = [status, buffer.value.decode() if status == 0 else None]
    for name in ("nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion"):
        out[name] = [getattr(lib, name)(buffer, 96), buffer.value.decode()]
    number = ctypes.c_int()
    for name in ("nvmlSystemGetCudaDriverVersion", "nvmlSystemGetCudaDriverVersion_v2"):
        out[name] = [getattr(lib, name)(ctypes.byref(number)), number.value]
    major, minor = ctypes.c_int(), ctypes.c_int()
    out["nvmlDeviceGetCudaComputeCapability"] = [
        lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)), major.value,
        minor.value]
    memory = _Memory()
    out["nvmlDeviceGetMemoryInfo"] = [lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)), memory.total,
                                      memory.free, memory.used]
    memory2 = _MemoryV2(version=0x02000028)
    out["nvmlDeviceGetMemoryInfo_v2"] = [lib.nvmlDeviceGetMemoryInfo_v2(handle, ctypes.byref(memory2)),
                                         memory2.total, memory2.reserved, memory2.free, memory2.used]
    value = ctypes.c_uint()
    for name in ("nvmlDeviceGetArchitecture", "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetMultiGpuBoard",
                 "nvmlDeviceGetComputeMode", "nvmlDeviceGetIndex", "nvmlDeviceGetBrand", "nvmlDeviceGetMinorNumber",
                 "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetCurrPcieLinkWidth",
                 "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetBusType", "nvmlDeviceGetPowerManagementLimit",
                 "nvmlDeviceGetPersistenceMode"):
        value.value = 0
        status = getattr(lib, name)(handle, ctypes.byref(value))
        out[name] = [status, value.value if status == 0 else None]
    for clock in range(4):
        value.value = 0
        status = lib.nvmlDeviceGetMaxClockInfo(handle, clock, ctypes.byref(value))
        out[f"nvmlDeviceGetMaxClockInfo({clock})"] = [status, value.value if status == 0 else None]
    pci = _Pci()
    status = lib.nvmlDeviceGetPciInfo_v3(handle, ctypes.byref(pci))
    out["nvmlDeviceGetPciInfo_v3"] = [status, pci.pciDeviceId, pci.pciSubSystemId]
    out["nvmlDeviceGetPciInfo_v3.busId"] = pci.busId.decode()
    out["nvmlShutdown"] = lib.nvmlShutdown()
    return out


def nvidia_smi_answers() -> dict[str, Any]:
    """What the ``nvidia-smi`` first on PATH prints for the queries libraries make (Triton's ``nvsmi``)."""
    out = {}
    for query in NVIDIA_SMI_QUERIES:
        done = subprocess.run(["nvidia-smi", *query], capture_output=True, text=True, timeout=60)
        out["nvidia-smi " + " ".join(query)] = [done.returncode, done.stdout]
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    out["nvidia-smi -L"] = [done.returncode, done.stdout]
    return out


def answers() -> dict[str, Any]:
    """Everything above, from the NVML and nvidia-smi this process finds."""
    return {**nvml_answers(ctypes.CDLL("libnvidia-ml.so.1")), **nvidia_smi_answers()}


def differences(real: dict[str, Any], stand_in: dict[str, Any]) -> list[str]:
    """The answers that differ, except the machine-specific ones."""
    return [f"{name}: real {real[name]!r}, stand-in {stand_in.get(name)!r}"
            for name in real if name not in MACHINE_SPECIFIC and real[name] != stand_in.get(name)]


def main() -> int:
    """Print this machine's answers as JSON; with ``--compare``, also the stand-in's for sm90 and their
    differences (exit 1 when any)."""
    real = answers()
    if "--compare" not in sys.argv:
        print(json.dumps(real, indent=1))
        return 0
    from regsurvey.compile import management
    from regsurvey.model.targets import get_target

    with management.standing_in(get_target("sm90")):
        stand_in = answers()
    found = differences(real, stand_in)
    print(json.dumps({"real": real, "stand_in": stand_in, "differences": found}, indent=1))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
