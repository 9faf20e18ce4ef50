"""Register pressure of an NVIDIA kernel, from its cubin and the PTX it was assembled from.

Live registers per instruction are nvdisasm's own (``--print-life-ranges --life-range-mode count``):
the general registers (``GPR``) and the uniform ones (``UGPR``) live at each SASS instruction. nvdisasm
13.1 refuses a kernel whose REGCOUNT is 255 ("Invalid register count : '255'"), which is every kernel
ptxas had to squeeze (the ones that spill): for those it reads a private copy whose REGCOUNT says 254.
The count only bounds the register numbers nvdisasm accepts (R0 to R254; R255 is RZ), so the life
ranges are the same.

Source lines: the cubin's ``.nv_debug_line_sass`` maps each SASS address to a line of the PTX, and the
PTX's ``.loc`` directives give that line's source location and, with ``inlined_at``, the call sites
of the ``@triton.jit`` helpers it was inlined from. Without the PTX, the cubin's ``.debug_line`` gives
the innermost location alone.

Spills are the ``STL`` stores and ``LDL`` loads of local memory, with their widths in bytes (the same
sum the object reader reports as spill store and load bytes).
"""

from __future__ import annotations

import io
import re

from elftools.common.utils import struct_parse
from elftools.dwarf.lineprogram import LineProgram
from elftools.dwarf.structs import DWARFStructs
from elftools.elf.elffile import ELFFile

from ..errors import CorruptObjectError
from ..model.pressure import Frame, Pressure
from ..objects import nvidia_object
from ..objects.elfcheck import PARSE_ERRORS, first_line
from ..objects.loop_spills import sass_loops
from ..objects.sass import SassCode, local_access, read_sass
from .build import Step, build

CLASSES = ("gpr", "ugpr")

# "/*0080*/   LDG.E R33, desc[UR4][R4.64] ;     // |   6   |        |   2    |", under a header naming the
# columns ("// | GPR   | PRED   | UGPR   |"; a class no instruction uses has no column).
_COUNTED = re.compile(r"^[ \t]*/\*([0-9a-f]+)\*/[ \t]+([^\n]*?)[ \t]*;?[ \t]*//[ \t]*\|([^\n]*)\|[ \t]*$", re.M)
_HEADER = re.compile(r"^[ \t]*//[ \t]*\|((?:[ \t]*[A-Z]+[ \t]*\|)+)[ \t]*$", re.M)
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_REGCOUNT_MAX = 254
# What nvdisasm says where it reads a cubin without flow analysis (one of another CUDA release's ptxas).
_NO_FLOW_ANALYSIS = "flow analysis is disabled"
_STACK_SLOT = re.compile(r"\[R1(?:\+(?:0x)?([0-9a-f]+))?\]")


def nvidia_pressure(cubin: bytes, target: str, ptx: str | None = None, nvdisasm: str | None = None) -> Pressure:
    """The pressure of the kernel in ``cubin``; CorruptObjectError for an object nvdisasm or the ELF
    reader rejects, ValueError where this nvdisasm reads no life ranges of it (:func:`_life_ranges`).
    ``nvdisasm``: the one of the toolchain that built it (another environment's), else this Triton's."""
    try:
        elf = ELFFile(io.BytesIO(cubin))
        kernel, _ = nvidia_object.kernel_symbol(elf)
        address_lines = _line_table(elf, ".nv_debug_line_sass" if ptx else ".debug_line")
        debug_files = _debug_line_files(elf) if not ptx else []
    except CorruptObjectError:
        raise
    except PARSE_ERRORS as exc:
        raise CorruptObjectError(f"not a readable cubin: {first_line(exc)}") from None
    counted, code = _life_ranges(cubin, nvdisasm)
    if ptx:
        by_ptx_line = _ptx_frames(ptx)
        frames_of = {address: by_ptx_line.get(line, ()) for address, (_, line) in address_lines.items()}
    else:
        frames_of = {address: ((debug_files[f - 1], line),) if 0 < f <= len(debug_files)
                     and line else () for address, (f, line) in address_lines.items()}
    starts = sorted(frames_of)
    # The CFG of the same SASS: its instructions are those with life ranges (else neither is followed).
    cfg = code if code.addresses == [address for address, _, _, _ in counted] else None
    slots = _local_slots([text for _, text, _, _ in counted], cfg)
    steps = []
    position = -1
    for i, (address, text, gpr, ugpr) in enumerate(counted):
        while position + 1 < len(starts) and starts[position + 1] <= address:
            position += 1
        frames = frames_of[starts[position]] if position >= 0 else ()
        demand = {"gpr": gpr + slots[i]} if slots is not None else None
        steps.append(Step(text, frames, {"gpr": gpr, "ugpr": ugpr}, _spill(text), demand))
    return build(kernel, target, "nvdisasm life ranges", CLASSES, steps, sass_loops(cfg) if cfg else None)


def _life_ranges(cubin: bytes, program: str | None = None) -> tuple[list[tuple[int, str, int, int]], SassCode]:
    """(address, instruction, live GPRs, live UGPRs) of each SASS instruction, from nvdisasm (``program``,
    else this Triton's); and the instructions and CFG of the same text.

    ValueError where that nvdisasm computes no life ranges of the cubin: CUDA 13's reads a CUDA 12 ptxas'
    cubin (Triton 3.6's on sm90) only in its old format, without flow analysis; the nvdisasm bundled with
    the Triton that built it does."""
    data = nvidia_object.with_regcount_at_most(cubin, _REGCOUNT_MAX)
    try:
        out = nvidia_object.nvdisasm(data, ["-c", "-plr", "-lrm", "count"], program)
    except CorruptObjectError as exc:
        if _NO_FLOW_ANALYSIS not in str(exc):
            raise
        raise ValueError(f"{exc} (the cubin is of another CUDA release's ptxas: the nvdisasm of the toolchain "
                         "that built it reads its life ranges)") from None
    header = _HEADER.search(out)
    if header is None:
        raise CorruptObjectError("nvdisasm printed no life ranges")
    columns = [name.strip() for name in header[1].split("|") if name.strip()]
    rows = []
    for m in _COUNTED.finditer(out):
        cells = dict(zip(columns, m[3].split("|")))
        rows.append((int(m[1], 16), " ".join(m[2].split()), _count(cells.get("GPR", "")),
                     _count(cells.get("UGPR", ""))))
    if not rows:
        raise CorruptObjectError("nvdisasm printed no life ranges")
    return rows, read_sass(out)


