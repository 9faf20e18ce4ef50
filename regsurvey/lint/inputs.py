"""What the lint reads: the rows of a survey (objects and texts from the store), or loose files.

A survey row's object is read back from the store with the texts kept beside it: ``amdgcn`` or ``ptx``,
and ``llir`` (the evidence whether the source uses an argument). A loose file is amdgcn text
(``.s``/``.amdgcn``, gzip accepted) or an AMD code object (``.hsaco``/``.co``/``.o``), disassembled with
``llvm-objdump``; it comes with no LLVM IR.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..objectstore import ObjectStore
from ..results import Row, Survey
from ..targets import get_target
from . import LintInputError, arg_names_from_ttir, lint_amdgcn, lint_nvidia
from .disassembler import disassemble
from .finding import Finding

_ELF = b"\x7fELF"
_GZIP = b"\x1f\x8b"


@dataclass(frozen=True)
class LintRun:
    """Findings of one lint run, how many kernels were linted, and the seconds the lint itself took."""

    findings: tuple[Finding, ...]
    kernels: int
    seconds: float
    skipped: tuple[str, ...] = ()  # rows that could not be linted, and why


def lint_survey(survey: Survey, objects: ObjectStore, jobs: int = 1) -> LintRun:
    """Lint the object of every row that built. Rows sharing an object are linted once.

    ``jobs`` threads lint objects side by side: most of an NVIDIA object's time is nvdisasm, a separate
    process. Raises CorruptObjectError for a stored object that is missing or altered.
    """
    first: dict[str, Row] = {}
    for row in survey.rows:
        if row.ok and row.object is not None:
            first.setdefault(row.object.sha256, row)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = dict(zip(first, pool.map(lambda row: _lint_row_or_skip(row, objects), first.values())))
    seconds = time.perf_counter() - start
    found: list[Finding] = []
    for row in survey.rows:
        if row.ok and row.object is not None:
            found.extend(replace(f, key=row.row_id, target=row.target) for f in outcomes[row.object.sha256][0])
    skipped = tuple(f"{first[sha].row_id} ({first[sha].target}): {why}" for sha, (_, why) in outcomes.items() if why)
    return LintRun(tuple(found), len(first), seconds, skipped)


def _lint_row_or_skip(row: Row, objects: ObjectStore) -> tuple[list[Finding], str | None]:
    try:
        return lint_row(row, objects), None
    except LintInputError as exc:
        return [], str(exc)


# Findings are a pure function of the object and its texts: kept beside the object, linted once.
_LINT_TEXT = "lint"


def lint_row(row: Row, objects: ObjectStore) -> list[Finding]:
    """The findings of a row's stored object (without key and target), from the cache beside the
    object when this object was linted before. Raises LintInputError, CorruptObjectError."""
    assert row.object is not None
    objects.get(row.object.path, row.object.sha256)  # an altered object is never vouched for
    cached = objects.text(row.object.path, _LINT_TEXT)
    if cached is not None:
        try:
            return [Finding(**item) for item in json.loads(cached)]
        except (ValueError, TypeError):
            pass  # a damaged cache entry: lint again and rewrite it
    found = _lint_row(row, objects)
    objects.put_text(row.object.path, _LINT_TEXT, json.dumps([asdict(f) for f in found]))
    return found


def _lint_row(row: Row, objects: ObjectStore) -> list[Finding]:
    assert row.object is not None
    rel = row.object.path
    return lint_object(row.target, objects.get(rel, row.object.sha256), lambda name: objects.text(rel, name))


def lint_object(target: str, binary: bytes, text: Callable[[str], str | None]) -> list[Finding]:
    """Lint one compiled object of ``target`` given a way to its texts (``amdgcn``/``ptx``, ``llir``,
    ``ttir``; None where absent). Raises LintInputError, CorruptObjectError."""
    ttir = text("ttir")
    names = arg_names_from_ttir(ttir) if ttir else None
    if get_target(target).is_amd:
        asm = text("amdgcn")
        if asm is None:
            try:
                asm = disassemble(binary)
            except ValueError as exc:
                raise LintInputError(str(exc)) from None
        return lint_amdgcn(asm, hsaco=binary, llir=text("llir"), arg_names=names)
    ptx = text("ptx")
    if ptx is None:
        raise LintInputError("no PTX stored beside the cubin")
    try:
        return lint_nvidia(ptx, binary, arg_names=names)
    except ValueError as exc:
        raise LintInputError(str(exc)) from None


def lint_compiled(target: str, binary: bytes, texts: dict[str, str], objects: ObjectStore,
                  rel: str) -> list[Finding]:
    """Lint an object just compiled, from its texts in memory, and keep the findings beside the
    stored object at ``rel`` (where :func:`lint_row` finds them). Raises LintInputError."""
    found = lint_object(target, binary, texts.get)
    objects.put_text(rel, _LINT_TEXT, json.dumps([asdict(f) for f in found]))
    return found


def lint_file(path: Path) -> LintRun:
    """Lint one loose file: amdgcn text, or an AMD code object (disassembled with llvm-objdump).

    Raises OSError (unreadable), LintInputError (not something the lint reads),
    CorruptObjectError (an object that does not parse) and DisassemblerMissing.
    """
    data = path.read_bytes()
    if data.startswith(_GZIP):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise LintInputError(f"corrupt gzip: {exc}") from None
    start = time.perf_counter()
    if data.startswith(_ELF):
        from ..amd_object import parse_hsaco

        parse_hsaco(data)  # CorruptObjectError for a cut, altered or non-AMD object, before objdump runs
        try:
            text = disassemble(data)
        except ValueError as exc:
            raise LintInputError(str(exc)) from None
        found = lint_amdgcn(text, hsaco=data)
    else:
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise LintInputError("neither amdgcn text nor an ELF code object") from None
        found = lint_amdgcn(text)
    seconds = time.perf_counter() - start
    return LintRun(tuple(replace(f, file=str(path)) for f in found), 1, seconds)
