"""The figures a survey records, and which way each one gets worse: the one table the diff, its
summary and every report read.

A figure whose ``worse`` is ``+1`` is worse when it grows (registers, spills, scratch, stack, LDS or
shared memory), ``-1`` when it shrinks (occupancy: waves per SIMD, warps per SM), and ``0`` when a
change is neither (the kernel argument segment: a new argument is a design choice, not a regression;
blocks per SM, which is warps per SM divided by the block's warps).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One resource figure of a row (a key ``resources`` in the survey JSON)."""

    name: str  # the resource name in the survey JSON
    label: str  # column header: "VGPR", "spill st"
    noun: str  # in a sentence: "VGPRs", "spill stores"
    unit: str  # appended to values in prose: "" or " B", " waves/SIMD"
    worse: int  # +1: more is worse, -1: less is worse, 0: neither
    vendor: str  # "AMD" or "NVIDIA"
    spill: bool = False  # counted in the spill totals of a comparison
    zero_matters: bool = False  # 0 -> n is "adds", n -> 0 "removes" (spills, scratch, stack)
    # Moves with another figure (scratch with VGPR spills): told in that figure's line when both change.
    companion_of: str | None = None


# Display order is also the order of importance in the summary: spills first, then occupancy, then
# the register counts that explain them, then memory.
FIGURES: tuple[Figure, ...] = (
    Figure("vgpr_spill", "Vspill", "VGPR spills", "", +1, "AMD", spill=True, zero_matters=True),
    Figure("sgpr_spill", "Sspill", "SGPR spills", "", +1, "AMD", spill=True, zero_matters=True),
    Figure("scratch_bytes", "scratch", "scratch", " B", +1, "AMD", zero_matters=True,
           companion_of="vgpr_spill"),
    Figure("spill_store_bytes", "spill st", "spill stores", " B", +1, "NVIDIA", spill=True, zero_matters=True),
    Figure("spill_load_bytes", "spill ld", "spill loads", " B", +1, "NVIDIA", spill=True, zero_matters=True,
           companion_of="spill_store_bytes"),
    Figure("stack_bytes", "stack", "stack", " B", +1, "NVIDIA", zero_matters=True,
           companion_of="spill_store_bytes"),
    Figure("occupancy", "waves", "occupancy", " waves/SIMD", -1, "AMD"),
    # NVIDIA occupancy is resident warps per SM; blocks per SM follow from it and the block size (a
    # change of num_warps moves them apart), so they are told beside warps and judge nothing.
    Figure("occupancy_warps", "warps", "occupancy", " warps/SM", -1, "NVIDIA"),
    Figure("occupancy_blocks", "blocks", "blocks per SM", " blocks/SM", 0, "NVIDIA", companion_of="occupancy_warps"),
    Figure("vgpr", "VGPR", "VGPRs", "", +1, "AMD"),
    Figure("agpr", "AGPR", "AGPRs", "", +1, "AMD"),
    # The unified VGPR+AGPR count (AGPRs aligned to 4): what occupancy depends on. It moves with the
    # VGPRs and AGPRs, so it is told in their line and judged by them (the gate's register rule).
    Figure("vgpr_total", "VGPR+AGPR", "unified VGPRs", "", +1, "AMD", companion_of="vgpr"),
    Figure("sgpr", "SGPR", "SGPRs", "", +1, "AMD"),
    Figure("regs", "regs", "registers", "", +1, "NVIDIA"),
    Figure("lds_bytes", "LDS", "LDS", " B", +1, "AMD"),
    Figure("shared_bytes", "smem", "shared memory", " B", +1, "NVIDIA"),
    Figure("kernarg_bytes", "kernarg", "kernel arguments", " B", 0, "AMD"),
)

FIGURE_BY_NAME: dict[str, Figure] = {f.name: f for f in FIGURES}
FIGURE_ORDER: dict[str, int] = {f.name: i for i, f in enumerate(FIGURES)}


def figure(name: str) -> Figure:
    """The figure called ``name``; a name this table does not know is neutral (a newer survey's)."""
    return FIGURE_BY_NAME.get(name) or Figure(name, name, name, "", 0, "")


def verdict(name: str, before: int | None, after: int | None) -> str:
    """``worse``, ``better``, ``same``, ``changed`` (a neutral figure) or ``n/a`` (missing on a side)."""
    if before is None or after is None:
        return "n/a"
    if before == after:
        return "same"
    direction = figure(name).worse
    if direction == 0:
        return "changed"
    return "worse" if (after - before) * direction > 0 else "better"
