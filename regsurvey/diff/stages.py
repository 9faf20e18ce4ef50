"""Which compiler stage first made two builds of one kernel differ: their texts, normalized and compared.

Each text kept beside an object (TTIR, TTGIR, LLVM IR, AMDGCN or PTX) is normalized before it is compared:
what records where the code came from, and not what it does, is removed:

- MLIR (TTIR, TTGIR): every ``loc(...)`` and every ``#loc... = loc(...)`` line (source files, lines, the
  names of Python variables), and what only the printer chose: attribute aliases' numbers and constants'
  places (each written out where it is used), and the spellings Triton releases print differently
  (``gpu.barrier`` and ``ttg.barrier all``, the cache policy, buffer operations' pointer types, a module's
  default ``"ttng.two-ctas" = false``); the contiguity hints Triton 3.9 prints on AMD buffer operations
  are compared only where both texts print them (:class:`Fingerprint`);
- LLVM IR: ``!dbg`` attachments, debug records (``#dbg_value``) and ``llvm.dbg`` calls, the debug
  metadata (``!DIFile``, ``!DILocation`` ...) and what only it uses, comments and ``source_filename``; the
  metadata left is numbered again in order of first use, so that nodes the debug ones no longer push along
  compare equal (what two LLVM releases print differently stays: Triton releases that bundle different LLVMs
  part at the LLIR at the latest);
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

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
    """TTIR or TTGIR without locations and without what only the printer chose (see :func:`_canonical_mlir`):
    the ``#loc`` aliases' lines, every ``loc(...)``, and the names of SSA values, which MLIR takes from the
    locations' names (the Python variables: ``%rows``, ``%acc_3``), each value numbered instead in order of
    first appearance (``%v0``, ``%v1`` ...)."""
    out = []
    for line in _ALIAS_LOC.sub("", text).splitlines():
        if _LOC_ALIAS.match(line):
            continue
        out.append(_without_locs(line) if "loc(" in line else line)
    names: dict[str, str] = {}
    return _SSA_VALUE.sub(lambda m: names.setdefault(m[0], f"%v{len(names)}"), _canonical_mlir(out)) + "\n"


# What Triton's printer chooses, and not the code: set aside so that two Tritons that build the same IR compare
# equal (Triton 3.6.0 and 3.9.0 print one kernel's IR in these different ways; tests/diff/test_stages.py):
# - attribute aliases (``#blocked1 = #ttg.blocked<...>``) are numbered in order of first use: each is written
#   out where it is used;
# - constants (``%c16_i32 = arith.constant 16 : i32``) are placed and ordered as the canonicalizer left them:
#   each is written out where it is used, ``const(16 : i32)``, and its line dropped;
# - spellings that changed: ``gpu.barrier`` (3.6) is ``ttg.barrier all`` (3.9); the cache modifier and eviction
#   policy of a load or store (3.6: ``cacheModifier = cg evictionPolicy = evict_last`` before the attributes)
#   are one ``cachePolicy = #tt.cache_policy<...>`` attribute (3.9); AMD's buffer operations name their base
#   pointer's type (3.9: ``: !tt.ptr<bf16> -> tensor<...>``); NVIDIA modules say ``"ttng.two-ctas" = false``
#   (3.9), a default 3.6 left unsaid.
_ATTRIBUTE_ALIAS = re.compile(r"(#[A-Za-z_][\w$.-]*) = (.*)")
_ALIAS_USE = re.compile(r"#[A-Za-z_][\w$.-]*")
_CONSTANT = re.compile(r"\s*(%[\w$.-]+) = arith\.constant (.*)")
_FUNC = re.compile(r"\s*tt\.func\b")
_OLD_CACHE = re.compile(r" (cacheModifier|evictionPolicy) = (\w+)")
_BUFFER_POINTER = re.compile(r" : !tt\.ptr<[^>]*> -[>] ")  # MLIR's arrow (a class: no report's ASCII arrow here)
_DEFAULT_MODULE_ATTRIBUTES = re.compile(r'"ttng\.two-ctas" = false(, )?|, "ttng\.two-ctas" = false')


def _canonical_mlir(lines: list[str]) -> str:
    """``lines`` (locations removed) with the attribute aliases and constants written out where they are used,
    and the spellings that changed between Triton releases written one way."""
    aliases: dict[str, str] = {}
    body: list[str] = []
    for line in lines:
        if line.startswith("#") and (m := _ATTRIBUTE_ALIAS.fullmatch(line)):
            aliases[m[1]] = m[2]
        else:
            body.append(line)
    if aliases:
        body = _ALIAS_USE.sub(lambda m: _alias_body(m[0], aliases), "\n".join(body)).split("\n")
    out: list[str] = []
    for function in _functions(body):
        out += _constants_written_out(function)
    return "\n".join(_spelled_once(line) for line in out)


def _alias_body(name: str, aliases: Mapping[str, str], depth: int = 0) -> str:
    """What the alias ``name`` stands for, its own aliases written out too; ``name`` when it is none."""
    body = aliases.get(name)
    if body is None or depth > 8:
        return name
    return _ALIAS_USE.sub(lambda m: _alias_body(m[0], aliases, depth + 1), body) if "#" in body else body


def _functions(lines: list[str]) -> list[list[str]]:
    """``lines`` cut before every ``tt.func``: the names of values are a function's own."""
    parts: list[list[str]] = [[]]
    for line in lines:
        if _FUNC.match(line) and parts[-1]:
            parts.append([])
        parts[-1].append(line)
    return parts


