"""What the lint reads: the rows of a survey (objects and texts from the store), or loose files.

A survey row's object is read back from the store with the texts kept beside it: ``amdgcn`` or ``ptx``,
and ``llir`` (the evidence whether the source uses an argument). A loose file is amdgcn text
(``.s``/``.amdgcn``, gzip accepted) or an AMD code object (``.hsaco``/``.co``/``.o``), disassembled with
``llvm-objdump``; it comes with no LLVM IR. A cubin is linted against the PTX of its compile
(:func:`regsurvey.analysis.lint_object`), which only a survey keeps beside it: never as a loose file.
"""

from __future__ import annotations

import functools
import gzip
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from .analysis import lint_object, read_in_words
from .compile.triton_facts import APPENDED_ARGS
from .errors import CorruptObjectError
from .lint import LintInputError, lint_amdgcn
from .lint.disassembler import disassemble
from .model.findings import Finding
from .model.results import Row, Survey
from .model.targets import TARGETS, get_target
from .store.objectstore import ObjectStore

_ELF = b"\x7fELF"
_GZIP = b"\x1f\x8b"


@dataclass(frozen=True)
class LintRun:
    """Findings of one lint run, how many kernels were linted, and the seconds the lint itself took."""

    findings: tuple[Finding, ...]
    kernels: int
    seconds: float
    skipped: tuple[str, ...] = ()  # rows that could not be linted, and why
    not_linted: frozenset[str] = frozenset()  # the sha256 of each object that could not be linted


def lint_survey(survey: Survey, objects: ObjectStore, jobs: int = 1) -> LintRun:
    """Lint the object of every row of ``survey`` that built (see :func:`lint_rows`)."""
    return lint_rows(survey.rows, objects, jobs)


def lint_rows(rows: Iterable[Row], objects: ObjectStore, jobs: int = 1) -> LintRun:
    """Lint the object of every row that built. Rows sharing an object are linted once.

    The NVIDIA objects not linted before are disassembled together first, in at most ``jobs``
    nvdisasm runs (:func:`~regsurvey.objects.nvidia_object.disassemble_many`: one run per cubin would cost
    more than many compiles); then ``jobs`` threads lint objects side by side. Raises
    CorruptObjectError for a stored object that is missing or altered.
    """
    rows = list(rows)
    first: dict[str, Row] = {}
    for row in rows:
        if row.ok and row.object is not None:
            first.setdefault(row.object.sha256, row)
    outcomes, seconds = lint_objects(list(first.values()), objects, jobs)
    found: list[Finding] = []
    for row in rows:
        if row.ok and row.object is not None:
            found.extend(replace(f, key=row.row_id, target=row.target) for f in outcomes[row.object.sha256][0])
    skipped = tuple(f"{first[sha].row_id} ({first[sha].target}): {why}" for sha, (_, why) in outcomes.items() if why)
    not_linted = frozenset(sha for sha, (_, why) in outcomes.items() if why)
    return LintRun(tuple(found), len(first), seconds, skipped, not_linted)


def lint_objects(rows: list[Row], objects: ObjectStore, jobs: int = 1
                 ) -> tuple[dict[str, tuple[tuple[Finding, ...], str | None]], float]:
    """Lint the object of each of ``rows`` (built, each with an object of its own): by object sha256,
    its findings (without key) and why it could not be linted (None when it was), and the seconds taken.
    See :func:`lint_rows`; raises CorruptObjectError likewise."""
    start = time.perf_counter()
    sass = _disassembled_together(rows, objects, jobs)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        outcomes = pool.map(lambda row: _lint_row_or_skip(row, objects, sass), rows)
        by_object = {row.object.sha256: outcome for row, outcome in zip(rows, outcomes) if row.object is not None}
    return by_object, time.perf_counter() - start


