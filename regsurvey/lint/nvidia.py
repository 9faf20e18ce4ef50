"""The NVIDIA side of the kernarg lint: parameters the PTX loads that the SASS never reads.

A kernel's parameters live in constant bank 0 (``c[0x0][...]``), in an area from 0x210 on sm_90 and from
0x380 on sm_100; each parameter is aligned in the bank (a 64-byte aligned TMA descriptor passed by value
first starts at 0x240 on sm_90). The lint takes the layout ptxas recorded in the cubin. The PTX reads a
parameter with ``ld.param``; ptxas turns that into ``LDC``/``ULDC``/``LDCU`` or a constant-bank operand
of an ALU instruction. A parameter the PTX loads and no SASS instruction reads is a miscompile suspect:
the value the source uses never reaches the machine code.

Parameters whose address the PTX takes (``mov.b64 %rd, name_param_3``: TMA descriptors passed by
value, for one) are read through pointers the lint does not follow; they are never reported, and a
kernel whose SASS reads the bank at a register offset is not judged at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..model.targets import TARGETS
from .finding import ERROR, Finding, LintInputError

if TYPE_CHECKING:
    from ..objects.nvidia_object import ParamBank

_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\((.*?)\)", re.S)
_PARAM = re.compile(r"\.param\s+(.*?)\s*([\w$]+)(?:\[(\d+)\])?\s*$")
_LD_PARAM = re.compile(r"\bld\.param((?:\.\w+)*)\s+[^,\[]*(?:\{[^}]*\})?[^\[]*\[\s*([\w$]+)\s*(?:\+\s*(-?\w+))?\s*\]")
_TARGET = re.compile(r"^\s*\.target\s+sm_(\d+)", re.M)
# One SASS line of nvdisasm: "/*0020*/  @P0 LDC.64 R176, c[0x0][0x230] ;".
_SASS = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[\w]+)*)\s*(.*?);", re.M)
_BANK = re.compile(r"c\[0x0\]\[([^\]]+)\]")
_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


@dataclass(frozen=True)
class PtxParam:
    """One ``.param`` of a PTX entry: its position, byte offset in the parameter area and size."""

    index: int
    name: str
    offset: int
    size: int


def ptx_params(ptx: str, base: int = 0) -> tuple[str, list[PtxParam]]:
    """The first entry's name and its parameters, laid out as ptxas does in an area that starts at ``base``
    in constant bank 0: each aligned in the bank to its ``.align`` or, for a scalar, to its size."""
    m = _ENTRY.search(ptx)
    if not m:
        raise LintInputError("no .entry in the PTX")
    params = []
    offset = 0
    for index, decl in enumerate(p for p in m[2].split(",") if p.strip()):
        pm = _PARAM.match(decl.strip())
        if not pm:
            raise LintInputError(f"cannot read the PTX parameter {decl.strip()[:80]!r}")
        words, name, count = pm[1].split(), pm[2], int(pm[3] or 1)
        types = [w for w in words if re.fullmatch(r"\.[busf](8|16|32|64)|\.pred|\.bf16", w)]
        elem = _TYPE_BYTES.get(re.sub(r"\D", "", types[0]) if types else "32", 4) if types != [".pred"] else 1
        # `.ptr .global .align 1` describes the pointee; only an `.align` outside `.ptr` is the param's.
        align = elem
        if ".ptr" not in words and ".align" in words:
            given = words[words.index(".align") + 1:][:1]
            align = int(given[0]) if given and given[0].isdigit() else 0
            if align == 0 or align & (align - 1):
                raise LintInputError(f"the PTX parameter {decl.strip()[:80]!r} has no power-of-two .align")
        offset = -(-(base + offset) // align) * align - base
        params.append(PtxParam(index, name, offset, elem * count))
        offset += elem * count
    return m[1], params


def _ptx_reads(ptx: str, params: Sequence[PtxParam]) -> tuple[dict[int, tuple[str, int]], set[int]]:
    """Per parameter index, the first ``ld.param`` of it (text, line); and the parameters whose address
    the PTX takes (mentioned other than by ``ld.param``)."""
    by_name = {p.name: p for p in params}
    loads: dict[int, tuple[str, int]] = {}
    escaped: set[int] = set()
    body_start = ptx.find("{", _ENTRY.search(ptx).end()) if _ENTRY.search(ptx) else 0  # type: ignore[union-attr]
    if body_start < 0 or not by_name:
        return loads, escaped
    # Only the lines that name a parameter matter: found by one search over the body (a kernel's PTX runs
    # to thousands of lines, and reading each one's words cost more than the rest of the lint).
    named = re.compile(r"(?<![\w$])(?:" + "|".join(map(re.escape, sorted(by_name, key=len, reverse=True)))
                       + r")(?![\w$])")
    starts = sorted({ptx.rfind("\n", 0, at) + 1 for at in _matches(named, ptx, body_start, os.path.commonprefix(
        list(by_name)))})
    number, counted = ptx.count("\n", 0, body_start) + 1, body_start
    for start in starts:
        start = max(start, body_start)
        number += ptx.count("\n", counted, start)
        counted = start
        end = ptx.find("\n", start)
        line = ptx[start:] if end < 0 else ptx[start:end]
        code = line.split("//", 1)[0]
        mentioned = [n for n in re.findall(r"[\w$]+", code) if n in by_name]
        if not mentioned:
            continue
        ld = _LD_PARAM.search(code)
        for name in mentioned:
            index = by_name[name].index
            if ld and ld[2] == name:
                loads.setdefault(index, (" ".join(code.split()), number))
            else:
                escaped.add(index)
    return loads, escaped


def _matches(pattern: re.Pattern[str], text: str, start: int, prefix: str) -> list[int]:
    """Where ``pattern`` matches in ``text`` from ``start``; every match begins with ``prefix`` (Triton names
    its parameters ``<kernel>_param_<i>``), so only where the prefix occurs is the pattern tried."""
    if len(prefix) < 4:
        return [m.start() for m in pattern.finditer(text, start)]
    found = []
    at = text.find(prefix, start)
    while at >= 0:
        if pattern.match(text, at):
            found.append(at)
        at = text.find(prefix, at + 1)
    return found


def sass_bank_reads(sass: str) -> tuple[list[tuple[int, int]], bool]:
    """Byte ranges of constant bank 0 the SASS reads, and whether any read is at a register offset."""
    ranges = []
    indirect = False
    for m in _SASS.finditer(sass):
        opcode, suffixes, operands = m[1], m[2], m[3]
        for bank in _BANK.finditer(operands):
            try:
                start = int(bank[1], 16)
            except ValueError:
                indirect = True  # c[0x0][R2+0x10]: any parameter may be read
                continue
            ranges.append((start, start + _access_bytes(opcode, suffixes)))
    return ranges, indirect


def _access_bytes(opcode: str, suffixes: str) -> int:
    parts = suffixes.split(".")
    for part, size in (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1)):
        if part in parts:
            return size
    if opcode in ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX"):
        return 8  # double-precision ALU operands take a register pair's worth of the bank
    return 4


def param_bank_base(arch: int) -> int | None:
    """Where the parameters start in constant bank 0 on ``sm_<arch>`` (its target's record), or None for an
    arch no target is."""
    return next((t.param_bank_base for t in TARGETS.values() if t.is_nvidia and int(t.arch) == arch), None)


def lint_ptx_sass(ptx: str, sass: str, *, appended_args: int, arg_names: Sequence[str] | None = None,
                  bank: ParamBank | None = None) -> list[Finding]:
    """Parameters the PTX reads with ``ld.param`` that no SASS instruction reads from constant bank 0.

    ``appended_args``: how many parameters the compiler appended after the kernel's own, never reported
    (Triton's scratch pointers). ``bank``: the layout ptxas recorded in the cubin
    (:func:`~regsurvey.objects.nvidia_object.param_bank`); without it the layout is worked out from the PTX."""
    ranges, indirect = sass_bank_reads(sass)
    if indirect:
        return []
    return _unread(ptx, ranges, appended_args=appended_args, arg_names=arg_names, bank=bank)


def _unread(ptx: str, ranges: Sequence[tuple[int, int]], *, appended_args: int,
            arg_names: Sequence[str] | None = None, bank: ParamBank | None = None) -> list[Finding]:
    """The parameters the PTX loads that none of ``ranges`` (bytes of constant bank 0 read) covers."""
    sm = _TARGET.search(ptx)
    if not sm:
        raise LintInputError("no .target in the PTX")
    arch = int(sm[1])
    base = bank.base if bank is not None else param_bank_base(arch)
    if base is None:
        raise LintInputError(f"no known parameter bank offset for sm_{arch}")
    kernel, params = ptx_params(ptx, base)
    if bank is not None:
        params = [replace(p, offset=bank.offsets.get(p.index, p.offset)) for p in params]
    loads, escaped = _ptx_reads(ptx, params)
    skip = {p.index for p in params[max(0, len(params) - appended_args):]}
    out = []
    for p in params:
        if p.index not in loads or p.index in escaped or p.index in skip:
            continue
        lo, hi = base + p.offset, base + p.offset + p.size
        if any(start < hi and lo < end for start, end in ranges):
            continue
        text, line = loads[p.index]
        name = arg_names[p.index] if arg_names is not None and p.index < len(arg_names) else None
        out.append(Finding(
            kernel=kernel, target=f"sm{arch}", arg_index=p.index, arg_offset=p.offset, arg_name=name,
            severity=ERROR, load=text, line=line,
            reason=f"the PTX loads it (ld.param) but no SASS instruction reads c[0x0][{lo:#x}..{hi - 1:#x}]",
        ))
    return out


def read_in_words(ptx: str, cubin: bytes, *, appended_args: int) -> bool:
    """Whether every parameter the PTX loads is read by an instruction decoded from the cubin's words, without
    a disassembly (:func:`regsurvey.objects.sass_words.bank_zero_reads`): then the lint finds nothing. False
    where it cannot tell (a form the table does not know, a parameter no decoded read covers: the cubin is
    disassembled and linted in full)."""
    from ..objects.nvidia_object import param_bank
    from ..objects.sass_words import bank_zero_reads

    reads = bank_zero_reads(cubin)
    if reads is None:
        return False
    try:
        return not _unread(ptx, reads, appended_args=appended_args, bank=param_bank(cubin))
    except ValueError:  # the full lint says what is wrong
        return False


def lint_nvidia(ptx: str, cubin: bytes, *, appended_args: int, arg_names: Sequence[str] | None = None,
                sass: str | None = None) -> list[Finding]:
    """Lint one Triton NVIDIA kernel: its PTX against the SASS of its cubin.

    ``sass`` is ``nvdisasm -c`` of ``cubin`` if the caller already has it (the survey worker does);
    otherwise the cubin's instruction words are read first, and a kernel whose every loaded parameter one
    of them reads has no finding (:func:`read_in_words`); any other is disassembled here.
    ``appended_args``: how many parameters the compiler appended after the kernel's own, never reported
    (Triton's scratch pointers:
    ``compile.triton_facts.APPENDED_ARGS``). ``arg_names`` are the Python parameters that are not
    constexpr, in order. Raises :class:`~regsurvey.errors.CorruptObjectError` if nvdisasm rejects the
    cubin or it records no parameter layout, and :class:`~regsurvey.lint.LintInputError` (a ValueError)
    if the PTX has no entry or an unknown target.
    """
    from ..objects.nvidia_object import disassemble, param_bank

    if sass is None:
        if words_first() and read_in_words(ptx, cubin, appended_args=appended_args):
            return []
        sass = disassemble(cubin)
    return lint_ptx_sass(ptx, sass, appended_args=appended_args, arg_names=arg_names, bank=param_bank(cubin))


WORDS_VAR = "REGSURVEY_LINT_WORDS"


def words_first() -> bool:
    """Whether the lint reads a cubin's instruction words before it disassembles it (``REGSURVEY_LINT_WORDS=off``:
    every cubin is disassembled, as before; benchmarks compare the two)."""
    return os.environ.get(WORDS_VAR, "on") != "off"