def _constants_written_out(lines: list[str]) -> list[str]:
    """One function's lines without their constants' lines, each use of a constant its value."""
    values = {m[1]: m[2] for line in lines if "arith.constant" in line and (m := _CONSTANT.fullmatch(line))}
    if not values:
        return lines
    out = []
    for line in lines:
        if "arith.constant" in line and (m := _CONSTANT.fullmatch(line)) and m[1] in values:
            continue
        out.append(_SSA_VALUE.sub(lambda m: f"const({values[m[0]]})" if m[0] in values else m[0], line)
                   if "%" in line else line)
    return out


def _spelled_once(line: str) -> str:
    """``line`` in the spelling Triton 3.9 prints, where 3.6's differed (see above)."""
    if "gpu.barrier" in line and line.strip() == "gpu.barrier":
        return line.replace("gpu.barrier", "ttg.barrier all")
    if "Modifier = " in line or "Policy = " in line:
        line = _cache_policy_attribute(line)
    if "amdg.buffer_" in line:
        line = _BUFFER_POINTER.sub(" : ", line)
    if "ttng.two-ctas" in line and line.startswith("module attributes"):
        line = _DEFAULT_MODULE_ATTRIBUTES.sub("", line)
    return line


def _cache_policy_attribute(line: str) -> str:
    """Triton 3.6's ``cacheModifier = ca evictionPolicy = evict_last`` written as 3.9's attribute, in the
    operation's attribute dictionary (whose entries MLIR prints in order of their names)."""
    old = dict((m[1], m[2]) for m in _OLD_CACHE.finditer(line))
    colon = _type_colon(line)
    if not old or colon is None:
        return line
    head, tail = _OLD_CACHE.sub("", line[:colon]), line[colon:]
    entries = [f"cachePolicy = #tt.cache_policy<cache_modifier = {old.get('cacheModifier', 'none')}, "
               f"eviction_policy = {old.get('evictionPolicy', 'evict_normal')}>"]
    if head.endswith("}") and (opening := head.rfind(" {")) != -1:
        head, entries = head[:opening], entries + _entries(head[opening + 2:-1])
    return f"{head} {{{', '.join(sorted(entries))}}}{tail}"


def _entries(dictionary: str) -> list[str]:
    """The entries (``name = value``) of an attribute dictionary's text, without its braces."""
    out, start = [], 0
    for i in _outside_brackets(dictionary, ","):
        out.append(dictionary[start:i].strip())
        start = i + 1
    return [*out, dictionary[start:].strip()]


def _type_colon(line: str) -> int | None:
    """The index of the `` : `` that starts an operation's types (the first outside braces and brackets)."""
    return next((i - 1 for i in _outside_brackets(line, ":") if line[i - 1:i + 2] == " : "), None)


def _outside_brackets(text: str, char: str) -> Iterator[int]:
    """The indexes of ``char`` in ``text`` outside braces, brackets, parentheses and angle brackets."""
    depth = 0
    for i, c in enumerate(text):
        if c in "{[(<":
            depth += 1
        elif c in "}])>":
            depth -= 1
        elif c == char and depth == 0:
            yield i


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


# Hints that some Triton releases print and others leave to the lowering (which then works them out as it goes):
# Triton 3.9 writes the contiguity of an AMD buffer operation's offsets (``{contiguity = 8 : i32}``), 3.6 does
# not. Two texts that both print them compare them; a text without any compares equal to one with them where
# nothing else differs.
_HINT = re.compile(r"(?<=[{ ])contiguity = \d+ : i32(, )?|, contiguity = \d+ : i32")
_HINTED_LINE = "amdg.buffer_"


@dataclass(frozen=True)
class Fingerprint:
    """One stage's text, normalized and hashed: as it is (``exact``) and without the hints only some Tritons
    print (``bare``; the same where it has none)."""

    exact: str
    bare: str

    @property
    def hinted(self) -> bool:
        """True when the text prints hints that another Triton would leave out."""
        return self.exact != self.bare

    def same(self, other: Fingerprint) -> bool:
        """True when the two texts are the same code: exactly, where both print the hints (or neither does);
        hints aside, where only one does."""
        return self.exact == other.exact if self.hinted == other.hinted else self.bare == other.bare


def fingerprint(stage: Stage, text: str) -> Fingerprint:
    """``text`` (``stage``'s output) normalized and hashed."""
    normalized = NORMALIZERS[stage](text)
    exact = hashlib.sha256(normalized.encode()).hexdigest()
    if _HINTED_LINE not in normalized or "contiguity" not in normalized:
        return Fingerprint(exact, exact)
    bare = "\n".join(_HINT.sub("", line).replace(" {}", "") if _HINTED_LINE in line else line
                     for line in normalized.split("\n"))
    return Fingerprint(exact, hashlib.sha256(bare.encode()).hexdigest())


def first_text_difference(before: Mapping[Stage, str], after: Mapping[Stage, str]) -> Stage | None:
    """The first stage, in the compiler's order, whose texts differ once normalized, of the stages both
    sides hold; None when every one of them agrees."""
    return next((stage for stage in TEXT_STAGES if stage in before and stage in after
                 and not fingerprint(stage, before[stage]).same(fingerprint(stage, after[stage]))), None)


__all__ = ["NORMALIZERS", "Fingerprint", "fingerprint", "first_text_difference", "normalize_amdgcn",
           "normalize_llir", "normalize_mlir", "normalize_ptx"]
