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

Source lines are the ``.loc`` directives LLVM prints before each instruction, with the helpers' call
sites from its comment (``; kern.py:7:9 @[ kern.py:15:9 ]``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model.pressure import Frame, Pressure
from ..objects.amdgcn import SGPR_VALUE_FILES, Function, Instruction, parse_functions
from ..objects.amdgcn_effects import defs_and_uses
from .build import Step, build

CLASSES = ("vgpr", "agpr", "sgpr")
_FILE_OF = {"v": 0, "a": 1, "s": 2}

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)[^;]*(?:;(.*))?$")
_COMMENT_FRAME = re.compile(r"([^\s@\[\]]+):(\d+):\d+")
_SPILL = re.compile(r";\s*(\d+)-byte Folded (Spill|Reload)")


def amd_pressure(text: str, target: str) -> Pressure:
    """The pressure of the kernel in ``text`` (Triton's ``amdgcn``); CorruptObjectError for text the
    parser cannot read, ValueError when it holds no kernel."""
    functions = [f for f in parse_functions(text) if f.instructions]
    if not functions:
        raise ValueError("the amdgcn text holds no kernel")
    function = functions[0]
    raw = text.splitlines()
    frames = _frames_by_line(raw)
    live = _liveness(function)
    # VGPRs that SGPR spills write lanes of: a v_readlane_b32 from another VGPR (a reduction's) is no reload.
    slots = {inst.operand_registers(0)[0].index for inst in function.instructions if _lane_spill(inst)}
    steps = []
    for inst, counts in zip(function.instructions, live):
        steps.append(Step(inst.text, frames.get(inst.line, ()), counts, _spill(inst, raw[inst.line - 1], slots)))
    return build(function.name, target, "liveness over the amdgcn CFG", CLASSES, steps)


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


# -- spills ---------------------------------------------------------------------------------------------

def _lane_spill(inst: Instruction) -> bool:
    """``v_writelane_b32 vN, sM, <lane>``: an SGPR value (in an ``s`` register or a half of VCC)
    spilled to a VGPR lane."""
    return (inst.mnemonic == "v_writelane_b32" and len(inst.operands) == 3 and _holds_sgpr_value(inst, 1)
            and inst.operands[2].text.isdigit() and len(inst.operand_registers(0)) == 1)


def _spill(inst: Instruction, raw: str, slots: set[int]) -> tuple[str, str, int] | None:
    m = inst.mnemonic
    if "Folded" in raw:
        found = _SPILL.search(raw)
        if found:
            return ("store" if found[2] == "Spill" else "reload", "scratch", int(found[1]) // 4)
    if "Reload Reuse" in raw and m.startswith("v_accvgpr_"):
        dwords = sum(r.count for r in inst.operand_registers(0))
        return ("store" if "write" in m else "reload", "agpr", dwords)
    if _lane_spill(inst):
        return ("store", "vgpr-lane", 1)
    if (m == "v_readlane_b32" and len(inst.operands) == 3 and _holds_sgpr_value(inst, 0)
            and inst.operands[2].text.isdigit()):
        source = inst.operand_registers(1)
        if len(source) == 1 and source[0].file == "v" and source[0].index in slots:
            return ("reload", "vgpr-lane", 1)
    return None


def _holds_sgpr_value(inst: Instruction, index: int) -> bool:
    regs = inst.operand_registers(index)
    return len(regs) == 1 and regs[0].count == 1 and regs[0].file in SGPR_VALUE_FILES


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
    if m.endswith("_sdwa") and inst.modifier("dst_unused") == "UNUSED_PRESERVE":
        return True
    if m.startswith("v_") and not m.startswith(("v_pk_", "v_mfma", "v_smfmac")):
        sel = inst.modifier("op_sel")
        if sel and sel.strip("[]").split(",")[-1].strip() == "1":  # writes the high half only
            return True
    return False


def _liveness(function: Function) -> list[dict[str, int]]:
    """Per instruction (in order), the registers live there, per class."""
    effects = [_effects(inst) for inst in function.instructions]
    index_of = {id(inst): i for i, inst in enumerate(function.instructions)}
    spans = []
    for block in function.blocks:
        first = index_of[id(block.instructions[0])] if block.instructions else 0
        spans.append((first, first + len(block.instructions)))
    # Per block: what it reads before writing (gen) and what it writes whole (kill).
    gen: list[list[int]] = []
    kill: list[list[int]] = []
    for first, last in spans:
        g, k = [0, 0, 0], [0, 0, 0]
        for i in range(last - 1, first - 1, -1):
            (dv, da, ds), (uv, ua, us) = effects[i]
            for slot, d, u in ((0, dv, uv), (1, da, ua), (2, ds, us)):
                g[slot] = (g[slot] & ~d) | u
                k[slot] |= d
        gen.append(g)
        kill.append(k)
    live_in = [[0, 0, 0] for _ in function.blocks]
    live_out = [[0, 0, 0] for _ in function.blocks]
    changed = True
    while changed:
        changed = False
        for b in range(len(function.blocks) - 1, -1, -1):
            out = [0, 0, 0]
            for s in function.blocks[b].successors:
                for slot in range(3):
                    out[slot] |= live_in[s][slot]
            new_in = [gen[b][slot] | (out[slot] & ~kill[b][slot]) for slot in range(3)]
            if new_in != live_in[b] or out != live_out[b]:
                live_in[b], live_out[b] = new_in, out
                changed = True
    counts: list[dict[str, int]] = [{} for _ in function.instructions]
    for b, (first, last) in enumerate(spans):
        live = list(live_out[b])
        for i in range(last - 1, first - 1, -1):
            (dv, da, ds), (uv, ua, us) = effects[i]
            entry = {}
            for slot, d, u, name in ((0, dv, uv, "vgpr"), (1, da, ua, "agpr"), (2, ds, us, "sgpr")):
                after = (live[slot] | d).bit_count()
                live[slot] = (live[slot] & ~d) | u
                entry[name] = max(after, live[slot].bit_count())
            counts[i] = entry
    return counts
