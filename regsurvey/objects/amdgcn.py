"""A small parser for AMDGCN assembly: Triton's ``amdgcn`` text and ``llvm-objdump -d`` disassembly.

It knows what the lint (and the AMD object reader's VGPR count) needs and nothing more:

- operands and the registers they name (``s5``, ``s[36:43]``, ``v[0:3]``, ``a[0:15]``, ``ttmp[4:5]``,
  ``vcc``, ``vcc_lo``, ``exec``, ``m0`` ...), with the modifiers (``offen``, ``offset:16``, ``glc``) apart;
- functions, their instructions (each with its line in the text, and its address in a disassembly),
  labels and the ``.p2align`` that precedes a label;
- the highest register of each file that the instructions name (``registers_named``: the exact
  ``NumVgprs`` the resource reader needs where the object holds only a rounded one);
- branches (``s_branch``, ``s_cbranch_*``, the ``s_getpc``/``s_add``/``s_setpc`` long branch, ``s_endpgm``),
  basic blocks and the CFG;
- the ``.amdhsa_*`` directives of each ``.amdhsa_kernel`` block and the metadata YAML between
  ``.amdgpu_metadata`` and ``.end_amdgpu_metadata`` (a subset of YAML: block maps, block sequences and
  scalars, which is all LLVM prints there).

Syntax follows LLVM's AMDGPU assembler (AMDGPUAsmGFX9, AMDGPUOperandSyntax, AMDGPUUsage).

Its length (over 500 lines) is one parser: operands, register ranges, functions, blocks and the CFG
that both the lint and the AMD reader use.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import CorruptObjectError

# Register files of one dword per unit. The special registers that hold two dwords (vcc, exec,
# flat_scratch, xnack_mask) are their own files with units 0 (lo) and 1 (hi).
_SPECIAL = {
    "vcc": ("vcc", 0, 2), "vcc_lo": ("vcc", 0, 1), "vcc_hi": ("vcc", 1, 1),
    "exec": ("exec", 0, 2), "exec_lo": ("exec", 0, 1), "exec_hi": ("exec", 1, 1),
    "flat_scratch": ("flat_scratch", 0, 2), "flat_scratch_lo": ("flat_scratch", 0, 1),
    "flat_scratch_hi": ("flat_scratch", 1, 1),
    "xnack_mask": ("xnack_mask", 0, 2), "xnack_mask_lo": ("xnack_mask", 0, 1),
    "xnack_mask_hi": ("xnack_mask", 1, 1),
    "m0": ("m0", 0, 1), "scc": ("scc", 0, 1),
}
# The files the register allocator gives SGPR values: the ``s`` registers, and VCC's halves once the
# ``s`` registers run out (a value LLVM spills from ``vcc_lo`` counts in ``.sgpr_spill_count``).
SGPR_VALUE_FILES = ("s", "vcc")
_REGISTER = re.compile(
    r"(?<![\w.$])(?:(?P<file>ttmp|[sva])(?:(?P<one>\d+)|\[(?P<lo>\d+):(?P<hi>\d+)\])"
    r"|(?P<special>" + "|".join(sorted(_SPECIAL, key=len, reverse=True)) + r"))(?![\w$])"
)
# No AMDGPU register file reaches this index (512 VGPRs, 256 AGPRs, ~106 SGPRs; operands encode 8-10 bits).
_MAX_REGISTER = 1023
_MNEMONIC = re.compile(r"^[a-z][a-z0-9_]*$")
# `0000000000001600 <add_kernel>:` and `\ts_load ... // 000000001600: C0060080 00000000 <add_kernel+0x100>`.
_OBJDUMP_FUNCTION = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:\s*$")
_OBJDUMP_ADDRESS = re.compile(r"^\s*([0-9a-fA-F]+):")
_LABEL = re.compile(r"^([.\w$]+):")
_TYPE_FUNCTION = re.compile(r"^\s*\.type\s+([.\w$]+)\s*,\s*@function")

# Instructions that end a basic block. s_cbranch_* falls through as well; s_endpgm and friends end
# the wave; s_setpc_b64 is a jump (in a kernel: a long branch, see _long_branch_target).
_ENDS_WAVE = {"s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done", "s_code_end"}


@dataclass(frozen=True)
class Register:
    """A run of ``count`` consecutive 32-bit registers of one file, from ``index``.

    ``file`` is ``s`` (SGPR), ``v`` (VGPR), ``a`` (AGPR), ``ttmp`` or a special register's name
    (``vcc``, ``exec``, ``m0`` ...; for the 64-bit ones, unit 0 is ``_lo`` and 1 is ``_hi``).
    """

    file: str
    index: int
    count: int = 1

    def units(self) -> tuple[tuple[str, int], ...]:
        """The single dwords this register covers, as ``(file, index)``."""
        return tuple((self.file, self.index + i) for i in range(self.count))

    def __str__(self) -> str:
        if self.file in ("s", "v", "a", "ttmp"):
            if self.count == 1:
                return f"{self.file}{self.index}"
            return f"{self.file}[{self.index}:{self.index + self.count - 1}]"
        if self.count == 2:
            return self.file
        return f"{self.file}_{'hi' if self.index else 'lo'}"


@dataclass(frozen=True)
class Operand:
    """One comma-separated operand as printed, and the registers it names (none for immediates)."""

    text: str
    registers: tuple[Register, ...]

    @property
    def register(self) -> Register | None:
        """The operand's one register, or None (an immediate, a label, ``off`` or an expression)."""
        return self.registers[0] if len(self.registers) == 1 else None


