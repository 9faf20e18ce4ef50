"""NVIDIA SASS as ``nvdisasm`` prints it (``-c``, with or without life ranges): its local-memory accesses
(the spill stores and loads: :func:`spill_bytes`, :func:`local_access`) and its control-flow graph.

Instructions are the addressed lines (``/*1670*/  @!P0 BRA `(.L_x_0) ;``), labels the lines that name the
next instruction (``.L_x_0:``). What leaves the straight line:

- ``BRA`` to a label (or, where the text names targets by address, to an address): unconditional unless
  predicated (``@P0``, not ``@PT``) or given a condition of its own (``BRA.U !UP0, ...``, ``BRA.DIV``);
  a conditional one falls through as well;
- ``EXIT`` and ``RET`` end the path (a predicated one falls through);
- ``CALL`` falls through to the next instruction, and reaches its callee's code as well;
- an indirect jump (``BRX``, ``JMX``) goes where this reading cannot see: it ends the path, and is counted
  in :attr:`SassCode.unresolved`.

Blocks start at the entry, at each label a branch or call names, and after each instruction that leaves
the straight line. The graph feeds the loop finder (:mod:`regsurvey.objects.loops`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# One SASS instruction line of `nvdisasm -c`: "/*0080*/  @!P0 STL.64 [R1+0x20], R4 ;".
_LOCAL_ACCESS = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[T0-9]+\s+)?(STL|LDL)((?:\.\w+)*)\s", re.M)
# Access width by suffix; no width suffix means 32 bits.
_WIDTH_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}
_INSTRUCTION = re.compile(r"^[ \t]*/\*([0-9a-f]+)\*/[ \t]+([^;\n]*?)[ \t]*;")
_LABEL = re.compile(r"^([.\w$]+):")
_LABEL_TARGET = re.compile(r"`\(([.\w$]+)\)")
_ADDRESS_TARGET = re.compile(r"(?<![\w.])0x([0-9a-f]+)\b")
_ENDS = frozenset({"EXIT", "RET", "KILL"})
_INDIRECT = frozenset({"BRX", "JMX", "BRXU", "JMXU"})
_JUMPS = frozenset({"BRA", "JMP"})


def spill_bytes(sass: str) -> tuple[int, int]:
    """Bytes stored and loaded by STL/LDL in ``sass`` (per thread), summed over access widths."""
    totals = {"STL": 0, "LDL": 0}
    for op, suffixes in _LOCAL_ACCESS.findall(sass):
        totals[op] += _access_width(suffixes)
    return totals["STL"], totals["LDL"]


def local_access(instruction: str) -> tuple[str, int] | None:
    """``("STL", bytes)`` or ``("LDL", bytes)`` for one SASS instruction (``@!P0 STL.64 [R1+0x20], R4``, with
    or without its ``/*0080*/`` address) that stores or loads local memory; None for any other."""
    m = _LOCAL_ACCESS.match(instruction if instruction.lstrip().startswith("/*") else f"/*0*/ {instruction} ")
    return (m[1], _access_width(m[2])) if m else None


def _access_width(suffixes: str) -> int:
    width = 4
    for suffix in suffixes.split("."):
        width = _WIDTH_BYTES.get(suffix, width)
    return width


@dataclass
class SassCode:
    """The instructions of a SASS text, in order (``texts``: without address and ``;``; ``addresses``),
    its basic blocks (each the index of its first instruction) and their successors (block indices)."""

    texts: list[str]
    addresses: list[int]
    starts: list[int] = field(default_factory=list)
    successors: list[list[int]] = field(default_factory=list)
    unresolved: int = 0  # indirect jumps: where they go is not followed
    _at: dict[int, int] | None = field(default=None, repr=False)

    def at_address(self) -> dict[int, int]:
        """The first instruction of each address (a text of several sections restarts its addresses)."""
        if self._at is None:
            self._at = {}
            for i, address in enumerate(self.addresses):
                self._at.setdefault(address, i)
        return self._at

    def instruction_successors(self) -> list[list[int]]:
        """Each instruction's successors (instruction indices): the next one within a block, the first ones
        of the block's successors at its end."""
        out: list[list[int]] = []
        for block, start in enumerate(self.starts):
            end = self.starts[block + 1] if block + 1 < len(self.starts) else len(self.texts)
            out.extend([i + 1] for i in range(start, end - 1))
            out.append([self.starts[s] for s in self.successors[block]])
        return out

    def calls(self) -> bool:
        """Whether the code calls or returns (``CALL``, ``RET``): a callee's frame, not followed here."""
        return any(text.lstrip("@!PT0123456789U ").startswith(("CALL", "RET")) for text in self.texts)

    def block_of(self) -> list[int]:
        """Each instruction's block."""
        out = []
        for block, start in enumerate(self.starts):
            end = self.starts[block + 1] if block + 1 < len(self.starts) else len(self.texts)
            out.extend([block] * (end - start))
        return out


