"""What ``nvidia-smi``, ``amd-smi`` and ``rocm-smi`` print on the target's GPU: the command stand-ins'
logic (``compile.management`` writes the scripts that run it, with the target's facts).

Standard library only: a script loads this file by its path, without regsurvey's package or torch, so that
a library that runs the command waits milliseconds, not seconds. Each tool answers its common queries:

- ``nvidia-smi``: ``--query-gpu=FIELDS --format=csv[,noheader][,nounits]`` (``-i 0``), ``-L``, ``--version``,
  and a bare call (a short summary with the driver and CUDA versions); settings (``-pm``, ``-lgc`` ...)
  change nothing and say so.
- ``amd-smi``: ``list`` and ``static`` (``--asic``, ``--vram``), as text or ``--json``.
- ``rocm-smi``: ``--showproductname``, ``--showid``, ``--showmeminfo vram``, as text or ``--json``.

Other queries print what is answered and exit 2. On the other vendor's target each tool fails as it does
on a machine whose GPU is not its vendor's.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_NVIDIA_FIELDS = {  # field -> (header unit, value)
    "name": ("", lambda f: f["name"]),
    "gpu_name": ("", lambda f: f["name"]),
    "compute_cap": ("", lambda f: f["compute_cap"]),
    "memory.total": ("MiB", lambda f: f["memory_total_mib"]),
    "memory.reserved": ("MiB", lambda f: f["memory_reserved_mib"]),
    "memory.free": ("MiB", lambda f: f["memory_total_mib"] - f["memory_reserved_mib"]),
    "memory.used": ("MiB", lambda f: 0),
    "driver_version": ("", lambda f: f["driver_version"]),
    "pci.device_id": ("", lambda f: f"0x{f['pci_device_id']:04X}10DE"),
    "clocks.max.sm": ("MHz", lambda f: f["clock_sm_mhz"]),
    "clocks.max.graphics": ("MHz", lambda f: f["clock_sm_mhz"]),
    "clocks.max.gr": ("MHz", lambda f: f["clock_sm_mhz"]),
    "clocks.max.memory": ("MHz", lambda f: f["clock_memory_mhz"]),
    "clocks.max.mem": ("MHz", lambda f: f["clock_memory_mhz"]),
    "uuid": ("", lambda f: f["uuid"]),
    "gpu_uuid": ("", lambda f: f["uuid"]),
    "count": ("", lambda f: 1),
    "index": ("", lambda f: 0),
}
_NVIDIA_SETTINGS = ("-pm", "--persistence-mode", "-lgc", "--lock-gpu-clocks", "-rgc", "--reset-gpu-clocks",
                    "-lmc", "--lock-memory-clocks", "-rmc", "--reset-memory-clocks", "-ac", "-rac", "-pl",
                    "--applications-clocks", "--power-limit")
_AMD_VENDOR = "Advanced Micro Devices Inc. [AMD/ATI]"


def main(tool: str, facts: dict[str, Any], argv: list[str]) -> int:
    """Answer one invocation of ``tool`` with ``argv`` on the GPU ``facts`` describe; the exit status."""
    amd_tool = tool != "nvidia-smi"
    if amd_tool != (facts["vendor"] == "amd"):
        return _no_driver(tool)
    answer = {"nvidia-smi": _nvidia_smi, "amd-smi": _amd_smi, "rocm-smi": _rocm_smi}[tool]
    return answer(facts, argv)


def _no_driver(tool: str) -> int:
    if tool == "nvidia-smi":
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.")
        return 9
    print(f"{tool}: no AMD GPU found (the amdgpu driver is not loaded)", file=sys.stderr)
    return 1


def _unanswered(tool: str, facts: dict[str, Any], argv: list[str], answers: str) -> int:
    print(f"regsurvey's {tool} stand-in for {facts['target']} does not answer {' '.join(argv) or '(no arguments)'}; "
          f"it answers {answers}", file=sys.stderr)
    return 2


def _option(argv: list[str], name: str) -> str | None:
    """``--name=value`` or ``--name value`` (also a short ``-i 0``), else None."""
    for i, arg in enumerate(argv):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _nvidia_smi(facts: dict[str, Any], argv: list[str]) -> int:
    gpu = _option(argv, "-i") or _option(argv, "--id")
    if gpu not in (None, "0"):
        print(f"No devices were found matching the id {gpu}", file=sys.stderr)
        return 6
    if any(arg in _NVIDIA_SETTINGS or arg.split("=")[0] in _NVIDIA_SETTINGS for arg in argv):
        print(f"regsurvey's nvidia-smi stand-in: {' '.join(argv)} changes the GPU's settings; "
              "there is no GPU to change while surveying", file=sys.stderr)
        return 0
    query = _option(argv, "--query-gpu")
    if query is not None:
        return _nvidia_query(facts, query.split(","), (_option(argv, "--format") or "").split(","))
    if argv in (["-L"], ["--list-gpus"]):
        print(f"GPU 0: {facts['name']} (UUID: {facts['uuid']})")
        return 0
    if argv == ["--version"]:
        print(f"NVIDIA-SMI version  : {facts['driver_version']}\nDRIVER version      : {facts['driver_version']}\n"
              f"CUDA Version        : {_cuda_version(facts)}")
        return 0
    if not argv:
        print(f"NVIDIA-SMI {facts['driver_version']}    Driver Version: {facts['driver_version']}    "
              f"CUDA Version: {_cuda_version(facts)}\n"
              f"GPU 0: {facts['name']}  {facts['memory_total_mib']}MiB")
        return 0
    return _unanswered("nvidia-smi", facts, argv, "--query-gpu, -L, --version and a bare call")


def _cuda_version(facts: dict[str, Any]) -> str:
    version = int(facts["cuda_driver_version"])
    return f"{version // 1000}.{version % 1000 // 10}"


def _nvidia_query(facts: dict[str, Any], fields: list[str], form: list[str]) -> int:
    if "csv" not in form:
        print('"--format" requires "csv"', file=sys.stderr)
        return 2
    fields = [field.strip() for field in fields if field.strip()]
    for field in fields:
        if field not in _NVIDIA_FIELDS:
            print(f'Field "{field}" is not a valid field to query.', file=sys.stderr)
            return 2
    units = "nounits" not in form
    if "noheader" not in form:
        print(", ".join(field + (f" [{_NVIDIA_FIELDS[field][0]}]" if _NVIDIA_FIELDS[field][0] else "")
                        for field in fields))
    values = []
    for field in fields:
        unit, value = _NVIDIA_FIELDS[field]
        values.append(f"{value(facts)}" + (f" {unit}" if unit and units else ""))
    print(", ".join(values))
    return 0


def _asic(facts: dict[str, Any]) -> dict[str, Any]:
    return {"market_name": facts["name"], "vendor_id": "0x1002", "vendor_name": _AMD_VENDOR,
            "device_id": f"0x{facts['pci_device_id']:04x}", "target_graphics_version": facts["gfx_version"],
            "num_compute_units": facts["compute_units"]}


def _amd_smi(facts: dict[str, Any], argv: list[str]) -> int:
    as_json = "--json" in argv
    words = [arg for arg in argv if arg not in ("--json", "-g", "0", "--gpu", "--gpu=0")]
    if words[:1] == ["list"] and len(words) == 1:
        listed = {"gpu": 0, "bdf": "0000:00:00.0", "uuid": facts["uuid"]}
        print(json.dumps([listed], indent=4) if as_json else
              f"GPU: 0\n    BDF: {listed['bdf']}\n    UUID: {listed['uuid']}\n")
        return 0
    if words[:1] == ["static"] and set(words[1:]) <= {"--asic", "-a", "--vram", "-v"}:
        parts = set(words[1:]) or {"--asic", "--vram"}
        entry: dict[str, Any] = {"gpu": 0}
        if parts & {"--asic", "-a"}:
            entry["asic"] = _asic(facts)
        if parts & {"--vram", "-v"}:
            entry["vram"] = {"type": facts["vram_type"],
                             "size": {"value": facts["vram_bytes"] // (1 << 20), "unit": "MB"}}
        if as_json:
            print(json.dumps([entry], indent=4))
        else:
            print("GPU: 0")
            for section in ("asic", "vram"):
                if section in entry:
                    print(f"    {section.upper()}:")
                    for name, value in entry[section].items():
                        shown = f"{value['value']} {value['unit']}" if isinstance(value, dict) else value
                        print(f"        {name.upper()}: {shown}")
        return 0
    return _unanswered("amd-smi", facts, argv, "list and static (--asic, --vram), with or without --json")


def _rocm_smi(facts: dict[str, Any], argv: list[str]) -> int:
    as_json = "--json" in argv
    words = [arg for arg in argv if arg != "--json"]
    answers: dict[str, str] = {}
    for word in words:
        if word == "--showproductname":
            answers.update({"Card Series": facts["name"], "Card Model": f"0x{facts['pci_device_id']:04x}",
                            "Card Vendor": _AMD_VENDOR, "GFX Version": facts["gfx_version"]})
        elif word in ("--showid", "-i"):
            answers["Device ID"] = f"0x{facts['pci_device_id']:04x}"
        elif word == "--showmeminfo":
            continue
        elif word == "vram" and "--showmeminfo" in words:
            answers["VRAM Total Memory (B)"] = str(facts["vram_bytes"])
            answers["VRAM Total Used Memory (B)"] = "0"
        else:
            return _unanswered("rocm-smi", facts, argv, "--showproductname, --showid and --showmeminfo vram")
    if not answers:
        return _unanswered("rocm-smi", facts, argv, "--showproductname, --showid and --showmeminfo vram")
    if as_json:
        print(json.dumps({"card0": answers}))
    else:
        for name, value in answers.items():
            print(f"GPU[0]\t\t: {name}: \t{value}")
    return 0
