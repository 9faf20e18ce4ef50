"""Which compiler stage first made two builds of one kernel differ: their texts, normalized and compared.

Each text kept beside an object (TTIR, TTGIR, LLVM IR, AMDGCN or PTX) is normalized before it is compared:
what records where the code came from, and not what it does, is removed:

- MLIR (TTIR, TTGIR): every ``loc(...)`` and every ``#loc... = loc(...)`` line (source files, lines, the
  names of Python variables);
- LLVM IR: ``!dbg`` attachments, debug records (``#dbg_value``) and ``llvm.dbg`` calls, the debug
  metadata (``!DIFile``, ``!DILocation`` ...) and what only it uses, comments and ``source_filename``; the
  metadata left is numbered again in order of first use, so that nodes the debug ones no longer push along
  compare equal;
- AMDGCN and PTX: ``.loc`` and ``.file`` directives (the files' paths: the checkout's, Triton's installation),
  the labels debug ranges name (``.Ltmp3``, ``$L__tmp3``), CFI directives and every debug section
  (``.debug_info``, ``.debug_str`` ...); PTX's ``.loc`` comments with them.

Everything else stays, comments that describe code (``; NumVgprs: 84``, ``; 4-byte Folded Spill``)
included. Pure: texts in, hashes and stages out; :mod:`regsurvey.first_stage` reads the texts from the
store.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping

from ..model.stages import TEXT_STAGES, Stage

# ---- MLIR (TTIR, TTGIR) -----------------------------------------------------------------------------

_LOC_ALIAS = re.compile(r"#loc[\w.$-]* = loc\(")
_LOC_START = re.compile(r"[ \t]+loc\(")


def _closing(text: str, start: int) -> int:
    """The index just past the ``)`` closing the ``(`` at ``start - 1``, skipping strings (which may hold
    parentheses: a file's path); the text's end when it is not closed."""
    depth, i, n = 1, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _without_locs(line: str) -> str:
    """``line`` without its ``loc(...)`` parts (and the blanks before each), strings left as they are."""
    out, i = [], 0
    while True:
        m = _LOC_START.search(line, i)
        if m is None:
            out.append(line[i:])
            return "".join(out)
        if line.count('"', 0, m.start()) % 2:  # inside a string (an escaped quote aside): not a location
            out.append(line[i:m.end()])
            i = m.end()
            continue
        out.append(line[i:m.start()])
        i = _closing(line, m.end())


_SSA_VALUE = re.compile(r"%[\w$.-]+")
_ALIAS_LOC = re.compile(r"[ \t]+loc\(#loc\d*\)")  # most locations: removed at once, the others one by one


def normalize_mlir(text: str) -> str:
    """TTIR or TTGIR without locations: the ``#loc`` aliases' lines, every ``loc(...)``, and the names of
    SSA values, which MLIR takes from the locations' names (the Python variables: ``%rows``, ``%acc_3``),
    each value numbered instead in order of first appearance (``%v0``, ``%v1`` ...)."""
    out = []
    for line in _ALIAS_LOC.sub("", text).splitlines():
        if _LOC_ALIAS.match(line):
            continue
        out.append(_without_locs(line) if "loc(" in line else line)
    names: dict[str, str] = {}
    return _SSA_VALUE.sub(lambda m: names.setdefault(m[0], f"%v{len(names)}"), "\n".join(out)) + "\n"


# ---- LLVM IR ------------------------------------------------------------------------------------------

# ``, !dbg !7`` after an instruction, `` !dbg !4`` on a define (two patterns: each starts with a literal, and
# is searched for ten times faster than one with an optional comma).
_DBG_ATTACHMENTS = (re.compile(r", !dbg !\d+"), re.compile(r" !dbg !\d+"))
_METADATA_DEF = re.compile(r"!(\d+) = (.*)")
_NAMED_METADATA = re.compile(r"!([A-Za-z_.][\w.$-]*) = (.*)")
_METADATA_REF = re.compile(r"!(\d+)\b")
_DEBUG_NODE = re.compile(r"(distinct )?!(DI|DW_)")
_DEBUG_NAMED = ("llvm.dbg.cu",)
_DEBUG_INTRINSIC = re.compile(r"(call|declare) void @llvm\.dbg\.")
# Comments, debug records (LLVM 19 on) and the module's source file name.
_DROPPED_LINES = (";", "#dbg_", "source_filename")


def normalize_llir(text: str) -> str:
    """LLVM IR without debug information: see the module's docstring. The metadata nodes kept are those the
    code and the named metadata (other than ``llvm.dbg.cu``) reach through nodes that are not debug
    nodes, numbered again in order of first use."""
    body: list[str] = []
    nodes: dict[str, str] = {}
    named: list[tuple[str, str]] = []
    for pattern in _DBG_ATTACHMENTS:
        text = pattern.sub("", text)
    for line in text.splitlines():
        if line.startswith("!"):
            if m := _METADATA_DEF.fullmatch(line):
                nodes[m[1]] = m[2]
            elif (m := _NAMED_METADATA.fullmatch(line)) and m[1] not in _DEBUG_NAMED:
                named.append((m[1], m[2]))
            continue
        stripped = line.lstrip()
        if not stripped or stripped.startswith(_DROPPED_LINES) \
                or ("@llvm.dbg." in line and _DEBUG_INTRINSIC.search(line)):
            continue
        body.append(line)
    kept = _reached(nodes, [*body, *(value for _, value in named)])
    numbers: dict[str, str] = {}

    def renumbered(line: str) -> str:
        return _METADATA_REF.sub(lambda m: "!" + numbers.setdefault(m[1], str(len(numbers))), line)

    out = [renumbered("\n".join(body))]
    out += [f"!{name} = {renumbered(value)}" for name, value in named]
    # Each kept node by its new number, in that order: its own references numbered as they are first met.
    pending = sorted((n for n in kept if n in numbers), key=lambda n: int(numbers[n]))
    lines: dict[str, str] = {}
    while pending:
        node = pending.pop(0)
        if node in lines:
            continue
        lines[node] = renumbered(nodes[node])
        pending += [n for n in _METADATA_REF.findall(nodes[node]) if n in kept and n not in lines]
    out += [f"!{numbers[n]} = {value}" for n, value in sorted(lines.items(), key=lambda kv: int(numbers[kv[0]]))]
    return "\n".join(out) + "\n"


def _reached(nodes: Mapping[str, str], roots: list[str]) -> set[str]:
    """The metadata nodes that ``roots`` (lines) reach through nodes that are not debug nodes."""
    seen: set[str] = set()
    todo = [n for line in roots for n in _METADATA_REF.findall(line)]
    while todo:
        node = todo.pop()
        if node in seen or node not in nodes or _DEBUG_NODE.match(nodes[node]):
            continue
        seen.add(node)
        todo += _METADATA_REF.findall(nodes[node])
    return seen


# ---- AMDGCN and PTX ------------------------------------------------------------------------------------

_AMDGCN_DROPPED = re.compile(r"\s*(\.loc\b|\.file\b|\.cfi_|\.Ltmp\d+:)")
_SECTION = re.compile(r"\s*(\.section\s+\"?([\w.$-]+)|\.text\b|\.data\b|\.bss\b)")


def normalize_amdgcn(text: str) -> str:
    """AMDGCN without ``.loc``/``.file`` directives, debug labels, CFI directives and debug sections."""
    out, debug = [], False
    for line in text.splitlines():
        if m := _SECTION.match(line):
            debug = m[2] is not None and m[2].startswith(".debug_")
            if debug:
                continue
        if debug or _AMDGCN_DROPPED.match(line):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


_PTX_DROPPED = re.compile(r"\s*(\.loc\b|\.file\b|\$L__tmp\d+:)")
_PTX_DEBUG_SECTION = re.compile(r"\s*\.section\s+\.debug_")


def normalize_ptx(text: str) -> str:
    """PTX without ``.loc``/``.file`` directives, debug labels and debug sections (``.section .debug_info
    { ... }``)."""
    out, debug = [], False
    for line in text.splitlines():
        if debug:
            debug = line.strip() != "}"
            continue
        if _PTX_DEBUG_SECTION.match(line):
            debug = "}" not in line  # a section's braces on its own line, or ``{ }`` on this one
            continue
        if _PTX_DROPPED.match(line):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


NORMALIZERS: dict[Stage, Callable[[str], str]] = {
    Stage.TTIR: normalize_mlir, Stage.TTGIR: normalize_mlir, Stage.LLIR: normalize_llir,
    Stage.AMDGCN: normalize_amdgcn, Stage.PTX: normalize_ptx,
}


def fingerprint(stage: Stage, text: str) -> str:
    """The sha256 of ``text`` (``stage``'s output) normalized."""
    return hashlib.sha256(NORMALIZERS[stage](text).encode()).hexdigest()


def first_text_difference(before: Mapping[Stage, str], after: Mapping[Stage, str]) -> Stage | None:
    """The first stage, in the compiler's order, whose texts differ once normalized, of the stages both
    sides hold; None when every one of them agrees."""
    return next((stage for stage in TEXT_STAGES if stage in before and stage in after
                 and fingerprint(stage, before[stage]) != fingerprint(stage, after[stage])), None)


__all__ = ["NORMALIZERS", "fingerprint", "first_text_difference", "normalize_amdgcn",
           "normalize_llir", "normalize_mlir", "normalize_ptx"]
