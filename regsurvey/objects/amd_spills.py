"""Which AMDGCN instructions are spill stores and reloads, as LLVM marks them in the ``amdgcn`` text.

- scratch: stores and loads commented ``N-byte Folded Spill`` / ``N-byte Folded Reload``;
- AGPR: ``v_accvgpr_write`` / ``v_accvgpr_read`` commented ``Reload Reuse`` (a VGPR's value kept in an
  AGPR, or the other way round);
- VGPR lanes: ``v_writelane_b32 vN, sM, <lane>`` of an SGPR value (in an ``s`` register or a half of VCC,
  which the allocator hands out once the ``s`` registers run out) and the ``v_readlane_b32`` that reads it
  back from such a VGPR at a constant lane.

Their dwords add up to the metadata's ``.vgpr_spill_count`` (scratch) and ``.sgpr_spill_count`` (lanes).
Shared by the register pressure (:mod:`regsurvey.pressure.amd`) and the loop figures
(:mod:`regsurvey.objects.loop_spills`). The comments are the compiler's: an ``llvm-objdump`` disassembly
has none, and shows only the lane spills.
"""

from __future__ import annotations

import re

from .amdgcn import SGPR_VALUE_FILES, Function, Instruction

_FOLDED = re.compile(r";\s*(\d+)-byte Folded (Spill|Reload)")

# (kind, medium, size): kind "store" or "reload"; medium "scratch", "agpr" or "vgpr-lane"; size in dwords.
SpillAccess = tuple[str, str, int]


def lane_spill(inst: Instruction) -> bool:
    """``v_writelane_b32 vN, sM, <lane>``: an SGPR value spilled to a VGPR lane."""
    return (inst.mnemonic == "v_writelane_b32" and len(inst.operands) == 3 and _holds_sgpr_value(inst, 1)
            and inst.operands[2].text.isdigit() and len(inst.operand_registers(0)) == 1)


def lane_vgprs(function: Function) -> set[int]:
    """The VGPRs that SGPR spills write lanes of (a ``v_readlane_b32`` from another VGPR, a reduction's, is
    no reload)."""
    return {inst.operand_registers(0)[0].index for inst in function.instructions if lane_spill(inst)}


def spill_access(inst: Instruction, line: str, lanes: set[int]) -> SpillAccess | None:
    """What ``inst`` spills or reloads (None: neither); ``line`` is its whole line of the text, comment
    included, and ``lanes`` the function's :func:`lane_vgprs`."""
    m = inst.mnemonic
    if "Folded" in line:
        found = _FOLDED.search(line)
        if found:
            return ("store" if found[2] == "Spill" else "reload", "scratch", int(found[1]) // 4)
    if "Reload Reuse" in line and m.startswith("v_accvgpr_"):
        dwords = sum(r.count for r in inst.operand_registers(0))
        return ("store" if "write" in m else "reload", "agpr", dwords)
    if lane_spill(inst):
        return ("store", "vgpr-lane", 1)
    if (m == "v_readlane_b32" and len(inst.operands) == 3 and _holds_sgpr_value(inst, 0)
            and inst.operands[2].text.isdigit()):
        source = inst.operand_registers(1)
        if len(source) == 1 and source[0].file == "v" and source[0].index in lanes:
            return ("reload", "vgpr-lane", 1)
    return None


def spill_accesses(function: Function, lines: list[str]) -> list[SpillAccess | None]:
    """:func:`spill_access` of each of ``function``'s instructions, in order; ``lines`` are the text's lines."""
    lanes = lane_vgprs(function)
    return [spill_access(inst, lines[inst.line - 1], lanes) for inst in function.instructions]


def _holds_sgpr_value(inst: Instruction, index: int) -> bool:
    regs = inst.operand_registers(index)
    return len(regs) == 1 and regs[0].count == 1 and regs[0].file in SGPR_VALUE_FILES
