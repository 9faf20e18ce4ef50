"""What a launcher may ask about the device a tensor lives on: backend, arch and compute units.

Launchers pick tiles per arch family and size their grids (split-K, KV splits) from the number of
CUs/SMs, as production launchers do. Three cases:

* a GPU tensor (or a 'meta' tensor while regsurvey surveys a target): the active Triton driver's
  target and ``torch.cuda.get_device_properties``;
* a CPU tensor under ``TRITON_INTERPRET=1``: no driver is active, so a small default GPU is assumed
  (few splits keep the interpreter fast; tests force the paths they need explicitly).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# The interpreter has no device: pretend to be a small GPU so grids stay small.
INTERPRETER_COMPUTE_UNITS = 8


@dataclass(frozen=True)
class Device:
    """The facts about a device that launchers' heuristics depend on."""

    backend: str  # "hip", "cuda" or "cpu" (the Triton interpreter)
    arch: str  # "gfx942", "gfx950", "sm90", "sm100" or "cpu"
    compute_units: int  # CUs (AMD) or SMs (NVIDIA)

    @property
    def is_hip(self) -> bool:
        """True on AMD Instinct GPUs."""
        return self.backend == "hip"

    @property
    def family(self) -> str:
        """Tile tables are kept per family: "amd", "nvidia" or "cpu"."""
        return {"hip": "amd", "cuda": "nvidia"}.get(self.backend, "cpu")


def device_of(t: torch.Tensor) -> Device:
    """The device ``t`` lives on (see the module docstring for the interpreter case)."""
    if t.device.type == "cpu":
        return Device("cpu", "cpu", INTERPRETER_COMPUTE_UNITS)
    import triton

    target = triton.runtime.driver.active.get_current_target()
    props = torch.cuda.get_device_properties(t.device)
    arch = str(target.arch) if target.backend == "hip" else f"sm{target.arch}"
    return Device(target.backend, arch, int(props.multi_processor_count))


def fp8_max(dtype: torch.dtype) -> float:
    """Largest finite value of an fp8 format: 448 for e4m3fn (OCP), 240 for e4m3fnuz (gfx942)."""
    return float(torch.finfo(dtype).max)


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << (max(int(n), 1) - 1).bit_length()


def width_bucket(rows: int) -> int:
    """The row bucket tile tables are keyed by: 1, 2, 4, 8, then 16 for anything larger.

    Like the per-M config files of production MoE/GEMM launchers, tiles are tuned per decode width.
    """
    return min(next_power_of_2(rows), 16)
