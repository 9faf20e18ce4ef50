"""A small parser for AMDGCN assembly: Triton's ``amdgcn`` text and ``llvm-objdump -d`` disassembly.

It knows what the lint (and the AMD object reader's VGPR count) needs and nothing more:

- operands and the registers they name (``s5``, ``s[36:43]``, ``v[0:3]``, ``a[0:15]``, ``ttmp[4:5]``,
  ``vcc``, ``vcc_lo``, ``exec``, ``m0`` ...), with the modifiers (``offen``, ``offset:16``, ``glc``, gfx12's
  ``nv`` and ``scope:SCOPE_SE``) apart;
- gfx1250's VGPRs above v255: an instruction encodes ``v0`` and ``s_set_vgpr_msb`` supplies the high bits;
  LLVM (its printer and llvm-objdump alike) writes the register meant after it, ``v0 /*v256*/``, and that
  register is the operand's;
- VOPD dual issue (gfx11+): ``v_dual_mul_f32 v1, v2, v3 :: v_dual_add_f32 v4, v5, v6`` is one instruction
  of two halves (:attr:`Instruction.dual` holds the second), both reading before either writes;
- functions, their instructions (each with its line in the text, and its address in a disassembly),
  labels and the ``.p2align`` that precedes a label;
- the highest register of each file that the instructions name (``registers_named``: the exact
  ``NumVgprs`` the resource reader needs where the object holds only a rounded one);
- branches (``s_branch``, ``s_cbranch_*``, the ``s_getpc``/``s_add``/``s_setpc`` long branch and gfx12's
  ``s_get_pc_i64``/``s_add_co_u32``/``s_set_pc_i64`` spelling of it, gfx1250's ``s_add_pc_i64``, ``s_endpgm``),
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
from dataclasses import dataclass, field, replace

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
# gfx1250: `v0 /*v256*/`, `-v1 /*v257*/`, `v[0:1] /*v[256:257]*/`: the register the encoded one stands for
# under the current s_set_vgpr_msb, written after it by LLVM's printer and llvm-objdump.
_MSB_REGISTER = re.compile(r"(?<![\w.$])([sva](?:\d+|\[\d+:\d+\]))([^\s,]*)\s*/\*\s*([sva](?:\d+|\[\d+:\d+\]))\s*\*/")
# VOPD (gfx11+): the two halves of a dual-issue VALU instruction.
_DUAL = " :: "
# `0000000000001600 <add_kernel>:` and `\ts_load ... // 000000001600: C0060080 00000000 <add_kernel+0x100>`.
_OBJDUMP_FUNCTION = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:\s*$")
_OBJDUMP_ADDRESS = re.compile(r"^\s*([0-9a-fA-F]+):")
# Where objdump's `// ADDRESS: BYTES` comment starts (after `v0 /*v256*/` it follows `*/` unspaced).
_OBJDUMP_COMMENT = re.compile(r"//\s*[0-9a-fA-F]+:")
_LABEL = re.compile(r"^([.\w$]+):")
_TYPE_FUNCTION = re.compile(r"^\s*\.type\s+([.\w$]+)\s*,\s*@function")

# Instructions that end a basic block. s_cbranch_* falls through as well; s_endpgm and friends end
# the wave; s_setpc_b64 (gfx12: s_set_pc_i64) is a jump (in a kernel: a long branch, see _long_branch_destination);
# gfx1250's s_add_pc_i64 jumps by an offset from the instruction after it.
_ENDS_WAVE = {"s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done", "s_code_end"}
_SET_PC = ("s_setpc_b64", "s_set_pc_i64")
_GET_PC = ("s_getpc_b64", "s_get_pc_i64")
_ADD_PC = "s_add_pc_i64"
# The halves of a long branch's offset arithmetic (gfx12 spells them s_add_co_u32 ...), and gfx12's 64-bit add.
_ADD_LOW = {"s_add_u32": 1, "s_add_co_u32": 1, "s_sub_u32": -1, "s_sub_co_u32": -1}
_ADD_HIGH = ("s_addc_u32", "s_add_co_ci_u32", "s_subb_u32", "s_sub_co_ci_u32")


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
    disassembly, or None. ``dual`` is the second half of a VOPD dual-issue instruction (``v_dual_X ... ::
    v_dual_Y ...``): this instruction is then the first half (its ``text`` the whole line), and the two
    read their operands before either writes. An operand gfx1250 encodes below v256 and LLVM annotates
    (``v0 /*v256*/``) is the annotated register; ``text`` keeps the line as printed.
    """

    mnemonic: str
    operands: tuple[Operand, ...]
    modifiers: tuple[str, ...]
    line: int
    text: str
    address: int | None = None
    target: str | None = None
    dual: Instruction | None = None

    @property
    def halves(self) -> tuple[Instruction, ...]:
        """The instruction's parts: itself, and the second half of a VOPD pair."""
        return (self,) if self.dual is None else (self, self.dual)

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
    unresolved_jumps: int = 0  # jumps whose destination could not be found: edges to every block

    @property
    def vgprs_unnamed(self) -> bool:
        """Whether the code switches to VGPRs above v255 (gfx1250's ``s_set_vgpr_msb`` with a nonzero MSB) and
        no operand names the register it means (LLVM's ``v0 /*v256*/``): a disassembler's text that prints
        only the encoded register, v0 for v256. Its VGPR operands cannot be told apart."""
        switched = False
        for inst in self.instructions:
            if "/*" in inst.text:
                return False
            if inst.mnemonic == "s_set_vgpr_msb" and inst.operands:
                try:
                    switched = switched or bool(_literal(inst.operands[0].text) & 0xFF)
                except ValueError:
                    switched = True
        return switched

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
    shown = " ".join(text.split())
    if "/*" in text:
        text = _MSB_REGISTER.sub(r"\3\2", text)
    if _DUAL in text:
        first, _, second = text.partition(_DUAL)
        x, y = _one_instruction(first, line, address, shown), _one_instruction(second, line, address, shown)
        if x is None or y is None:
            return None
        return replace(x, dual=y)
    return _one_instruction(text, line, address, shown)


