"""The survey's results: plain frozen dataclasses and their schema-versioned JSON form."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from .compile_time import StageTimes
from .enums import TextEnum
from .figures import NO_FIGURES, Figures
from .findings import Finding, findings_from_json
from .targets import TARGETS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .no_effect import NoEffect

# 2: rows carry the reader revision's typed findings (Row.lint) and the survey its ``reader``; a version 1
# survey has the same shape (findings were already Finding.to_dict) and is read, never reused for a new one.
# 3: rows carry their build's constexprs (``build``) and the name a kind body gave the launch (``name``);
# older rows read with both None (not recorded), so a diff against them says nothing about constexprs.
# 4: a launch made in a library outside the project carries the project's call into it (``project_where``),
# a failed build its Triton hash on every row (before: only on the rows that took another's failure), and
# the survey what kind bodies said once per process (``said_once``, no longer on the row of the key that
# happened to run first); older surveys read with none.
# 5: a built row carries the seconds of each stage of its compile (``stage_s``: null where the survey did not
# measure one: Triton's own cache had the kernel, or the build failed); older surveys read with none.
# 6: a built row's figures hold the spills inside loops (``loop_spill_ops``, ``loop_spill_depth``, both
# vendors'); older surveys read without them (a comparison says n/a), and are made by other readers
# (model.version.READER_REVISION), so that none serves as a stored survey for a new command.
SCHEMA_VERSION = 6
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4, 5, 6)


class SurveyFormatError(ValueError):
    """A stored survey that is not valid JSON of a known schema version."""


class Status(TextEnum):
    """Whether a row built: ``ok``; ``error``; ``skipped`` (the kind body called ``rs.skip``: not a
    build); ``flaky`` (failed twice with a toolchain failure known to be intermittent: see
    ``toolchain.is_flaky_failure``). A ``str``: the JSON holds the value, and ``row.status == "ok"`` holds."""

    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"
    FLAKY = "flaky"


@dataclass(frozen=True)
class ObjectRef:
    """Where a compiled object is stored, and its content hash."""

    path: str
    sha256: str


@dataclass(frozen=True)
class ObjectReport:
    """What one compiled object is found to be (:func:`regsurvey.analysis.analyze`): its figures, and the
    kernarg lint's findings (None where it was not linted; ``why_not_linted`` then says why, when a
    lint was tried and could not run)."""

    resources: Figures  # a plain mapping is taken and checked (Figures.from_json)
    findings: tuple[Finding, ...] | None = None
    why_not_linted: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.resources, Figures):
            object.__setattr__(self, "resources", Figures.from_json(dict(self.resources)))

    @property
    def linted(self) -> bool:
        """True when the lint ran on the object (``findings`` holds what it found, maybe nothing)."""
        return self.findings is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the result cache's)."""
        return {"resources": self.resources.to_json(),
                "findings": [f.to_dict() for f in self.findings] if self.findings is not None else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ObjectReport:
        """Parse :meth:`to_dict`'s form; KeyError, TypeError or ValueError for anything else."""
        found = data["findings"]
        try:
            resources = Figures.from_json(data["resources"])
        except ValueError as exc:
            raise ValueError(f"object report's resources are not figures ({exc})") from None
        return cls(resources=resources, findings=findings_from_json(found) if found is not None else None)


@dataclass(frozen=True)
class Row:
    """One kernel launch of one key on one target: does it build, and what it costs."""

    key: str
    kind: str
    axes: dict[str, Any]
    target: str
    # The jit function's name; None on a key's own row: a kind body that raised (before or after its
    # launches), launched nothing, or skipped the key.
    kernel: str | None
    status: Status  # a plain string is taken and checked (an unknown one is a ValueError)
    error: str | None = None  # the whole message (compiler output, exception chain); error_line() cuts it
    # The build's figures, of its target's vendor (a plain mapping is taken and checked: Figures.from_json).
    resources: Figures = NO_FIGURES
    object: ObjectRef | None = None
    compile_s: float = 0.0
    # The seconds of each stage of that compile (model.compile_time.StageTimes; a plain mapping is taken and
    # checked), the same compile's as ``compile_s`` (a reused row's: the earlier compile's); None where none
    # was measured (Triton's own cache had the kernel, the build failed, a survey before schema 5).
    stage_s: StageTimes | None = None
    launch: int = 0  # index of the launch within the key (a kind body may launch several kernels)
    config: int | None = None  # autotune config index, for autotuned kernels
    triton_hash: str | None = None  # Triton's cache key: equal = the same kernel a launch compiles
    num_warps: int | None = None
    num_stages: int | None = None
    where: str | None = None  # file:line of the launch: in the project's code, or in a library's launcher
    reused: bool = False  # True when the result came from an earlier compile of the same Triton key
    lint: tuple[Finding, ...] | None = None  # kernarg lint findings; None where the build was not linted
    flaky: str | None = None  # a known-intermittent toolchain failure this build hit before it built
    # What the kind body said while it ran (warnings, log records of level INFO and up, printed lines),
    # the same on every row of the key.
    messages: list[str] = field(default_factory=list)
    skip_reason: str | None = None  # why the kind body skipped the key (status "skipped")
    # The build failed for a cause of the moment, not of the kernel: a time-out, a worker lost (killed,
    # out of memory). A stored survey holding such a row is surveyed again rather than reused.
    transient: bool = False
    # The build's constexpr arguments by name (an autotune config's kwargs and heuristics' values among
    # them), as JSON scalars (a dtype as its name); None where the survey did not record them (schema < 3).
    build: dict[str, Any] | None = None
    name: str | None = None  # what the kind body called the launch (``rs.name("up")``), if anything
    # Where ``where`` is in a library outside the project: the innermost frame inside the project (the kind
    # body's call into the library), file:line; None otherwise (and in surveys before schema 4).
    project_where: str | None = None
    # ``regsurvey fix``'s variant builds only: the launcher's config file entry the launch was passed, with
    # the variant written into it, and the patch (``keys.config_source.ConfigSource.to_dict``). Written only
    # where there is one: a survey's rows never have it, and their JSON is as before.
    config_source: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):
            object.__setattr__(self, "status", Status(self.status))
        if self.lint is not None and not isinstance(self.lint, tuple):
            object.__setattr__(self, "lint", tuple(self.lint))
        if not isinstance(self.resources, Figures):
            object.__setattr__(self, "resources", Figures.from_json(dict(self.resources)))
        if self.stage_s is not None and not isinstance(self.stage_s, StageTimes):
            object.__setattr__(self, "stage_s", StageTimes.from_json(self.stage_s))
        known = TARGETS.get(self.target)
        if known is not None and self.resources.vendor not in (None, known.vendor):
            raise ValueError(f"{self.target} has {known.vendor}'s figures, not {self.resources.vendor}'s "
                             f"({', '.join(self.resources)})")

    @property
    def linted(self) -> bool:
        """True when the build was linted (``lint`` holds its findings, maybe none)."""
        return self.lint is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the row, in field order (the one serializer of rows)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["status"] = self.status.value
        data["resources"] = self.resources.to_json()
        data["stage_s"] = self.stage_s.to_json() if self.stage_s is not None else None
        data["object"] = {"path": self.object.path, "sha256": self.object.sha256} if self.object else None
        data["lint"] = [f.to_dict() for f in self.lint] if self.lint is not None else None
        if self.config_source is None:
            del data["config_source"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], targets: list[str] | tuple[str, ...] | None = None) -> Row:
        """Parse :meth:`to_dict`'s form, checked (:func:`_check_row`); KeyError, TypeError or ValueError
        naming what is wrong. ``targets``: its survey's, which the row's must be one of."""
        obj = data.get("object")
        row = cls(**{**data, "object": ObjectRef(**obj) if obj else None, "lint": None, "resources": NO_FIGURES,
                     "stage_s": None})
        if targets is not None and row.target not in targets:
            raise ValueError(f"row {row.row_id} is on target {row.target!r}, not one of the survey's "
                             f"({', '.join(targets)})")
        if "resources" in data:
            try:
                row = replace(row, resources=Figures.from_json(data["resources"]))
            except ValueError as exc:
                raise ValueError(f"row {row.row_id} ({row.target}): {exc}") from None
        if data.get("stage_s") is not None:
            try:
                row = replace(row, stage_s=StageTimes.from_json(data["stage_s"]))
            except ValueError as exc:
                raise ValueError(f"row {row.row_id} ({row.target}): {exc}") from None
        if data.get("lint") is not None:
            try:
                row = replace(row, lint=findings_from_json(data["lint"]))
            except ValueError as exc:
                raise ValueError(f"row {row.row_id} ({row.target}): lint is neither null nor a list of "
                                 f"findings ({exc})") from None
        _check_row(row)
        return row

    @property
    def row_id(self) -> str:
        """Unique within a survey: key, launch, kernel and config."""
        suffix = f"#{self.launch}" if self.launch else ""
        cfg = f"@cfg{self.config}" if self.config is not None else ""
        return f"{self.key}{suffix}{cfg}"

    @property
    def ok(self) -> bool:
        """True when the key built."""
        return self.status is Status.OK

    @property
    def failed(self) -> bool:
        """True when the build failed (a skipped key is neither built nor failed)."""
        return self.status is Status.ERROR

    @property
    def is_flaky(self) -> bool:
        """True when the build failed twice with a toolchain failure known to be intermittent (status
        ``flaky``): not judged as a failure of the kernel."""
        return self.status is Status.FLAKY

    @property
    def skipped(self) -> bool:
        """True when the kind body skipped the key (``rs.skip``): a combination that does not exist."""
        return self.status is Status.SKIPPED

    @property
    def passing_failure(self) -> bool:
        """True when the build did not build for a cause that may not recur: a time-out or a lost
        worker (``transient``), or a known-intermittent toolchain failure (status ``flaky``)."""
        return self.transient or self.status is Status.FLAKY

    @property
    def error_line(self) -> str:
        """The one line every report shows for this row's error (see :func:`error_line`)."""
        return error_line(self.error)


