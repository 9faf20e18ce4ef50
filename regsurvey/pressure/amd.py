"""Register pressure of an AMD kernel, from the ``amdgcn`` text Triton keeps with the object.

Liveness is computed over the CFG the lint's parser builds (:mod:`regsurvey.objects.amdgcn`), on the
physical registers the allocator chose: a register is live from each write to its last read on any
path. The live count at an instruction is the larger of the registers live into it and those live out
of it or written by it, per class (VGPR, AGPR, SGPR; SGPRs are the ``s`` registers, without VCC, EXEC
or M0). Since these are the allocated registers, the peak can never exceed ``NumVgprs``; it falls short
of it where the allocator left gaps (alignment of register tuples) and, by a few, where two sides of a
branch that EXEC masks rather than jumps over write the same register (the text does not say that the
second write keeps the first one's lanes).

Spills are what LLVM marks: stores and loads commented ``N-byte Folded Spill``/``Folded Reload``
(scratch), ``v_accvgpr_write``/``read`` commented ``Reload Reuse`` (a VGPR kept in an AGPR), and
``v_writelane_b32``/``v_readlane_b32`` of an SGPR value at a constant lane (SGPR spills to VGPR lanes;
the value may sit in ``vcc_lo``/``vcc_hi``, which the allocator hands out once the ``s`` registers run
out). Their dwords add up to the metadata's ``.vgpr_spill_count`` and ``.sgpr_spill_count``.

The demand before spilling counts, beside the registers, the values waiting in spill slots: each slot is
live from its spill store to its last reload, by the same liveness (:class:`_SpillSlots`).

Source lines are the ``.loc`` directives LLVM prints before each instruction, with the helpers' call
sites from its comment (``; kern.py:7:9 @[ kern.py:15:9 ]``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model.pressure import Frame, Pressure
from ..objects.amd_spills import SlotAddress, is_16bit, lane_vgprs, slot_addresses, spill_accesses
from ..objects.amdgcn import Function, Instruction, Register, parse_functions
from ..objects.amdgcn_effects import defs_and_uses
from ..objects.loop_spills import amd_function_loops
from .build import Step, build

CLASSES = ("vgpr", "agpr", "sgpr")
_FILE_OF = {"v": 0, "a": 1, "s": 2}

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)[^;]*(?:;(.*))?$")
_COMMENT_FRAME = re.compile(r"([^\s@\[\]]+):(\d+):\d+")


def amd_pressure(text: str, target: str) -> Pressure:
    """The pressure of the kernel in ``text`` (Triton's ``amdgcn``); CorruptObjectError for text the
    parser cannot read, ValueError when it holds no kernel."""
    functions = [f for f in parse_functions(text) if f.instructions]
    if not functions:
        raise ValueError("the amdgcn text holds no kernel")
    function = functions[0]
    if function.vgprs_unnamed:
        raise ValueError("the amdgcn text addresses VGPRs above v255 (s_set_vgpr_msb) without naming them "
                         "(`v0 /*v256*/`): its live VGPRs cannot be counted")
    raw = text.splitlines()
    frames = _frames_by_line(raw)
    slots = lane_vgprs(function)
    spills = spill_accesses(function, raw)
    live, demand = _liveness(function, _SpillSlots(function, spills, slots))
    steps = [Step(inst.text, frames.get(inst.line, ()), counts, spill, wanted)
             for inst, counts, spill, wanted in zip(function.instructions, live, spills, demand)]
    return build(function.name, target, "liveness over the amdgcn CFG", CLASSES, steps, amd_function_loops(function))


# -- source lines -------------------------------------------------------------------------------------

def _frames_by_line(lines: list[str]) -> dict[int, tuple[Frame, ...]]:
    """For each text line (from 1), the source frames of the ``.loc`` in force there (none after a
    ``.loc`` of line 0: code the compiler made up)."""
    files: dict[int, str] = {}
    by_name: dict[str, str] = {}
    current: tuple[Frame, ...] = ()
    out: dict[int, tuple[Frame, ...]] = {}
    cache: dict[tuple, tuple[Frame, ...]] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith(".file"):
            m = _FILE.match(line)
            if m:
                path = f"{m[2]}/{m[3]}" if m[3] is not None else m[2]
                files[int(m[1])] = path
                by_name.setdefault(Path(path).name, path)
            continue
        if stripped.startswith(".loc"):
            m = _LOC.match(line)
            if m:
                key = (m[1], m[2], m[4])
                current = cache.get(key) or cache.setdefault(key, _loc_frames(m, files, by_name))
            continue
        if stripped and not stripped.startswith((";", ".")):
            out[number] = current
    return out


def _loc_frames(m: re.Match, files: dict[int, str], by_name: dict[str, str]) -> tuple[Frame, ...]:
    line = int(m[2])
    if line == 0:
        return ()
    path = files.get(int(m[1]), "")
    frames: list[Frame] = [(path, line)]
    # The comment names the same location, then each call site it was inlined at: "@[ file:line:col ]".
    for name, number in _COMMENT_FRAME.findall(m[4] or "")[1:]:
        frames.append((by_name.get(name, name), int(number)))
    return tuple(frames)


# -- spill slots ---------------------------------------------------------------------------------------------

class _SpillSlots:
    """Where the spilled values live between a spill store and its reloads, as bits of three more masks
    (their values' classes: VGPR, AGPR, SGPR), so that the liveness that counts registers counts them too:

    - a scratch slot: each dword a ``Folded Spill`` store writes and a ``Folded Reload`` reads (each half of
      one, for a 16-bit spill), named by its address (:func:`~regsurvey.objects.amd_spills.slot_addresses`;
      an access whose address is not known is a slot of its own); a VGPR's or an AGPR's value, by the
      register stored;
    - an AGPR that holds a VGPR's value (``v_accvgpr_write ... ; Reload Reuse``): a VGPR value, counted as the
      AGPR itself (live as the registers are), moved from the AGPRs' count to the VGPRs';
    - a VGPR lane that holds an SGPR's value (``v_writelane_b32 vN, sM, L`` / ``v_readlane_b32 sM, vN, L``),
      its VGPR left out of the VGPRs' count (spill space, not a value the code computes).

    Added to the live registers, they are the demand before spilling: what the code would hold in registers
    had nothing been spilled."""

    def __init__(self, function: Function, spills: list[tuple[str, str, int] | None], lane_vgprs: set[int]):
        self.ids: dict[tuple, int] = {}
        self.addresses = {id(inst): address for inst, address in zip(function.instructions, slot_addresses(function))}
        self.reuse_agprs = 0  # AGPRs written by a Reload Reuse: a VGPR value's spill space
        self.lane_vgprs = sum(1 << i for i in lane_vgprs)
        # Each slot bit's class, from the stores that write it (a reload of a slot no store writes, an
        # access this reading cannot name alike, holds no value here).
        self.class_of: dict[int, int] = {}
        for inst, spill in zip(function.instructions, spills):
            if spill is not None and spill[0] == "store":
                for bit, slot in self._slots(inst, spill):
                    self.class_of[bit] = slot
                if spill[1] == "agpr":
                    for reg in inst.operand_registers(0):
                        self.reuse_agprs |= ((1 << reg.count) - 1) << reg.index
        self.effects = [self._effect(inst, spill) for inst, spill in zip(function.instructions, spills)]
        # The classes whose values were spilled: their demand is told.
        self.spilled = {CLASSES[slot] for slot in self.class_of.values()} | ({"vgpr"} if self.reuse_agprs else set())

    @property
    def any(self) -> bool:
        """Whether the kernel spills at all (else the demand is the live registers themselves)."""
        return bool(self.class_of or self.reuse_agprs)

    def _slots(self, inst: Instruction, spill: tuple[str, str, int]) -> list[tuple[int, int]]:
        """(slot bit, class of the value: 0 VGPR, 1 AGPR, 2 SGPR) of each unit a scratch or lane spill or
        reload names (none for an AGPR's ``Reload Reuse``: the AGPR is live as registers are)."""
        kind, medium, _ = spill
        if medium == "scratch":
            data = _scratch_data(inst, kind)
            if data is None:
                return []
            address: SlotAddress | None = self.addresses.get(id(inst))
            if address is None:
                keys: list[tuple] = [("unknown", id(inst), k) for k in range(data.count)]
            elif is_16bit(inst):
                keys = [(address[0], "half", address[1] // 2)]
            else:
                keys = [(address[0], address[1] // 4 + k) for k in range(data.count)]
            return [(self.ids.setdefault(key, len(self.ids)), _FILE_OF[data.file]) for key in keys]
        if medium == "vgpr-lane":
            lane_vgpr = inst.operand_registers(0 if kind == "store" else 1)[0].index
            return [(self.ids.setdefault((f"v{lane_vgpr}", int(inst.operands[2].text)), len(self.ids)), 2)]
        return []

    def _effect(self, inst: Instruction, spill: tuple[str, str, int] | None) -> tuple[Masks, Masks]:
        """(slot bits written, slot bits read) by ``inst``, per value class."""
        masks = [0, 0, 0]
        if spill is None:
            return (0, 0, 0), (0, 0, 0)
        for bit, _ in self._slots(inst, spill):
            slot = self.class_of.get(bit)
            if slot is not None:
                masks[slot] |= 1 << bit
        written = (masks[0], masks[1], masks[2])
        return (written, (0, 0, 0)) if spill[0] == "store" else ((0, 0, 0), written)

    def demand(self, regs: list[int], slots: list[int]) -> dict[str, int]:
        """Values live per class whose values were spilled: the registers that hold them, and the slots
        of the spilled ones."""
        v, a, s = regs
        counts = {"vgpr": (v & ~self.lane_vgprs).bit_count() + slots[0].bit_count()
                          + (a & self.reuse_agprs).bit_count(),
                  "agpr": (a & ~self.reuse_agprs).bit_count() + slots[1].bit_count(),
                  "sgpr": s.bit_count() + slots[2].bit_count()}
        return {c: n for c, n in counts.items() if c in self.spilled}


def _scratch_data(inst: Instruction, kind: str) -> Register | None:
    """A scratch spill's register (stored or reloaded): ``scratch_`` and ``global_`` accesses put the data second
    (after the address) when storing, ``buffer_`` ones first."""
    at = 1 if kind == "store" and not inst.mnemonic.startswith("buffer_") else 0
    regs = inst.operand_registers(at)
    return regs[0] if len(regs) == 1 and regs[0].file in ("v", "a") else None


# -- liveness ---------------------------------------------------------------------------------------------

Masks = tuple[int, int, int]  # one bit per register of each class: VGPRs, AGPRs, SGPRs


def _masks(regs: list) -> list[int]:
    out = [0, 0, 0]
    for reg in regs:
        slot = _FILE_OF.get(reg.file)
        if slot is not None:
            out[slot] |= ((1 << reg.count) - 1) << reg.index
    return out


def _effects(inst: Instruction) -> tuple[Masks, Masks]:
    """(what ``inst`` writes whole, what it reads), as masks. A partial write (one lane, one half)
    reads the rest of the register, so its destination is read too."""
    defs, uses = defs_and_uses(inst)
    if _partial_write(inst):
        uses = [*uses, *defs]
    d, u = _masks(defs), _masks(uses)
    return (d[0], d[1], d[2]), (u[0], u[1], u[2])


def _partial_write(inst: Instruction) -> bool:
    m = inst.mnemonic
    if m == "v_writelane_b32" or "_d16" in m:
        return True
    if inst.operands and inst.operands[0].text.endswith((".l", ".h")):  # gfx11+ true16: one half of a VGPR
        return True
    if m.endswith("_sdwa") and inst.modifier("dst_unused") == "UNUSED_PRESERVE":
        return True
    if m.startswith("v_") and not m.startswith(("v_pk_", "v_mfma", "v_smfmac")):
        sel = inst.modifier("op_sel")
        if sel and sel.strip("[]").split(",")[-1].strip() == "1":  # writes the high half only
            return True
    return False


def _liveness(function: Function, slots: _SpillSlots) -> tuple[list[dict[str, int]], list[dict[str, int] | None]]:
    """Per instruction (in order), the registers live there per class; and, where the kernel spills, the
    values live there per class, spilled ones included (:class:`_SpillSlots`; None where it does not)."""
    width = 6 if slots.any else 3  # the registers' three masks, then the slots'
    effects: list[tuple[tuple[int, ...], tuple[int, ...]]] = [_effects(inst) for inst in function.instructions]
    if width == 6:
        effects = [((*d, *sd), (*u, *su)) for (d, u), (sd, su) in zip(effects, slots.effects)]
    index_of = {id(inst): i for i, inst in enumerate(function.instructions)}
    spans = []
    for block in function.blocks:
        first = index_of[id(block.instructions[0])] if block.instructions else 0
        spans.append((first, first + len(block.instructions)))
    # Per block: what it reads before writing (gen) and what it writes whole (kill).
    gen: list[list[int]] = []
    kill: list[list[int]] = []
    for first, last in spans:
        g, k = [0] * width, [0] * width
        for i in range(last - 1, first - 1, -1):
            defs, uses = effects[i]
            for slot in range(width):
                g[slot] = (g[slot] & ~defs[slot]) | uses[slot]
                k[slot] |= defs[slot]
        gen.append(g)
        kill.append(k)
    live_in = [[0] * width for _ in function.blocks]
    live_out = [[0] * width for _ in function.blocks]
    changed = True
    while changed:
        changed = False
        for b in range(len(function.blocks) - 1, -1, -1):
            out = [0] * width
            for s in function.blocks[b].successors:
                for slot in range(width):
                    out[slot] |= live_in[s][slot]
            new_in = [gen[b][slot] | (out[slot] & ~kill[b][slot]) for slot in range(width)]
            if new_in != live_in[b] or out != live_out[b]:
                live_in[b], live_out[b] = new_in, out
                changed = True
    counts: list[dict[str, int]] = [{} for _ in function.instructions]
    demand: list[dict[str, int] | None] = [None for _ in function.instructions]
    for b, (first, last) in enumerate(spans):
        live = list(live_out[b])
        for i in range(last - 1, first - 1, -1):
            defs, uses = effects[i]
            after = [live[slot] | defs[slot] for slot in range(width)]
            live = [(live[slot] & ~defs[slot]) | uses[slot] for slot in range(width)]
            counts[i] = {name: max(after[slot].bit_count(), live[slot].bit_count())
                         for slot, name in enumerate(CLASSES)}
            if width == 6:
                was, now = slots.demand(after[:3], after[3:]), slots.demand(live[:3], live[3:])
                demand[i] = {name: max(n, now[name]) for name, n in was.items()}
    return counts, demand