@dataclass(frozen=True)
class Instruction:
    """One machine instruction: mnemonic, operands, trailing modifiers and where it was printed.

    ``line`` counts from 1 in the text that was parsed. ``address`` is the byte offset from the
    function's start (a disassembly gives it; for assembler text it is None). ``target`` is a
    branch's destination: a label in assembler text, an address (str of the int offset) in a
    disassembly, or None.
    """

    mnemonic: str
    operands: tuple[Operand, ...]
    modifiers: tuple[str, ...]
    line: int
    text: str
    address: int | None = None
    target: str | None = None

    def operand_registers(self, index: int) -> tuple[Register, ...]:
        """Registers of operand ``index`` (empty if there is no such operand)."""
        return self.operands[index].registers if index < len(self.operands) else ()

    def modifier(self, name: str) -> str | None:
        """The value of ``name:value`` among the modifiers (``offset``), ``""`` for a bare flag, or None."""
        for mod in self.modifiers:
            key, _, value = mod.partition(":")
            if key == name:
                return value
        return None


@dataclass
class Block:
    """A basic block: a run of instructions entered only at the top, left only at the bottom."""

    index: int
    labels: tuple[str, ...]  # labels (assembler text) or the address (disassembly) naming its start
    instructions: list[Instruction]
    successors: list[int] = field(default_factory=list)
    aligned: int = 0  # the .p2align power before its first label (8: a 256-byte aligned start)


@dataclass
class Function:
    """One function of the text: its instructions in order, and its basic blocks with the CFG."""

    name: str
    instructions: list[Instruction]
    blocks: list[Block]
    start_line: int
    unresolved_jumps: int = 0  # s_setpc_b64 whose destination could not be found: edges to every block

    def block_of_label(self, label: str) -> Block | None:
        """The block that starts at ``label``."""
        for block in self.blocks:
            if label in block.labels:
                return block
        return None


def parse_registers(text: str) -> tuple[Register, ...]:
    """The registers named in an operand's text, in order (``-|v[2:3]|`` gives ``v[2:3]``)."""
    found = []
    for m in _REGISTER.finditer(text):
        if m["special"]:
            file, index, count = _SPECIAL[m["special"]]
            found.append(Register(file, index, count))
        elif m["one"] is not None:
            if int(m["one"]) > _MAX_REGISTER:
                raise CorruptObjectError(f"register {m[0]} is past the end of any register file")
            found.append(Register(m["file"], int(m["one"])))
        else:
            lo, hi = int(m["lo"]), int(m["hi"])
            if hi < lo:
                raise CorruptObjectError(f"register range {m[0]} runs backwards")
            if hi > _MAX_REGISTER:  # s[2:2147483648] would make two billion units to follow
                raise CorruptObjectError(f"register range {m[0]} runs past the end of any register file")
            found.append(Register(m["file"], lo, hi - lo + 1))
    return tuple(found)