# -- local slots: the demand before spilling ------------------------------------------------------------------

def _local_slots(texts: list[str], code: SassCode | None) -> list[int] | None:
    """Per instruction, the 32-bit words of spill slots live into it: local memory at ``[R1+offset]`` (R1 is
    the stack pointer) from an ``STL`` to its last ``LDL``, along the CFG of the SASS (``code``:
    :mod:`regsurvey.objects.sass`). None when the kernel does not spill, or where that CFG cannot be known
    (none given, an indirect branch, a call or a return: ``BRX``, ``JMX``, ``CALL``, ``RET``)."""
    effects: list[tuple[int, int]] = []  # (words stored, words loaded)
    ids: dict[int, int] = {}
    for text in texts:
        access = local_access(text)
        at = _STACK_SLOT.search(text) if access is not None else None
        if access is None or at is None:
            effects.append((0, 0))
            continue
        first = int(at[1] or "0", 16) // 4
        bits = sum(1 << ids.setdefault(first + k, len(ids)) for k in range(max(1, access[1] // 4)))
        effects.append((bits, 0) if access[0] == "STL" else (0, bits))
    if not ids:
        return None
    stored = 0
    for d, _ in effects:
        stored |= d
    effects = [(d, u & stored) for d, u in effects]  # a load of a slot no store writes holds no spilled value
    if code is None or code.unresolved or code.calls():
        return None
    successors = code.instruction_successors()
    live_in = [0] * len(texts)
    changed = True
    while changed:  # backwards to a fixed point over the instructions (a few thousand: cheap)
        changed = False
        for i in range(len(texts) - 1, -1, -1):
            out = 0
            for j in successors[i]:
                out |= live_in[j]
            d, u = effects[i]
            new = (out & ~d) | u
            if new != live_in[i]:
                live_in[i] = new
                changed = True
    return [mask.bit_count() for mask in live_in]


def _count(cell: str) -> int:
    cell = cell.strip()
    return int(cell) if cell.isdigit() else 0


def _spill(text: str) -> tuple[str, str, int] | None:
    access = local_access(text)
    if access is None:
        return None
    op, size = access
    return ("store" if op == "STL" else "reload", "local", size)


# -- line tables ------------------------------------------------------------------------------------------

def _program(elf: ELFFile, name: str) -> LineProgram | None:
    section = elf.get_section_by_name(name)
    if section is None:
        return None
    stream = io.BytesIO(section.data())
    structs = DWARFStructs(little_endian=elf.little_endian, dwarf_format=32, address_size=elf.elfclass // 8)
    header = struct_parse(structs.Dwarf_lineprog_header, stream, 0)
    return LineProgram(header=header, stream=stream, structs=structs, program_start_offset=stream.tell(),
                       program_end_offset=header["unit_length"] + 4)


def _line_table(elf: ELFFile, name: str) -> dict[int, tuple[int, int]]:
    """Address -> (file number, line) of the line program in section ``name`` (empty without one)."""
    program = _program(elf, name)
    if program is None:
        return {}
    table: dict[int, tuple[int, int]] = {}
    for entry in program.get_entries():
        state = entry.state
        if state is not None and not state.end_sequence:
            table[state.address] = (state.file, state.line)
    return table


def _debug_line_files(elf: ELFFile) -> list[str]:
    program = _program(elf, ".debug_line")
    if program is None:
        return []
    directories = [d.decode(errors="replace") for d in program.header["include_directory"]]
    files = []
    for entry in program.header["file_entry"]:
        name = entry.name.decode(errors="replace")
        index = entry.dir_index
        files.append(f"{directories[index - 1]}/{name}" if 0 < index <= len(directories) else name)
    return files


def _ptx_frames(ptx: str) -> dict[int, tuple[Frame, ...]]:
    """For each PTX line (from 1), the source frames of the ``.loc`` in force there: its own location,
    then the call sites it was inlined at (followed through the ``.loc`` that each names)."""
    files = {int(m[1]): m[2] for m in _PTX_FILE.finditer(ptx)}
    chains: dict[tuple[int, int, int], tuple[Frame, ...]] = {}  # a location -> its frames, as last seen
    out: dict[int, tuple[Frame, ...]] = {}
    current: tuple[Frame, ...] = ()
    for number, line in enumerate(ptx.splitlines(), start=1):
        if ".loc" in line:
            m = _PTX_LOC.match(line)
            if m:
                f, n, col = int(m[1]), int(m[2]), int(m[3])
                own: Frame = (files.get(f, ""), n)
                if n == 0:
                    current = ()
                    continue
                outer: tuple[Frame, ...] = ()
                if m[4] is not None:
                    at = (int(m[4]), int(m[5]), int(m[6]))
                    outer = chains.get(at) or ((files.get(at[0], ""), at[1]),)
                current = (own, *outer)
                chains[(f, n, col)] = current
                continue
        out[number] = current
    return out