def _disassembled_together(rows: list[Row], objects: ObjectStore, jobs: int) -> dict[str, str]:
    """SASS by object sha256 of the NVIDIA rows whose findings are not stored yet, from at most
    ``jobs`` nvdisasm runs per target. A batch nvdisasm rejects is left out: its rows are then
    disassembled one by one, where the culprit's error names it."""
    from .objects.nvidia_object import disassemble_many

    batches: dict[str, list[tuple[str, bytes]]] = {}
    for row in rows:
        assert row.object is not None
        if not get_target(row.target).is_nvidia or row.lint is not None:
            continue
        try:
            data = objects.get(row.object.path, row.object.sha256)
        except CorruptObjectError:
            continue  # reported when the row itself is linted
        if read_in_words(data, functools.partial(objects.text, row.object.path)):
            continue  # every loaded parameter is read: its lint needs no disassembly
        batches.setdefault(row.target, []).append((row.object.sha256, data))
    chunks = []
    for items in batches.values():
        size = -(-len(items) // max(1, jobs))
        chunks += [items[i:i + size] for i in range(0, len(items), size)]

    def run(chunk: list[tuple[str, bytes]]) -> dict[str, str]:
        try:
            return dict(zip((sha for sha, _ in chunk), disassemble_many([data for _, data in chunk])))
        except CorruptObjectError:
            return {}

    sass: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for part in pool.map(run, chunks):
            sass.update(part)
    return sass


def _lint_row_or_skip(row: Row, objects: ObjectStore, sass: dict[str, str]
                      ) -> tuple[tuple[Finding, ...], str | None]:
    assert row.object is not None
    try:
        return lint_row(row, objects, sass.get(row.object.sha256)), None
    except LintInputError as exc:
        return (), str(exc)


def lint_row(row: Row, objects: ObjectStore, sass: str | None = None) -> tuple[Finding, ...]:
    """The findings of a row's build (without key and target): those the survey recorded (``Row.lint``,
    made by this reader revision: a stored survey of another is never reused), else those of its
    stored object, linted now. ``sass``: an NVIDIA object's disassembly, if the caller has it. Raises
    LintInputError, CorruptObjectError (a stored object that is missing or altered is never vouched for)."""
    assert row.object is not None
    rel = row.object.path
    binary = objects.get(rel, row.object.sha256)
    if row.lint is not None:
        return tuple(replace(f, key=None) for f in row.lint)
    return tuple(lint_object(row.target, binary, lambda name: objects.text(rel, name), sass))


# Why a cubin given as a file is not linted, and how it is: in a survey of an NVIDIA target.
LOOSE_CUBIN = ("an NVIDIA cubin: the lint reads a cubin only with the PTX of its compile, which a survey keeps "
               "beside it; `regsurvey lint --target "
               + ",".join(t.name for t in TARGETS.values() if t.is_nvidia) + "` (no FILES) lints every key's cubin")


def lint_file(path: Path) -> LintRun:
    """Lint one loose file: amdgcn text, or an AMD code object (disassembled with llvm-objdump).

    Raises OSError (unreadable), LintInputError (not something the lint reads: a cubin among them,
    :data:`LOOSE_CUBIN`),
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
        from .objects.amd_object import parse_hsaco
        from .objects.elfcheck import machine

        if machine(data) == "EM_CUDA":
            raise LintInputError(LOOSE_CUBIN)

        parse_hsaco(data)  # CorruptObjectError for a cut, altered or non-AMD object, before objdump runs
        try:
            text = disassemble(data)
        except ValueError as exc:
            raise LintInputError(str(exc)) from None
        found = lint_amdgcn(text, appended_args=len(APPENDED_ARGS), hsaco=data)
    else:
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise LintInputError("neither amdgcn text nor an ELF code object") from None
        found = lint_amdgcn(text, appended_args=len(APPENDED_ARGS))
    seconds = time.perf_counter() - start
    return LintRun(tuple(replace(f, file=str(path)) for f in found), 1, seconds)