def split_top_level(text: str, separators: str) -> list[str]:
    """Split ``text`` at any of ``separators`` that are not inside ``[]`` or ``()``."""
    if "[" not in text and "(" not in text:  # the common case, and the fast one
        if len(separators) == 1:
            return [p.strip() for p in text.split(separators) if p.strip()]
        return text.split()
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif depth == 0 and ch in separators:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_instruction(text: str, line: int = 0, address: int | None = None) -> Instruction | None:
    """Parse one instruction (comment already removed); None if ``text`` is not one."""
    text = text.strip()
    mnemonic, _, rest = text.partition(" ")
    if not _MNEMONIC.match(mnemonic):
        return None
    operands: list[Operand] = []
    modifiers: list[str] = []
    for piece in split_top_level(rest, ","):
        tokens = split_top_level(piece, " \t")
        if not tokens:
            continue
        # Once a modifier has been seen, everything after it is a modifier too (`0 offen offset:16`).
        if modifiers or _is_modifier(tokens[0]):
            modifiers.extend(tokens)
            continue
        operands.append(_operand(tokens[0]))
        modifiers.extend(tokens[1:])
    return Instruction(mnemonic, tuple(operands), tuple(modifiers), line, " ".join(text.split()), address)


@functools.lru_cache(maxsize=4096)
def _operand(text: str) -> Operand:
    # Operand texts repeat endlessly (v0, s[0:3], off): parse each once.
    return Operand(text, parse_registers(text))


@functools.lru_cache(maxsize=4096)
def _is_modifier(token: str) -> bool:
    # `offset:16`, `op_sel:[0,1]`, `row_shr:1`, `offen`, `glc` ... but not `s[0:1]` nor `hwreg(...)`.
    if ":" in token.split("[", 1)[0].split("(", 1)[0]:
        return True
    return token in {"offen", "idxen", "addr64", "glc", "slc", "dlc", "scc", "nt", "sc0", "sc1", "lds", "tfe",
                     "lwe", "da", "d16", "a16", "unorm", "gds", "clamp", "bound_ctrl"}


def is_objdump(text: str) -> bool:
    """True if ``text`` looks like ``llvm-objdump -d`` output rather than assembler text."""
    for line in text.splitlines()[:400]:
        if _OBJDUMP_FUNCTION.match(line):
            return True
    return False


def parse_functions(text: str) -> list[Function]:
    """The functions of assembler text or of an ``llvm-objdump -d`` disassembly, with their CFGs.

    Raises :class:`~regsurvey.errors.CorruptObjectError` (one line) for text it cannot read, such as a
    register range that runs backwards or a register index past any register file.

    The last texts' parses are kept: a survey reads one object's text three times (the code's
    registers, the kernarg lint, the register pressure), and parsing is most of each. Callers read
    the functions and never change them."""
    return list(_parsed(text))


@functools.lru_cache(maxsize=2)
def _parsed(text: str) -> tuple[Function, ...]:
    if is_objdump(text):
        return tuple(_parse_objdump(text))
    return tuple(_parse_assembler(text))


# -- assembler text ---------------------------------------------------------------------------------

def _strip_comment(line: str) -> str:
    cut = line.find(";")
    line = line if cut < 0 else line[:cut]
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def _parse_assembler(text: str) -> Iterator[Function]:
    functions = {m[1] for line in text.splitlines() if (m := _TYPE_FUNCTION.match(line))}
    current: str | None = None
    start_line = 0
    items: list[Instruction | tuple[str, int]] = []  # instructions and (label, alignment) marks
    align = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        label = _LABEL.match(line)
        if label:
            name = label[1]
            if name in functions:
                if current is not None:
                    yield _function(current, items, start_line)
                current, start_line, items, align = name, number, [], 0
                continue
            if current is not None and name.startswith(".Lfunc_end"):
                yield _function(current, items, start_line)
                current, items = None, []
                continue
            if current is not None:
                items.append((name, align))  # every label up to the next instruction shares the alignment
            line = line[label.end():].strip()
            if not line:
                continue
        if current is None:
            continue
        if line.startswith("."):
            if line.startswith(".p2align"):
                try:
                    align = int(split_top_level(line[len(".p2align"):], ",")[0], 0)
                except (ValueError, IndexError):
                    align = 0
            elif line.startswith((".section", ".size")):
                yield _function(current, items, start_line)
                current, items = None, []
            continue
        inst = parse_instruction(line, number)
        if inst is not None:
            items.append(inst)
            align = 0
    if current is not None:
        yield _function(current, items, start_line)


