"""Which AMDGCN instructions are spill stores and reloads, as LLVM marks them in the ``amdgcn`` text.

- scratch: stores and loads commented ``N-byte Folded Spill`` / ``N-byte Folded Reload``;
- AGPR: ``v_accvgpr_write`` / ``v_accvgpr_read`` commented ``Reload Reuse`` (a VGPR's value kept in an
  AGPR, or the other way round);
- VGPR lanes: ``v_writelane_b32 vN, sM, <lane>`` of an SGPR value (in an ``s`` register or a half of VCC,
  which the allocator hands out once the ``s`` registers run out) and the ``v_readlane_b32`` that reads it
  back from such a VGPR at a constant lane.

Their dwords add up to the metadata's ``.vgpr_spill_count`` (scratch) and ``.sgpr_spill_count`` (lanes); a
16-bit spill (gfx11+ true16: ``scratch_store_d16_hi_b16 off, v0, s0 ; 2-byte Folded Spill``) counts one, as
LLVM counts it.

On gfx11+ LLVM groups memory instructions into clauses, and a clause of spill stores or reloads carries one
comment, on its ``s_clause`` header, for all of them (``s_clause 0x1 ; 20-byte Folded Spill`` before a
``scratch_store_b32`` and a ``scratch_store_b128``): the spills are the clause's scratch accesses at a
constant address (:func:`spill_accesses`), each of its own size, the header none. A clause that holds
reloads and spill stores both (gfx1250: ``s_clause 0x1 ; 16-byte Folded Reload`` over a ``scratch_store_b128``
and a ``scratch_load_b128``) is commented as the reloads alone (LLVM's AsmPrinter tells a reload before a
spill): its stores at a constant address are spill stores all the same, and only so do the stores add up
to ``.vgpr_spill_count``.

Where a scratch slot is (:func:`slot_addresses`): its offset, plus the constant in the SGPR that holds the
rest of a large frame's address (``s_movk_i32 s0, 0x28ec`` before ``scratch_store_b32 off, v3, s0``): the
register's name alone would make one slot of all those it addresses.

Shared by the register pressure (:mod:`regsurvey.pressure.amd`), the loop figures
(:mod:`regsurvey.objects.loop_spills`) and the kernarg lint (:mod:`regsurvey.lint.kernarg`). The comments are
the compiler's: an ``llvm-objdump`` disassembly has none, and shows only the lane spills.
"""

from __future__ import annotations

import re

from .amdgcn import SGPR_VALUE_FILES, Function, Instruction
from .amdgcn_effects import defs_and_uses

_FOLDED = re.compile(r";\s*(\d+)-byte Folded (Spill|Reload)")