def _one_instruction(text: str, line: int, address: int | None, shown: str) -> Instruction | None:
    mnemonic, _, rest = text.strip().partition(" ")
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
    return Instruction(mnemonic, tuple(operands), tuple(modifiers), line, shown, address)


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
    # label right after a long branch's s_getpc_b64 or s_add_pc_i64 (it only names the address the offset is
    # taken from).
    defined = {item[0] for item in items if not isinstance(item, Instruction)}
    after_getpc = {item[0] for prev, item in zip(items, items[1:]) if not isinstance(item, Instruction)
                   and isinstance(prev, Instruction) and prev.mnemonic in (*_GET_PC, _ADD_PC)}
    used = {name for item in items if isinstance(item, Instruction) for op in item.operands
            if "." in op.text or op.text in defined for name in re.findall(r"[.\w$]+", op.text)
            if name in defined} - after_getpc
    instructions: list[Instruction] = []
    starts: dict[int, tuple[list[str], int]] = {}  # instruction index -> labels, alignment
    for item in items:
        if not isinstance(item, Instruction) and item[0] not in used:
            continue
        if isinstance(item, Instruction):
            if item.mnemonic == _ADD_PC and item.operands:
                # `s_add_pc_i64 .LBB0_5-.Lpost_addpc0`: the block label the offset is taken to.
                names = [n for n in re.findall(r"[.\w$]+", item.operands[0].text)
                         if n in defined and n not in after_getpc]
                item = _with_target(item, names[0]) if len(names) == 1 else item
            elif item.mnemonic in _SET_PC:
                found = _long_branch_destination(instructions, item)
                item = _with_target(item, found) if found in defined and found not in after_getpc else item
            elif _is_branch(item.mnemonic) and item.operands:
                item = _with_target(item, item.operands[0].text)
            instructions.append(item)
        else:
            labels, align = starts.setdefault(len(instructions), ([], 0))
            labels.append(item[0])
            starts[len(instructions)] = (labels, max(align, item[1]))
    return _blocks(name, instructions, {i: (tuple(ls), a) for i, (ls, a) in starts.items()}, start_line)


def _with_target(inst: Instruction, target: str) -> Instruction:
    return replace(inst, target=target)


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
        cut = _OBJDUMP_COMMENT.search(raw)
        code, comment = (raw[:cut.start()], raw[cut.start() + 2:]) if cut else raw.partition("//")[::2]
        address_match = _OBJDUMP_ADDRESS.match(comment)
        address = int(address_match[1], 16) - base if address_match else None
        inst = parse_instruction(code, number, address)
        if inst is None:
            continue
        if _is_branch(inst.mnemonic) and inst.mnemonic not in (*_SET_PC, _ADD_PC) and inst.operands \
                and address is not None:
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
    for i, inst in enumerate(instructions):
        if inst.mnemonic in _SET_PC:
            found = _long_branch_destination(instructions[:i], inst)
            if found is not None and found.isdigit():
                instructions[i] = _with_target(inst, found)
        # s_add_pc_i64 <literal>: bytes from the instruction after it (its own size is its literal's).
        after = instructions[i + 1].address if i + 1 < len(instructions) else None
        if inst.mnemonic == _ADD_PC and inst.operands and after is not None:
            try:
                offset = _literal(inst.operands[0].text) & 0xFFFFFFFFFFFFFFFF
            except ValueError:
                continue
            offset = offset - (1 << 64) if offset >= 1 << 63 else offset
            instructions[i] = _with_target(inst, str(after + offset))
    targets = {inst.target for inst in instructions if inst.target is not None}
    starts: dict[int, tuple[tuple[str, ...], int]] = {}
    for i, inst in enumerate(instructions):
        if inst.address is not None and str(inst.address) in targets:
            # A 256-byte aligned start (address % 256 == 0) plays the part of `.p2align 8`.
            starts[i] = ((str(inst.address),), 8 if inst.address % 256 == 0 else 0)
    return _blocks(name, instructions, starts, start_line)