def _function(name: str, items: list[Instruction | tuple[str, int]], start_line: int) -> Function:
    # Only labels something refers to start a block: `.Ltmp` debug labels split nothing, nor does the
    # label right after a long branch's s_getpc_b64 (it only names the address the offset is taken from).
    defined = {item[0] for item in items if not isinstance(item, Instruction)}
    after_getpc = {item[0] for prev, item in zip(items, items[1:]) if not isinstance(item, Instruction)
                   and isinstance(prev, Instruction) and prev.mnemonic == "s_getpc_b64"}
    used = {name for item in items if isinstance(item, Instruction) for op in item.operands
            if "." in op.text or op.text in defined for name in re.findall(r"[.\w$]+", op.text)
            if name in defined} - after_getpc
    instructions: list[Instruction] = []
    starts: dict[int, tuple[list[str], int]] = {}  # instruction index -> labels, alignment
    for item in items:
        if not isinstance(item, Instruction) and item[0] not in used:
            continue
        if isinstance(item, Instruction):
            if _is_branch(item.mnemonic) and item.mnemonic != "s_setpc_b64" and item.operands:
                item = _with_target(item, item.operands[0].text)
            instructions.append(item)
        else:
            labels, align = starts.setdefault(len(instructions), ([], 0))
            labels.append(item[0])
            starts[len(instructions)] = (labels, max(align, item[1]))
    return _blocks(name, instructions, {i: (tuple(ls), a) for i, (ls, a) in starts.items()}, start_line)


def _with_target(inst: Instruction, target: str) -> Instruction:
    return Instruction(inst.mnemonic, inst.operands, inst.modifiers, inst.line, inst.text, inst.address, target)


# -- objdump ----------------------------------------------------------------------------------------

def _parse_objdump(text: str) -> Iterator[Function]:
    current: str | None = None
    base = 0
    start_line = 0
    instructions: list[Instruction] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _OBJDUMP_FUNCTION.match(raw)
        if header:
            if current is not None:
                yield _objdump_function(current, instructions, start_line)
            current, base, start_line, instructions = header[2], int(header[1], 16), number, []
            continue
        if current is None or not raw.startswith((" ", "\t")):
            continue
        code, _, comment = raw.partition("//")
        address_match = _OBJDUMP_ADDRESS.match(comment)
        inst = parse_instruction(code, number)
        if inst is None:
            continue
        address = int(address_match[1], 16) - base if address_match else None
        inst = Instruction(inst.mnemonic, inst.operands, inst.modifiers, number, inst.text, address)
        if _is_branch(inst.mnemonic) and inst.mnemonic != "s_setpc_b64" and inst.operands and address is not None:
            try:
                # SOPP branches: simm16 in dwords, relative to the next instruction (4 bytes on).
                simm = int(inst.operands[0].text, 0)
            except ValueError:
                simm = None
            if simm is not None:
                simm = simm - 0x10000 if simm >= 0x8000 else simm
                inst = _with_target(inst, str(address + 4 + 4 * simm))
        instructions.append(inst)
    if current is not None:
        yield _objdump_function(current, instructions, start_line)


def _objdump_function(name: str, instructions: list[Instruction], start_line: int) -> Function:
    # Padding after the last s_endpgm (s_code_end, s_nop) belongs to no block that matters; blocks
    # start at branch targets, named by their address.
    targets = {inst.target for inst in instructions if inst.target is not None}
    starts: dict[int, tuple[tuple[str, ...], int]] = {}
    for i, inst in enumerate(instructions):
        if inst.address is not None and str(inst.address) in targets:
            # A 256-byte aligned start (address % 256 == 0) plays the part of `.p2align 8`.
            starts[i] = ((str(inst.address),), 8 if inst.address % 256 == 0 else 0)
    return _blocks(name, instructions, starts, start_line)