def read_sass(sass: str) -> SassCode:
    """The instructions, blocks and CFG of ``sass`` (``nvdisasm -c``'s text of one kernel)."""
    texts: list[str] = []
    addresses: list[int] = []
    labels: dict[str, int] = {}  # a label -> the index of the instruction it names
    for line in sass.splitlines():
        found = _INSTRUCTION.match(line)
        if found is not None:
            addresses.append(int(found[1], 16))
            texts.append(" ".join(found[2].split()))
        elif (label := _LABEL.match(line)) is not None:
            labels[label[1]] = len(texts)
    code = SassCode(texts, addresses)
    _blocks(code, labels)
    return code


def _opcode(text: str) -> tuple[str, bool, str]:
    """(opcode without modifiers, predicated, operands) of an instruction's text."""
    predicated = text.startswith("@") and not text.startswith("@PT ")
    if text.startswith("@"):
        text = text.split(None, 1)[1] if " " in text else ""
    op, _, operands = text.partition(" ")
    return op.split(".", 1)[0], predicated, operands


def _target(code: SassCode, operands: str, labels: dict[str, int]) -> int | None:
    """The instruction a branch or call names: a label, else an address."""
    named = _LABEL_TARGET.search(operands)
    if named is not None:
        return labels.get(named[1])
    at = _ADDRESS_TARGET.findall(operands)
    if not at:
        return None
    return code.at_address().get(int(at[-1], 16))


def _blocks(code: SassCode, labels: dict[str, int]) -> None:
    count = len(code.texts)
    ends: dict[int, tuple[list[int], bool]] = {}  # instruction -> (instructions it goes to, falls through)
    for i, text in enumerate(code.texts):
        name, predicated, operands = _opcode(text)
        if name in _JUMPS or name == "CALL":
            target = _target(code, operands, labels)
            # BRA.U UP0/BRA.DIV and friends carry a condition among their operands: anything before the target.
            conditional = predicated or name == "CALL" or ".DIV" in text or "," in operands
            ends[i] = ([target] if target is not None else [], conditional)
            if target is None:
                code.unresolved += 1
        elif name in _ENDS:
            ends[i] = ([], predicated)
        elif name in _INDIRECT:
            code.unresolved += 1
            ends[i] = ([], predicated)
    leaders = {0} | {i + 1 for i in ends if i + 1 < count} | {t for goes, _ in ends.values() for t in goes}
    code.starts = sorted(leaders) if count else []
    block_at = {start: b for b, start in enumerate(code.starts)}
    code.successors = []
    for b in range(len(code.starts)):
        last = (code.starts[b + 1] if b + 1 < len(code.starts) else count) - 1
        goes, falls = ends.get(last, ([], True))
        nexts = [block_at[t] for t in goes]
        if falls and last + 1 < count:
            nexts.append(block_at[last + 1])
        code.successors.append(list(dict.fromkeys(nexts)))