# -- blocks and CFG ---------------------------------------------------------------------------------

def _is_branch(mnemonic: str) -> bool:
    return mnemonic in ("s_branch", _ADD_PC, *_SET_PC) or mnemonic.startswith("s_cbranch_")


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
        elif _is_branch(mnemonic):
            target = by_label.get(last_inst.target or "")
            if target is None:
                # A branch out of the function we cannot see: assume it may go anywhere.
                function.unresolved_jumps += 1
                block.successors = [b.index for b in blocks]
            elif mnemonic in ("s_branch", _ADD_PC, *_SET_PC):
                block.successors = [target]
            else:
                block.successors = [target] + ([falls] if falls is not None and falls != target else [])
        else:
            block.successors = [falls] if falls is not None else []
    return function


def _long_branch_destination(before: list[Instruction], setpc: Instruction) -> str | None:
    """Where a long branch jumps: ``s_getpc_b64``, ``s_add_u32``/``s_sub_u32``, ``s_addc``/``s_subb``, then
    ``setpc`` (``s_setpc_b64``) on one register pair; gfx12 spells the adds ``s_add_co_u32``/``s_add_co_ci_u32``
    (and gfx1250 the others ``s_get_pc_i64``/``s_set_pc_i64``, or one ``s_add_nc_u64``). ``before`` are the
    instructions before ``setpc``; the sequence is read from the last branch or end of the wave on. A label
    name in assembler text (the one in the offset expression, ``(.LBB0_5-.Lpost_getpc0)&4294967295``), an
    address (str of the int offset) in a disassembly, or None if it is not one."""
    pair = setpc.operand_registers(0)
    if len(pair) != 1 or pair[0].count != 2:
        return None
    lo, hi = pair[0].index, pair[0].index + 1
    run: list[Instruction] = []
    for inst in reversed(before):
        if _is_branch(inst.mnemonic) or inst.mnemonic in _ENDS_WAVE:
            break
        run.append(inst)
    getpc = low = high = None
    sign = 1
    for inst in reversed(run):
        regs = inst.operand_registers(0)
        if inst.mnemonic in _GET_PC and regs == pair:
            getpc, low, high = inst, None, None
        elif regs == (Register("s", lo),) and inst.mnemonic in _ADD_LOW:
            low, sign = inst, _ADD_LOW[inst.mnemonic]
        elif regs == (Register("s", hi),) and inst.mnemonic in _ADD_HIGH:
            high = inst
        elif regs == pair and inst.mnemonic == "s_add_nc_u64":
            low, high, sign = inst, None, 1
        elif any(r.file == "s" and lo <= r.index + k <= hi for r in regs for k in range(r.count)):
            getpc = None  # the pair written otherwise: not the offset arithmetic of a long branch
    if getpc is None or low is None or len(low.operands) < 3:
        return None
    expression = low.operands[2].text
    # Assembler text: the destination label appears in the expression.
    names = [n for n in re.findall(r"(?<![\w.$])[.A-Za-z_$][.\w$]*\b(?!\s*\()", expression)
             if not n.startswith(".Lpost_getpc")]
    if names:
        return names[0]
    # Disassembly: numbers, relative to the instruction after s_getpc_b64 (4 bytes).
    if getpc.address is None:
        return None
    try:
        value = _literal(expression) & (0xFFFFFFFFFFFFFFFF if low.mnemonic == "s_add_nc_u64" else 0xFFFFFFFF)
        value |= (_literal(high.operands[2].text) & 0xFFFFFFFF) << 32 if high is not None else 0
    except (ValueError, IndexError):
        return None
    value = value - (1 << 64) if value >= 1 << 63 else value
    return str(getpc.address + 4 + sign * value)


def _literal(text: str) -> int:
    """An integer operand as llvm-objdump prints it: ``0xffffbc14``, ``-4``, gfx12's ``lit(0xffffffff)`` or
    ``lit64(...)`` (a literal where an inline constant would do); ValueError for anything else."""
    inner = re.fullmatch(r"lit(?:64)?\((.*)\)", text.strip())
    return int(inner[1] if inner else text, 0)


def registers_named(text: str) -> dict[str, int]:
    """Per register file (``v``, ``a``, ``s`` ...), one past the highest index that any instruction of
    the text's functions names: ``v[4:7]`` counts to 8. Directives and comments are not instructions.

    For ``v`` and ``a`` this is LLVM's ``; NumVgprs`` and ``; NumAgprs``: LLVM counts a register file
    up to the highest register the code uses (its ``; NumVgprs`` comment is not read here).
    """
    extent: dict[str, int] = {}
    for function in parse_functions(text):
        for inst in function.instructions:
            for operand in (op for half in inst.halves for op in half.operands):
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
