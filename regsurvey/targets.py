"""The GPU targets regsurvey compiles for, and the hardware facts their occupancy depends on.

Each target is a frozen record: what Triton needs to compile for it offline (backend, arch, warp size)
and what a launcher may ask about the device (name, compute units), plus the register file and
shared-memory limits that bound how many waves or warps fit on one compute unit.
"""

from __future__ import annotations

from dataclasses import dataclass


class UnknownTargetError(ValueError):
    """A target name that regsurvey does not know."""


@dataclass(frozen=True)
class Target:
    """One compile target, e.g. ``gfx950`` (MI355X) or ``sm90`` (H100/H200, compiled as sm_90a)."""

    name: str
    backend: str  # Triton's backend name: "hip" or "cuda"
    arch: str | int  # Triton's GPUTarget.arch: "gfx950" or 90
    warp_size: int
    device_name: str  # what torch.cuda.get_device_name() would say on this GPU
    compute_units: int  # CUs (AMD) or SMs (NVIDIA): torch's multi_processor_count
    # Register file and scheduling limits.
    regs_per_lane: int  # AMD: VGPRs (+AGPRs) per SIMD lane; NVIDIA: 32-bit registers per SM
    max_waves_per_simd: int  # AMD: waves per SIMD; NVIDIA: warps per SM
    simds_per_cu: int  # AMD: 4 SIMDs per CU; NVIDIA: 1 (limits are per SM)
    max_blocks_per_cu: int  # workgroups / thread blocks resident on one CU or SM
    shared_bytes_per_cu: int  # LDS per CU or shared memory per SM usable by blocks
    sgprs_per_simd: int = 0  # AMD only: SGPRs per SIMD (800 on CDNA3/4)
    torch_hip_version: str | None = None  # what torch.version.hip reports on such a machine

    @property
    def is_amd(self) -> bool:
        """True for AMD Instinct (HIP) targets."""
        return self.backend == "hip"

    @property
    def is_nvidia(self) -> bool:
        """True for NVIDIA (CUDA) targets."""
        return self.backend == "cuda"

    @property
    def arch_string(self) -> str:
        """The arch as a kernel engineer writes it: ``gfx950`` or ``sm_90a``."""
        if self.is_amd:
            return str(self.arch)
        return f"sm_{self.arch}a"


# Hardware facts: AMD CDNA3/CDNA4 ISA guides and ROCm docs (512 unified VGPRs+AGPRs per lane,
# 8 waves per SIMD, 4 SIMDs per CU, LDS 64 KiB on MI300X and 160 KiB on MI355X); NVIDIA's CUDA
# occupancy tables for cc 9.0 and 10.0 (64K registers, 64 warps, 32 blocks, 228 KiB shared per SM).
TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            name="gfx942", backend="hip", arch="gfx942", warp_size=64,
            device_name="AMD Instinct MI300X", compute_units=304,
            regs_per_lane=512, max_waves_per_simd=8, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=64 * 1024, sgprs_per_simd=800, torch_hip_version="6.4.43482",
        ),
        Target(
            name="gfx950", backend="hip", arch="gfx950", warp_size=64,
            device_name="AMD Instinct MI355X", compute_units=256,
            regs_per_lane=512, max_waves_per_simd=8, simds_per_cu=4, max_blocks_per_cu=32,
            shared_bytes_per_cu=160 * 1024, sgprs_per_simd=800, torch_hip_version="7.0.51831",
        ),
        Target(
            name="sm90", backend="cuda", arch=90, warp_size=32,
            device_name="NVIDIA H200", compute_units=132,
            regs_per_lane=65536, max_waves_per_simd=64, simds_per_cu=1, max_blocks_per_cu=32,
            shared_bytes_per_cu=228 * 1024,
        ),
        Target(
            name="sm100", backend="cuda", arch=100, warp_size=32,
            device_name="NVIDIA B200", compute_units=148,
            regs_per_lane=65536, max_waves_per_simd=64, simds_per_cu=1, max_blocks_per_cu=32,
            shared_bytes_per_cu=228 * 1024,
        ),
    )
}

# The device keys files are first imported under when a survey names no target: the matrices declare
# their targets, but only importing the files tells which.
DEFAULT_LIST_TARGET = "sm90"
# A worker target that takes keys of every target from one import: only for measuring what the
# per-target import costs (REGSURVEY_SHARED_IMPORT=1; it gives launchers that cache the device the
# first target's state, which is wrong).
ANY_TARGET = "*"

# Spellings a user may type for a target.
_ALIASES = {
    "mi300x": "gfx942", "mi300": "gfx942", "mi355x": "gfx950", "mi350x": "gfx950",
    "sm_90": "sm90", "sm_90a": "sm90", "sm90a": "sm90", "h100": "sm90", "h200": "sm90",
    "sm_100": "sm100", "sm_100a": "sm100", "sm100a": "sm100", "b200": "sm100",
}


def get_target(name: str) -> Target:
    """Look a target up by name or common alias; raise UnknownTargetError listing the known ones."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in TARGETS:
        raise UnknownTargetError(
            f"unknown target {name!r}; known targets: {', '.join(TARGETS)}"
        )
    return TARGETS[key]