_MEMORY = ("scratch_", "buffer_", "global_", "flat_", "ds_", "s_load", "s_buffer_load", "image_", "tbuffer_")

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
            # Dwords, a 16-bit value's 2 bytes one of them.
            return ("store" if found[2] == "Spill" else "reload", "scratch", -(-int(found[1]) // 4))
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
    """:func:`spill_access` of each of ``function``'s instructions, in order; ``lines`` are the text's lines.
    A clause's spill comment (on its ``s_clause``) goes to the clause's scratch spill accesses."""
    lanes = lane_vgprs(function)
    insts = function.instructions
    out = [spill_access(inst, lines[inst.line - 1], lanes) for inst in insts]
    for i, inst in enumerate(insts):
        found = out[i]
        if inst.mnemonic != "s_clause" or found is None:
            continue
        out[i] = None  # the header moves nothing
        kinds = ("store",) if found[0] == "store" else ("reload", "store")
        for j in clause_members(insts, i):
            for kind in kinds:
                dwords = scratch_slot_dwords(insts[j], kind)
                if dwords:
                    out[j] = (kind, "scratch", dwords)
    return out


def scratch_slot_dwords(inst: Instruction, kind: str) -> int:
    """The dwords a scratch access at a constant address (a spill slot) stores (``kind`` ``store``) or
    reloads (``reload``): ``scratch_store_b128 off, v[4:7], off offset:52`` 4; 0 for anything else (an access
    at a per-lane address, or the other kind)."""
    m = inst.mnemonic
    ops = inst.operands
    if m.startswith("scratch_"):
        store = m.startswith("scratch_store_")
        address, data = (0, 1) if store else (1, 0)
        if len(ops) < 3 or ops[address].text != "off":
            return 0
    elif m.startswith("buffer_"):  # MUBUF: data, `off`, s[0:3], soffset
        store = m.startswith("buffer_store_")
        data = 0
        if len(ops) < 4 or ops[1].text != "off" or {"offen", "idxen"} & set(inst.modifiers):
            return 0
    else:
        return 0
    if store != (kind == "store") or (not store and not m.startswith(("scratch_load_", "buffer_load_"))):
        return 0
    regs = inst.operand_registers(data)
    return sum(r.count for r in regs if r.file in ("v", "a"))


def clause_members(insts: list[Instruction], header: int) -> list[int]:
    """Indices of the memory instructions the ``s_clause`` at ``header`` holds together: its immediate's low six
    bits, plus one, of those that follow it; gfx1250's ``s_set_vgpr_msb`` between them (and ``s_nop``) are not
    counted (``s_clause 0x3e ; 264-byte Folded Spill`` over 63 scratch stores and two ``s_set_vgpr_msb``)."""
    try:
        left = (int(insts[header].operands[0].text, 0) & 0x3F) + 1 if insts[header].operands else 0
    except ValueError:
        return []
    out = []
    for j in range(header + 1, len(insts)):
        if not left:
            break
        m = insts[j].mnemonic
        if m.startswith(("s_set_vgpr_msb", "s_nop")):
            continue
        if not m.startswith(_MEMORY):
            break
        out.append(j)
        left -= 1
    return out


def _holds_sgpr_value(inst: Instruction, index: int) -> bool:
    regs = inst.operand_registers(index)
    return len(regs) == 1 and regs[0].count == 1 and regs[0].file in SGPR_VALUE_FILES


# A spill slot: (base, byte offset). The base is "scratch" for a flat-scratch access (an offset into the
# wave's scratch), or the texts of a MUBUF access's resource and soffset operands (gfx9: `s[0:3]|s33`).
SlotAddress = tuple[str, int]


def slot_addresses(function: Function) -> list[SlotAddress | None]:
    """Per instruction of ``function``: where a scratch access at a uniform address (a spill slot's) reads or
    writes, None for any other instruction or where the address is not known.

    ``scratch_*`` with no VGPR address: the ``offset:``, plus the value of its SGPR address where it names one
    (``scratch_store_b32 off, v3, s1`` after ``s_movk_i32 s1, 0x28ec`` in the same block, the register
    unchanged since: LLVM's frame offsets past the immediate's reach); an SGPR whose value the block does not
    set is not known. MUBUF (``buffer_store_dword v5, off, s[0:3], s33 offset:16``): the resource and
    soffset operands as written, and the offset."""
    insts = function.instructions
    if not any(inst.mnemonic.startswith(("scratch_", "buffer_")) for inst in insts):
        return [None] * len(insts)
    if not any(inst.mnemonic.startswith("scratch_") and len(inst.operands) >= 3 and inst.operands[2].registers
               for inst in insts):
        return [_slot_address(inst, {}) for inst in insts]  # no SGPR address: no values to follow
    found: dict[int, SlotAddress | None] = {}
    for block in function.blocks:
        values: dict[int, int] = {}  # SGPR -> the constant the block last set it to
        for inst in block.instructions:
            found[id(inst)] = _slot_address(inst, values)
            m = inst.mnemonic
            defs, _ = defs_and_uses(inst)
            for reg in defs:
                if reg.file == "s":
                    for k in range(reg.count):
                        values.pop(reg.index + k, None)
            if m in ("s_movk_i32", "s_mov_b32") and len(inst.operands) == 2:
                dst = inst.operand_registers(0)
                value = _integer(inst.operands[1].text)
                if value is not None and len(dst) == 1 and dst[0].file == "s" and dst[0].count == 1:
                    values[dst[0].index] = value
    return [found.get(id(inst)) for inst in insts]


def _slot_address(inst: Instruction, values: dict[int, int]) -> SlotAddress | None:
    m = inst.mnemonic
    ops = inst.operands
    offset = _integer(inst.modifier("offset") or "0")
    if offset is None:
        return None
    if m.startswith(("scratch_store_", "scratch_load_")):
        vaddr, saddr = (0, 2) if m.startswith("scratch_store_") else (1, 2)
        if len(ops) <= saddr or ops[vaddr].text != "off":
            return None
        if ops[saddr].text == "off":
            return ("scratch", offset)
        reg = ops[saddr].register
        if reg is None or reg.file != "s" or reg.count != 1 or reg.index not in values:
            return None
        return ("scratch", values[reg.index] + offset)
    if m.startswith(("buffer_store_", "buffer_load_")) and len(ops) >= 4 and ops[1].text == "off" \
            and not {"offen", "idxen", "lds"} & set(inst.modifiers):
        return (f"{ops[2].text}|{ops[3].text}", offset)
    return None


def is_16bit(inst: Instruction) -> bool:
    """A scratch access of one 16-bit half (``scratch_store_b16``, ``scratch_load_d16_hi_b16``, gfx9's
    ``scratch_store_short``)."""
    return bool(re.search(r"_(?:b16|short|u16|i16)(?:_|$)|_d16", inst.mnemonic))


def _integer(text: str) -> int | None:
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value - (1 << 32) if 1 << 31 <= value < 1 << 32 else value