# -- blocks and CFG ---------------------------------------------------------------------------------

def _is_branch(mnemonic: str) -> bool:
    return mnemonic == "s_branch" or mnemonic.startswith("s_cbranch_") or mnemonic == "s_setpc_b64"


def _blocks(name: str, instructions: list[Instruction], starts: dict[int, tuple[tuple[str, ...], int]],
            start_line: int) -> Function:
    leaders = sorted({0, *starts} | {i + 1 for i, inst in enumerate(instructions)
                                     if _is_branch(inst.mnemonic) or inst.mnemonic in _ENDS_WAVE})
    blocks: list[Block] = []
    for n, first in enumerate(leaders):
        last = leaders[n + 1] if n + 1 < len(leaders) else len(instructions)
        if first >= len(instructions) and first not in starts:
            continue
        labels, align = starts.get(first, ((), 0))
        blocks.append(Block(len(blocks), labels, instructions[first:last], aligned=align))
    by_label = {label: block.index for block in blocks for label in block.labels}
    function = Function(name, instructions, blocks, start_line)
    for block in blocks:
        last_inst = block.instructions[-1] if block.instructions else None
        falls = block.index + 1 if block.index + 1 < len(blocks) else None
        if last_inst is None:
            block.successors = [falls] if falls is not None else []
            continue
        mnemonic = last_inst.mnemonic
        if mnemonic in _ENDS_WAVE:
            block.successors = []
        elif mnemonic == "s_setpc_b64":
            target = _long_branch_target(block, by_label)
            if target is None:
                function.unresolved_jumps += 1
                block.successors = [b.index for b in blocks]
            else:
                block.successors = [target]
        elif _is_branch(mnemonic):
            target = by_label.get(last_inst.target or "")
            if target is None:
                # A branch out of the function we cannot see: assume it may go anywhere.
                function.unresolved_jumps += 1
                block.successors = [b.index for b in blocks]
            elif mnemonic == "s_branch":
                block.successors = [target]
            else:
                block.successors = [target] + ([falls] if falls is not None and falls != target else [])
        else:
            block.successors = [falls] if falls is not None else []
    return function


def _long_branch_target(block: Block, by_label: dict[str, int]) -> int | None:
    """The block a long branch (``s_getpc_b64``, ``s_add_u32``/``s_sub_u32``, ``s_addc``/``s_subb``,
    ``s_setpc_b64`` on one register pair) jumps to, or None if it is not one."""
    insts = block.instructions
    setpc = insts[-1]
    pair = setpc.operand_registers(0)
    if len(pair) != 1 or pair[0].count != 2:
        return None
    lo, hi = pair[0].index, pair[0].index + 1
    getpc = low = high = None
    for inst in insts[:-1]:
        regs = inst.operand_registers(0)
        if inst.mnemonic == "s_getpc_b64" and regs == pair:
            getpc, low, high = inst, None, None
        elif regs == (Register("s", lo),) and inst.mnemonic in ("s_add_u32", "s_sub_u32"):
            low = inst
        elif regs == (Register("s", hi),) and inst.mnemonic in ("s_addc_u32", "s_subb_u32"):
            high = inst
    if getpc is None or low is None or len(low.operands) < 3:
        return None
    expression = low.operands[2].text
    # Assembler text: the destination label appears in the expression (`(.LBB0_5-.Lpost_getpc0)&...`).
    for name in re.findall(r"[.\w$]+", expression):
        if name in by_label and not name.startswith(".Lpost_getpc"):
            return by_label[name]
    # Disassembly: numbers, relative to the instruction after s_getpc_b64.
    if getpc.address is None:
        return None
    try:
        value = int(expression, 0) & 0xFFFFFFFF
        value |= (int(high.operands[2].text, 0) & 0xFFFFFFFF) << 32 if high is not None else 0
    except (ValueError, IndexError):
        return None
    value = value - (1 << 64) if value >= 1 << 63 else value
    offset = value if low.mnemonic == "s_add_u32" else -value
    return by_label.get(str(getpc.address + 4 + offset))


