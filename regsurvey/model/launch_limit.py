"""Why a build cannot launch, as its figures say it: one workgroup (thread block) needs more than one CU
(SM) of its target has.

A build's occupancy is 0 when not even one workgroup fits (``objects.amd_object.amd_occupancy``,
``objects.nvidia_object.nvidia_occupancy_blocks``): its LDS or shared memory is above what a workgroup may
have, or its registers, times the waves or warps of a workgroup, are above the register file. This module
finds which of these the row's own figures show, against the target's record (``model.targets``), so that a
report can say it: ``LDS 205744 B, above the CU's 163840 B``. The occupancy rules stay in the readers; the
tests check that these limits agree with them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .figures import OCCUPANCY, figure
from .results import Row
from .targets import TARGETS, Target


@dataclass(frozen=True)
class LaunchLimit:
    """The figure that keeps a build from launching, its value and the most its target allows."""

    figure: str  # lds_bytes, shared_bytes (memory); vgpr_total, vgpr, sgpr, regs (registers)
    value: int
    limit: int
    bound: str  # whose limit, in words, with the limit: "the CU's 163840 B", "the 128 a thread may hold in ..."

    def describe(self, values: str | None = None) -> str:
        """``LDS 205744 B, above the CU's 163840 B``; ``values`` in place of the value (a summary's range)."""
        fig = figure(self.figure)
        return f"{fig.noun} {values if values is not None else self.value}{fig.unit}, above {self.bound}"


def stops_launching(name: str, before: int | None, after: int | None) -> bool:
    """Whether figure ``name`` is an occupancy that fell to 0 from more: the build launched before, and
    cannot now (one workgroup needs more LDS, shared memory or registers than a CU or SM has)."""
    return figure(name).kind == OCCUPANCY and after == 0 and (before or 0) > 0


def _align(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def _align_down(value: int, granule: int) -> int:
    return value // granule * granule


def shared_limit(target: Target) -> int:
    """The most LDS (AMD: the CU's, which one workgroup may have whole) or shared memory (NVIDIA: what a
    block may use, the SM's less the driver's reserve per block) a build of ``target`` may use and launch."""
    if target.is_amd:
        return target.max_lds_per_workgroup
    return target.shared_bytes_per_cu - target.device.reserved_shared_memory_per_block


def register_limit(target: Target, num_warps: int) -> int:
    """The most registers a lane (AMD: unified VGPRs) or thread (NVIDIA) may hold for one workgroup of
    ``num_warps`` waves (warps) to fit on a CU (SM) of ``target``.

    AMD: a workgroup's waves spread over the SIMDs, each SIMD holding ``regs_per_lane`` registers a lane in
    granules; NVIDIA: a warp's registers are allocated in granules, the block's warps spread over the
    register file's sub-partitions, at most ``max_regs_per_thread``."""
    if target.is_amd:
        waves_per_simd = -(-num_warps // target.simds_per_cu)
        return min(target.max_vgprs_per_wave,
                   _align_down(target.regs_per_lane // waves_per_simd, target.reg_alloc_granule))
    per_warp = target.regs_per_lane // _align(num_warps, target.reg_sub_partitions)
    return min(target.max_regs_per_thread, _align_down(per_warp, target.reg_alloc_granule) // target.warp_size)


def sgpr_limit(target: Target, num_warps: int) -> int:
    """AMD: the most SGPRs a wave may hold for one workgroup of ``num_warps`` waves to fit on a CU (each wave
    takes its SGPRs in granules, plus the trap handler's); 0 where the target counts none."""
    if not target.sgprs_per_simd:
        return 0
    waves_per_simd = -(-num_warps // target.simds_per_cu)
    return _align_down(target.sgprs_per_simd // waves_per_simd - target.trap_sgprs, target.sgpr_alloc_granule)


def launch_limit(row: Row) -> LaunchLimit | None:
    """What keeps ``row``'s build from launching, where its figures show it: its LDS or shared memory first,
    then its registers (for a workgroup of its ``num_warps``); None where they show nothing over a limit (a
    register count the kernel descriptor raised: ``waves_per_eu``; a warp-specialized kernel's warps, more
    than the launch's), the target is unknown, or the build did not build."""
    target = TARGETS.get(row.target)
    if target is None or not row.ok:
        return None
    memory = "lds_bytes" if target.is_amd else "shared_bytes"
    limit = shared_limit(target)
    value = row.resources.get(memory)
    if value is not None and value > limit:
        return LaunchLimit(memory, value, limit, f"the {limit} B a workgroup may have" if target.lds_per_workgroup
                           else f"the CU's {limit} B" if target.is_amd else f"the {limit} B a block may use")
    if not row.num_warps:
        return None
    waves = f"workgroup of {row.num_warps} waves" if target.is_amd else f"block of {row.num_warps} warps"
    registers = ("vgpr_total" if "vgpr_total" in row.resources else "vgpr") if target.is_amd else "regs"
    checks = [(registers, register_limit(target, row.num_warps), "a lane" if target.is_amd else "a thread")]
    if target.sgprs_per_simd:
        checks.append(("sgpr", sgpr_limit(target, row.num_warps), "a wave"))
    for name, most, holder in checks:
        value = row.resources.get(name)
        if value is not None and value > most:
            return LaunchLimit(name, value, most, f"the {most} {holder} may hold in a {waves}")
    return None


__all__ = ["LaunchLimit", "launch_limit", "register_limit", "sgpr_limit", "shared_limit", "stops_launching"]