@dataclass(frozen=True)
class SaidOnce:
    """A line a kind's body said the first time it ran in a worker process and not when run again there:
    what a library says once per process (a config file it loads and logs once, an ``info_once``). It
    belongs to no one key: which key of the kind said it depends on which ran first."""

    kind: str
    target: str
    text: str

    def to_dict(self) -> dict[str, str]:
        """The JSON form."""
        return {"kind": self.kind, "target": self.target, "text": self.text}

    @classmethod
    def from_dict(cls, data: Any) -> SaidOnce:
        """Parse :meth:`to_dict`'s form; ValueError for anything else."""
        if not (isinstance(data, dict) and set(data) == {"kind", "target", "text"}
                and all(isinstance(v, str) for v in data.values())):
            raise ValueError(f"said_once holds {str(data)[:60]!r}, not a kind, a target and a text")
        return cls(**data)


@dataclass(frozen=True)
class Survey:
    """Every row of one commit (or the working tree) on one or more targets."""

    commit: str | None  # full sha; None for a working tree that differs from HEAD
    label: str  # what the user asked for: "HEAD~1", "working tree"
    targets: tuple[str, ...]
    toolchain: dict[str, Any]  # per backend: triton version, codegen revision / ptxas, fp fusion
    rows: tuple[Row, ...]
    dirty: bool = False
    created: str = ""
    # Where the survey's wall time went (seconds; see engine.timing.SurveyTiming): not compared by diff.
    timing: dict[str, float] = field(default_factory=dict)
    # The revision of regsurvey's object readers and lint that made the rows (model.version.READER_REVISION;
    # "" when unknown, or mixed in a merge): a stored survey is reused only by the same revision.
    reader: str = ""
    # Each kind's own targets as its keys file declares them (its matrix's, or the kind's ``targets=``), in
    # the keys files' order: what a survey without --target covers, which a survey made with --target
    # does not show by itself (the store serves either from the other). {} when not known.
    declared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # What kind bodies said once per process (see SaidOnce), by kind, target and text.
    said_once: tuple[SaidOnce, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def to_json(self, indent: int | None = 1, no_effect: Sequence[NoEffect] | None = None) -> str:
        """Serialise with a schema version; key order is stable. ``indent=None``: one line (what the
        store keeps: the C encoder, several times faster than an indented dump). ``no_effect``: the knobs
        that did nothing (``model.no_effect``), written before ``schema_version`` where given (``run
        --format json``'s, of the whole survey); derived from the rows, so never stored nor read back."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["targets"] = list(self.targets)
        data["rows"] = [row.to_dict() for row in self.rows]
        data["said_once"] = [said.to_dict() for said in self.said_once]
        if no_effect is not None:
            version = data.pop("schema_version")
            data["no_effect"] = [fact.to_dict() for fact in no_effect]
            data["schema_version"] = version
        return json.dumps(data, indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> Survey:
        """Parse a stored survey; raise SurveyFormatError naming the problem."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SurveyFormatError(f"not JSON ({exc})") from None
        if not isinstance(data, dict) or "schema_version" not in data:
            raise SurveyFormatError("no schema_version: not a regsurvey survey")
        if data["schema_version"] not in READABLE_SCHEMA_VERSIONS:
            raise SurveyFormatError(f"schema version {data['schema_version']!r} (this regsurvey reads "
                                    f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))})")
        try:
            _check_survey_fields(data)
            listed = data["rows"]  # (a file without rows is named for them first: it is no survey at all)
            _check_targets(data["targets"])
            rows = tuple(Row.from_dict(r, data["targets"]) for r in listed)
            said_once = tuple(SaidOnce.from_dict(s) for s in data.get("said_once") or ())
            return cls(commit=data["commit"], label=data["label"], targets=tuple(data["targets"]),
                       toolchain=data["toolchain"], rows=rows, dirty=data.get("dirty", False),
                       created=data.get("created", ""), timing=dict(data.get("timing") or {}),
                       reader=str(data.get("reader") or ""), said_once=said_once,
                       declared={str(k): tuple(map(str, v)) for k, v in (data.get("declared") or {}).items()},
                       schema_version=int(data["schema_version"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SurveyFormatError(f"malformed survey ({one_problem(exc)})") from None

    def merge(self, other: Survey) -> Survey:
        """This survey plus another target's rows of the same commit."""
        targets = tuple(dict.fromkeys(self.targets + other.targets))
        keep = [r for r in self.rows if r.target not in other.targets] + list(other.rows)
        # The order a survey makes: key by key (in the keys' own order), then target, then launch.
        key_order = {k: i for i, k in enumerate(dict.fromkeys(r.key for r in keep))}
        target_order = {t: i for i, t in enumerate(targets)}
        keep.sort(key=lambda r: (key_order[r.key], target_order[r.target], r.launch))
        said_once = [s for s in self.said_once if s.target not in other.targets] + list(other.said_once)
        kind_order = {k: i for i, k in enumerate(dict.fromkeys(r.kind for r in keep))}
        said_once.sort(key=lambda s: (kind_order.get(s.kind, len(kind_order)), target_order.get(s.target, 0)))
        return Survey(commit=self.commit, label=self.label, targets=targets,
                      toolchain={**self.toolchain, **other.toolchain}, rows=tuple(keep),
                      dirty=self.dirty, created=other.created or self.created,
                      timing=other.timing or self.timing, reader=self.reader if self.reader == other.reader else "",
                      declared={**self.declared, **other.declared},
                      said_once=tuple(said_once), schema_version=min(self.schema_version, other.schema_version))

    def narrowed_to(self, rows: tuple[Row, ...], targets: tuple[str, ...]) -> Survey:
        """This survey with only ``rows`` on ``targets``: what its kind bodies said once per process is
        kept for the kinds and targets that still have a row."""
        kept = {(r.kind, r.target) for r in rows}
        return replace(self, rows=rows, targets=targets,
                       said_once=tuple(s for s in self.said_once if (s.kind, s.target) in kept))


def default_target_list(declared: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The targets a survey without --target covers, from the kinds' ``declared`` targets, in the order
    that survey lists them (keys sort by kind, then axes, then target name)."""
    return tuple(dict.fromkeys(t for targets in declared.values() for t in sorted(targets)))


# What each field of a stored row may hold (checked on load: a survey file or store edited by hand, or
# damaged, is refused in one line rather than failing later in diff or check).
_ROW_TYPES: dict[str, tuple[type, ...]] = {
    "key": (str,), "kind": (str,), "axes": (dict,), "target": (str,), "kernel": (str, type(None)),
    "error": (str, type(None)), "compile_s": (int, float), "launch": (int,),
    "config": (int, type(None)), "triton_hash": (str, type(None)), "num_warps": (int, type(None)),
    "num_stages": (int, type(None)), "where": (str, type(None)), "reused": (bool,), "flaky": (str, type(None)),
    "skip_reason": (str, type(None)), "transient": (bool,), "build": (dict, type(None)), "name": (str, type(None)),
    "project_where": (str, type(None)), "config_source": (dict, type(None)),
}
BUILD_VALUE_TYPES = (bool, int, float, str, type(None))  # what a constexpr of ``Row.build`` may be
_SURVEY_TYPES: dict[str, tuple[type, ...]] = {
    "commit": (str, type(None)), "label": (str,), "targets": (list,), "toolchain": (dict,), "dirty": (bool,),
    "created": (str,), "timing": (dict,), "reader": (str,), "declared": (dict,), "said_once": (list,),
}


def _wrong_type(name: str, value: Any, allowed: tuple[type, ...]) -> str | None:
    """Why ``value`` cannot be field ``name``, or None. A bool is not a number here."""
    if isinstance(value, bool) and bool not in allowed:
        return f"{name} is {value!r}"
    if not isinstance(value, allowed):
        return f"{name} is {type(value).__name__} {str(value)[:40]!r}"
    return None


def _check_survey_fields(data: dict[str, Any]) -> None:
    """Raise ValueError naming a survey-level field of the wrong type (see _SURVEY_TYPES)."""
    for name, allowed in _SURVEY_TYPES.items():
        if name in data and (why := _wrong_type(name, data[name], allowed)):
            raise ValueError(why)
    if not all(isinstance(t, str) for t in data.get("targets") or ()):
        raise ValueError("targets are not names")
    if not all(isinstance(v, dict) for v in (data.get("toolchain") or {}).values()):
        raise ValueError("toolchain is not a block per backend")
    if not all(isinstance(v, list) and all(isinstance(t, str) for t in v)
               for v in (data.get("declared") or {}).values()):
        raise ValueError("declared is not a list of targets per kind")


def _check_targets(targets: list[str]) -> None:
    """Raise ValueError for a target this regsurvey does not know (every report groups rows by their
    survey's targets and reads each target's record; a row on another is refused by Row.from_dict)."""
    for name in targets:
        if name not in TARGETS:
            raise ValueError(f"target {name!r} is not one this regsurvey knows ({', '.join(TARGETS)})")


def _check_row(row: Row) -> None:
    """Raise ValueError naming what a stored row holds that no survey writes: a field of another type, lint
    findings or messages of another shape (its figures are checked as they are read: Figures.from_json, and
    Row, against its target's vendor)."""
    for name, allowed in _ROW_TYPES.items():
        if why := _wrong_type(name, getattr(row, name), allowed):
            raise ValueError(f"row {getattr(row, 'key', '?')!s:.60} ({row.target}): {why}")
    if row.lint is not None and not all(isinstance(f, Finding) for f in row.lint):
        raise ValueError(f"row {row.row_id} ({row.target}): lint is neither null nor a list of findings")
    if row.build is not None and not all(isinstance(k, str) and isinstance(v, BUILD_VALUE_TYPES)
                                         for k, v in row.build.items()):
        raise ValueError(f"row {row.row_id} ({row.target}): build is not constexpr names and values")
    if not (isinstance(row.messages, list) and all(isinstance(m, str) for m in row.messages)):
        raise ValueError(f"row {row.row_id} ({row.target}): messages are not a list of lines")


# Triton's CompilationError starts with the location ("CompilationError: at 4:29:"), quotes the source
# with a caret line under the culprit, then gives the message (or the chain: "caused by ...").
_LOCATION = re.compile(r"^\w*Error: at \d+:\d+:$")
_CARET = re.compile(r"^\^$")
_CAUSED_BY = "caused by "
# ptxas' own diagnostics in a PTXASError ("ptxas error   : Entry function ... uses too much shared data").
_PTXAS_DIAGNOSTIC = re.compile(r"^ptxas\S*\s+(?:fatal|error)\b", re.I)
# ptxas on a line of the PTX: "ptxas-blackwell /tmp/tmpcg6wm0m4.ptx, line 1549; error   : Arguments mismatch ...".
_PTXAS_LINE_ERROR = re.compile(r"^(ptxas\S*)\s+\S+\.ptx, line (\d+);\s*error\s*:\s*(.*)$", re.I)


def error_line(text: str | None) -> str:
    """The one line every report shows for a failed build, from its whole error text.

    A Triton compile error's first line is only its location: the line after the quoted source
    (``type fp8e4b8 not supported in this architecture...``) says why. A ptxas failure's first line
    is Triton's ("Internal Triton PTX codegen error"): ptxas' own ``error``/``fatal`` line says why.
    Anything else says it on its first line.
    """
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return ""
    if _LOCATION.match(lines[0]):
        carets = [i for i, ln in enumerate(lines) if _CARET.match(ln)]
        if carets and carets[-1] + 1 < len(lines):
            cause = lines[carets[-1] + 1]
            return cause[len(_CAUSED_BY):] if cause.startswith(_CAUSED_BY) else cause
    elif "ptxas" in lines[0].lower():
        # An error on a line of the PTX says why; "fatal : Ptx assembly aborted due to errors" only that it
        # stopped. The PTX's temporary file is named anew by every compile: the line number stays.
        located = next((m for m in map(_PTXAS_LINE_ERROR.match, lines) if m), None)
        if located is not None:
            more = sum(1 for ln in lines if _PTXAS_LINE_ERROR.match(ln)) - 1
            return f"{located[1]} error at PTX line {located[2]}: {located[3]}" + (f" (+{more} more)" if more else "")
        found = next((ln for ln in lines if _PTXAS_DIAGNOSTIC.match(ln)), None)
        if found is not None:
            return found
    return lines[0]


def error_text(exc: BaseException) -> str:
    """The whole message of an exception and of its chain (``caused by Type: message`` for each cause
    not already quoted): a Triton error in a called ``@triton.jit`` function is raised as a bare
    location whose cause holds the message."""
    text = f"{type(exc).__name__}: {exc}".rstrip()
    seen = {id(exc)}
    cause = _cause(exc)
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        message = str(cause).strip()
        if not message or message not in text:
            text += f"\n{_CAUSED_BY}{type(cause).__name__}: {message}".rstrip()
        cause = _cause(cause)
    return text


def _cause(exc: BaseException) -> BaseException | None:
    # Python's own rule for what a traceback prints as the cause.
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def one_problem(exc: BaseException) -> str:
    """A short description of a parsing exception."""
    return f"{type(exc).__name__}: {exc}"