def registers_named(text: str) -> dict[str, int]:
    """Per register file (``v``, ``a``, ``s`` ...), one past the highest index that any instruction of
    the text's functions names: ``v[4:7]`` counts to 8. Directives and comments are not instructions.

    For ``v`` and ``a`` this is LLVM's ``; NumVgprs`` and ``; NumAgprs``: LLVM counts a register file
    up to the highest register the code uses (its ``; NumVgprs`` comment is not read here).
    """
    extent: dict[str, int] = {}
    for function in parse_functions(text):
        for inst in function.instructions:
            for operand in inst.operands:
                for reg in operand.registers:
                    end = reg.index + reg.count
                    if end > extent.get(reg.file, 0):
                        extent[reg.file] = end
    return extent


def reachable(function: Function, entry: int) -> set[int]:
    """Indices of the blocks reachable from block ``entry``."""
    seen, stack = set(), [entry]
    while stack:
        b = stack.pop()
        if b in seen:
            continue
        seen.add(b)
        stack.extend(function.blocks[b].successors)
    return seen


# -- directives and metadata ------------------------------------------------------------------------

def amdhsa_directives(text: str) -> dict[str, dict[str, int]]:
    """The integer ``.amdhsa_*`` directives of each ``.amdhsa_kernel NAME`` block, by kernel name
    (``{"add_kernel": {"user_sgpr_kernarg_preload_length": 12, ...}}``)."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for raw in text.splitlines():
        line = _strip_comment(raw).strip()
        if line.startswith(".amdhsa_kernel "):
            current = out.setdefault(line.split(None, 1)[1].strip(), {})
        elif line.startswith(".end_amdhsa_kernel"):
            current = None
        elif current is not None and line.startswith(".amdhsa_"):
            key, _, value = line[len(".amdhsa_"):].partition(" ")
            try:
                current[key] = int(value.strip(), 0)
            except ValueError:
                continue
    return out


def amdgcn_target(text: str) -> str | None:
    """The ``.amdgcn_target`` string (``amdgpu9.50-amd-amdhsa-unknown-gfx950``), or None."""
    m = re.search(r'^\s*\.amdgcn_target\s+"([^"]+)"', text, re.M)
    return m[1] if m else None


def metadata(text: str) -> dict | None:
    """The metadata map between ``.amdgpu_metadata`` and ``.end_amdgpu_metadata``, or None."""
    m = re.search(r"^\s*\.amdgpu_metadata\s*$(.*?)^\s*\.end_amdgpu_metadata", text, re.M | re.S)
    if not m:
        return None
    lines = [ln for ln in m[1].splitlines() if ln.strip() and ln.strip() not in ("---", "...")]
    value, _ = _yaml_node(lines, 0, _indent(lines[0]) if lines else 0)
    return value if isinstance(value, dict) else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _yaml_scalar(text: str) -> object:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text, 0)
    except ValueError:
        return text


def _yaml_node(lines: list[str], pos: int, indent: int) -> tuple[object, int]:
    """Parse the block node whose lines start at ``pos`` with ``indent``; return it and the next line."""
    if pos < len(lines) and lines[pos].lstrip().startswith("- "):
        items: list[object] = []
        while pos < len(lines) and _indent(lines[pos]) == indent and lines[pos].lstrip().startswith("- "):
            # "- .key: value" opens a map whose further keys sit two columns deeper.
            body = lines[pos].lstrip()[2:]
            inner = indent + 2 + (len(body) - len(body.lstrip(" ")))
            if ":" in body and not body.strip().startswith(("'", '"')):
                rewritten = [" " * inner + body.strip()] + lines[pos + 1:]
                item, used = _yaml_node(rewritten, 0, inner)
                pos += used
            else:
                item, pos = _yaml_scalar(body), pos + 1
            items.append(item)
        return items, pos
    mapping: dict[str, object] = {}
    while pos < len(lines) and _indent(lines[pos]) == indent and not lines[pos].lstrip().startswith("- "):
        key, _, value = lines[pos].strip().partition(":")
        pos += 1
        if value.strip():
            mapping[key.strip()] = _yaml_scalar(value)
        elif pos < len(lines) and (_indent(lines[pos]) > indent or lines[pos].lstrip().startswith("- ")):
            mapping[key.strip()], pos = _yaml_node(lines, pos, _indent(lines[pos]))
        else:
            mapping[key.strip()] = None
    return mapping, pos
