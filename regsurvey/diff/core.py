"""Comparing two surveys build by build: the engine behind ``diff``, ``stack`` and ``check``.

Rows are matched by target and :attr:`Row.row_id` (key, launch, autotune config); a key a kind body
skipped (``rs.skip``) is no build: it is left out of the matching and listed apart. Each matched pair
gets a :class:`FigureDelta` per figure, a :class:`LintChange` (the kernarg lint's findings on both
sides, as the surveys recorded them) and one :class:`Mark`, as ``asv compare`` marks its rows. The
result is a :class:`Comparison`: plain frozen dataclasses, a pure function of the two surveys (no
compiling, no reading objects, no linting), serialised with its own schema version.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..model.figures import BY_IMPORTANCE, FIGURE_ORDER, SPILL_FIGURES
from ..results import Row, Survey
from ..targets import TARGETS
from .figures import verdict

if TYPE_CHECKING:
    from ..rebuild import RebuildCheck

DIFF_SCHEMA_VERSION = 1
# A lint finding's severity that means a miscompile suspect (regsurvey.lint.finding.ERROR, as the survey
# JSON spells it); read from the data so that comparing never imports the lint.
LINT_ERROR = "error"


class Mark(str, Enum):
    """What happened to one build between the two surveys."""

    # A figure moved the wrong way (see model.figures.FIGURES), or the lint found a new miscompile suspect,
    # whatever else improved.
    WORSE = "worse"
    NEWLY_FAILING = "newly failing"  # built before, fails now
    BETTER = "better"  # a figure improved or a miscompile suspect went away, and nothing got worse
    FIXED = "fixed"  # failed before, builds now
    ADDED = "added"  # only in the head survey
    REMOVED = "removed"  # only in the base survey
    CHANGED = "changed"  # only neutral figures (kernel arguments) or lint notes changed
    STILL_FAILING = "still failing"  # fails on both sides
    NOT_COMPARABLE = "not comparable"  # the two surveys' toolchains differ for this target's backend
    UNCHANGED = "unchanged"


# Report order: bloaty lists what grew first; regressions lead.
MARK_ORDER: tuple[Mark, ...] = tuple(Mark)
REGRESSIONS = frozenset({Mark.WORSE, Mark.NEWLY_FAILING})


@dataclass(frozen=True)
class FigureDelta:
    """One figure of one build: before, after, and which way it moved."""

    name: str
    before: int | None  # None: the side has no such figure (failed build, or the other vendor)
    after: int | None

    @property
    def delta(self) -> int | None:
        """after - before, or None when a side is missing."""
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def verdict(self) -> str:
        """``worse``, ``better``, ``same``, ``changed`` or ``n/a`` (see figures.verdict)."""
        return verdict(self.name, self.before, self.after)

    @property
    def changed(self) -> bool:
        """True when both sides have the figure and it differs."""
        return self.before is not None and self.after is not None and self.before != self.after


def finding_identity(finding: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What makes two lint findings of one build the same finding: kernel, argument offset, severity.

    Not the load's line or instruction: unrelated edits move those while the same argument stays unread.
    """
    return finding.get("kernel"), finding.get("arg_offset"), finding.get("severity")


def _is_error(finding: dict[str, Any]) -> bool:
    return finding.get("severity") == LINT_ERROR


@dataclass(frozen=True)
class LintChange:
    """The kernarg lint's findings on one build, before and after, as the surveys recorded them.

    A side is None where the survey did not lint the build: it failed or is missing, or its object
    could not be linted (surveys made before every NVIDIA build was linted also left those without a
    stack frame unlinted). Findings are ``Row.lint`` dicts
    (see :meth:`regsurvey.lint.Finding.to_dict`), matched by :func:`finding_identity`. A finding of a
    build the base did not lint counts as new; a build the head did not lint has fixed nothing.
    """

    before: tuple[dict[str, Any], ...] | None = None
    after: tuple[dict[str, Any], ...] | None = None

    @property
    def linted(self) -> bool:
        """True when either side was linted."""
        return self.before is not None or self.after is not None

    @property
    def new(self) -> tuple[dict[str, Any], ...]:
        """Findings of the head that the base does not have."""
        if self.after is None:
            return ()
        known = {finding_identity(f) for f in self.before or ()}
        return tuple(f for f in self.after if finding_identity(f) not in known)

    @property
    def fixed(self) -> tuple[dict[str, Any], ...]:
        """Findings of the base that the head, linted too, does not have."""
        if self.before is None or self.after is None:
            return ()
        now = {finding_identity(f) for f in self.after}
        return tuple(f for f in self.before if finding_identity(f) not in now)

    @property
    def new_errors(self) -> tuple[dict[str, Any], ...]:
        """New miscompile suspects (severity ``error``): what makes a build worse."""
        return tuple(f for f in self.new if _is_error(f))

    @property
    def fixed_errors(self) -> tuple[dict[str, Any], ...]:
        """Miscompile suspects the head no longer has: what makes a build better."""
        return tuple(f for f in self.fixed if _is_error(f))

    @property
    def changed(self) -> bool:
        """True when a finding appeared or went away."""
        return bool(self.new or self.fixed)

    def to_dict(self) -> dict[str, Any] | None:
        """``{"before", "after", "new", "fixed"}`` (lists of findings; a side not linted is null), or None
        when neither side was linted."""
        if not self.linted:
            return None
        return {"before": list(self.before) if self.before is not None else None,
                "after": list(self.after) if self.after is not None else None,
                "new": list(self.new), "fixed": list(self.fixed)}


@dataclass(frozen=True)
class LintCounts:
    """Lint findings summed over the builds of a comparison's head, and what changed against the base."""

    findings: int  # on the head's linted builds
    errors: int  # of which miscompile suspects
    new: int
    new_errors: int
    fixed: int
    fixed_errors: int
    linted: int  # head builds the survey linted

    def to_dict(self) -> dict[str, int]:
        """The counts as JSON-ready data."""
        return asdict(self)


@dataclass(frozen=True)
class ToolchainChange:
    """One part of one backend's toolchain that differs between the surveys (makes rows not comparable)."""

    backend: str  # "hip" or "cuda"
    part: str  # "triton", "ptxas", "amd_codegen_revision", "fp_fusion" ...
    before: Any
    after: Any

    def describe(self) -> str:
        """``cuda ptxas: 12.8 -> 13.4``."""
        return f"{self.backend} {self.part}: {self.before} -> {self.after}"


@dataclass(frozen=True)
class RowComparison:
    """One build (a row of a key on a target) on both sides."""

    target: str
    row_id: str
    key: str
    kind: str
    axes: dict[str, Any]
    kernel: str | None
    launch: int
    config: int | None
    mark: Mark
    figures: tuple[FigureDelta, ...]
    before: Row | None
    after: Row | None
    # Why the row is not comparable; or, for a build only one side has, that the other skipped its key.
    note: str | None = None
    lint_findings: LintChange = LintChange()  # the kernarg lint's findings on both sides

    @property
    def ref(self) -> str:
        """``target:row_id``, unique within a comparison."""
        return f"{self.target}:{self.row_id}"

    @property
    def changed_figures(self) -> tuple[FigureDelta, ...]:
        """Figures present on both sides whose values differ."""
        return tuple(f for f in self.figures if f.changed)

    def figure(self, name: str) -> FigureDelta | None:
        """The delta of figure ``name``, if either side has it."""
        return next((f for f in self.figures if f.name == name), None)

    @property
    def segments(self) -> dict[str, str]:
        """Each axis value as the key id spells it (``tp8``, ``w4``, ``e4m3``, ``nostop``)."""
        return axis_segments(self.key, self.axes)

    @property
    def error(self) -> str | None:
        """The error of the side that failed (head first)."""
        for row in (self.after, self.before):
            if row is not None and not row.ok:
                return row.error
        return None


@dataclass(frozen=True)
class SurveyInfo:
    """What a comparison keeps of each survey besides its rows."""

    commit: str | None
    label: str
    targets: tuple[str, ...]
    toolchain: dict[str, Any]
    dirty: bool = False
    created: str = ""

    @classmethod
    def of(cls, survey: Survey) -> SurveyInfo:
        """The header of ``survey``."""
        return cls(commit=survey.commit, label=survey.label, targets=survey.targets,
                   toolchain=survey.toolchain, dirty=survey.dirty, created=survey.created)

    @property
    def short(self) -> str:
        """A short name: the label as the user typed it (``HEAD~1``), else a short sha."""
        label = self.label.split(" (")[0]
        if self.commit and label == self.commit:
            return self.commit[:10]
        if label and label != "working tree":
            return label
        return self.commit[:10] if self.commit else "worktree"


@dataclass(frozen=True)
class FigureTotal:
    """A figure summed over every build of each side."""

    name: str
    before: int
    after: int


@dataclass(frozen=True)
class SkippedKey:
    """A key (on one target) that a kind body skipped on either side: the reason on each side that did."""

    target: str
    key: str
    kind: str
    before: str | None  # the base's reason; None where the base did not skip it
    after: str | None


@dataclass(frozen=True)
class Comparison:
    """Every build of two surveys, matched and marked."""

    base: SurveyInfo
    head: SurveyInfo
    rows: tuple[RowComparison, ...]
    toolchain_changes: tuple[ToolchainChange, ...] = ()
    rebuild: RebuildCheck | None = None  # the head's determinism check, when asked for
    schema_version: int = DIFF_SCHEMA_VERSION
    skipped: tuple[SkippedKey, ...] = ()  # keys skipped on either side (not builds: not in ``rows``)

    @property
    def skipped_keys(self) -> tuple[int, int]:
        """Keys skipped, before and after."""
        return (sum(s.before is not None for s in self.skipped), sum(s.after is not None for s in self.skipped))

    def with_mark(self, *marks: Mark) -> tuple[RowComparison, ...]:
        """The rows with any of ``marks``, in survey order."""
        return tuple(r for r in self.rows if r.mark in marks)

    @property
    def counts(self) -> dict[Mark, int]:
        """Rows per mark, every mark present (0 when none), in report order."""
        found = Counter(r.mark for r in self.rows)
        return {m: found.get(m, 0) for m in MARK_ORDER}

    @property
    def regressions(self) -> tuple[RowComparison, ...]:
        """Builds that got worse (a figure, or a new miscompile suspect) or stopped building.

        ``regsurvey check`` judges these against its rules and baseline (:mod:`regsurvey.check`).
        """
        return tuple(r for r in self.rows if r.mark in REGRESSIONS)

    @property
    def lint_counts(self) -> LintCounts | None:
        """The head's lint findings and what changed; None when the head has no linted build."""
        linted = [r.lint_findings for r in self.rows if r.lint_findings.after is not None]
        if not linted:
            return None
        after = [f for change in linted for f in change.after or ()]
        changes = [r.lint_findings for r in self.rows]
        return LintCounts(findings=len(after), errors=sum(map(_is_error, after)),
                          new=sum(len(c.new) for c in changes), new_errors=sum(len(c.new_errors) for c in changes),
                          fixed=sum(len(c.fixed) for c in changes),
                          fixed_errors=sum(len(c.fixed_errors) for c in changes), linted=len(linted))

    @property
    def lint_errors(self) -> tuple[int, int]:
        """Miscompile suspects on all linted builds, before and after."""
        def errors(row: Row | None) -> int:
            return sum(map(_is_error, row.lint or ())) if row is not None else 0
        return (sum(errors(r.before) for r in self.rows), sum(errors(r.after) for r in self.rows))

    @property
    def keys(self) -> int:
        """Distinct (key, target) pairs on either side."""
        return len({(r.key, r.target) for r in self.rows})

    @property
    def targets(self) -> tuple[str, ...]:
        """Targets on either side, in the surveys' order."""
        return tuple(dict.fromkeys(self.base.targets + self.head.targets))

    @property
    def spill_totals(self) -> tuple[FigureTotal, ...]:
        """Each spill figure summed over all builds of each side (vendors with no build are left out)."""
        totals = []
        for f in BY_IMPORTANCE:
            if not f.spill:
                continue
            before = [r.before.resources[f.name] for r in self.rows
                      if r.before is not None and f.name in r.before.resources]
            after = [r.after.resources[f.name] for r in self.rows
                     if r.after is not None and f.name in r.after.resources]
            if before or after:
                totals.append(FigureTotal(f.name, sum(before), sum(after)))
        return tuple(totals)

    @property
    def spilling_builds(self) -> tuple[int, int]:
        """Builds with any spill, before and after."""
        def spills(row: Row | None) -> bool:
            return row is not None and any(row.resources.get(name) for name in SPILL_FIGURES)
        return (sum(spills(r.before) for r in self.rows), sum(spills(r.after) for r in self.rows))

    @property
    def failing_builds(self) -> tuple[int, int]:
        """Builds that fail, before and after."""
        return (sum(r.before is not None and not r.before.ok for r in self.rows),
                sum(r.after is not None and not r.after.ok for r in self.rows))

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-ready data (the schema is in README, "The comparison JSON")."""
        from .summary import summarize

        return {
            "schema_version": self.schema_version,
            "report": "comparison",
            "base": asdict(self.base),
            "head": asdict(self.head),
            "toolchain_changes": [asdict(c) for c in self.toolchain_changes],
            "counts": {m.value: n for m, n in self.counts.items()},
            "totals": {
                "keys": self.keys,
                "builds": len(self.rows),
                "spills": [asdict(t) for t in self.spill_totals],
                "spilling_builds": dict(zip(("before", "after"), self.spilling_builds)),
                "failing_builds": dict(zip(("before", "after"), self.failing_builds)),
                "skipped_keys": dict(zip(("before", "after"), self.skipped_keys)),
                "lint": lint.to_dict() if (lint := self.lint_counts) is not None else None,
            },
            "summary": [{"text": line.text, "tone": line.tone, "rows": list(line.rows)}
                        for line in summarize(self).lines],
            "rows": [_row_dict(r) for r in self.rows],
            "skipped": [asdict(k) for k in self.skipped],
            "rebuild": self.rebuild.to_dict() if self.rebuild is not None else None,
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON."""
        return json.dumps(self.to_dict(), indent=1)


def _row_dict(r: RowComparison) -> dict[str, Any]:
    return {
        "target": r.target, "row_id": r.row_id, "key": r.key, "kind": r.kind, "axes": r.axes,
        "segments": r.segments, "kernel": r.kernel, "launch": r.launch, "config": r.config,
        "mark": r.mark.value, "note": r.note, "lint_findings": r.lint_findings.to_dict(),
        "figures": [{"name": f.name, "before": f.before, "after": f.after, "delta": f.delta,
                     "verdict": f.verdict} for f in r.figures],
        "before": asdict(r.before) if r.before is not None else None,
        "after": asdict(r.after) if r.after is not None else None,
    }


def axis_segments(key: str, axes: dict[str, Any]) -> dict[str, str]:
    """Each axis of a key as its id spells it: ``router/tp8/w4`` -> ``{"tp": "tp8", "width": "w4"}``.

    Key ids hold one segment per axis in the kind's axis order (see matrix.axis_label), which is also
    the order of ``axes``; so the project's own labels come back without the matrix.
    """
    parts = key.split("/")[1:]
    if len(parts) == len(axes):
        return dict(zip(axes, parts))
    from ..matrix import axis_label

    return {a: axis_label(a, v, {}) for a, v in axes.items()}  # a key id of another shape: unlabelled


def toolchain_changes(base: Survey, head: Survey) -> tuple[ToolchainChange, ...]:
    """Every toolchain part that differs, per backend both surveys used."""
    changes = []
    for backend in sorted(set(base.toolchain) & set(head.toolchain)):
        before, after = base.toolchain[backend] or {}, head.toolchain[backend] or {}
        for part in sorted(set(before) | set(after)):
            if before.get(part) != after.get(part):
                changes.append(ToolchainChange(backend, part, before.get(part), after.get(part)))
    return tuple(changes)


def _backend(target: str) -> str | None:
    t = TARGETS.get(target)
    return t.backend if t is not None else None


def _figures(before: Row | None, after: Row | None) -> tuple[FigureDelta, ...]:
    names: dict[str, None] = {}
    for row in (before, after):
        if row is not None:
            names.update(dict.fromkeys(row.resources))
    ordered = sorted(names, key=lambda n: FIGURE_ORDER.get(n, len(FIGURE_ORDER)))
    return tuple(FigureDelta(n, before.resources.get(n) if before else None,
                             after.resources.get(n) if after else None) for n in ordered)


def _lint_change(before: Row | None, after: Row | None) -> LintChange:
    def side(row: Row | None) -> tuple[dict[str, Any], ...] | None:
        return tuple(row.lint) if row is not None and row.ok and row.lint is not None else None
    return LintChange(side(before), side(after))


def _mark(before: Row | None, after: Row | None, figures: Iterable[FigureDelta], lint: LintChange) -> Mark:
    if before is None:
        return Mark.ADDED
    if after is None:
        return Mark.REMOVED
    if not before.ok:
        return Mark.STILL_FAILING if not after.ok else Mark.FIXED
    if not after.ok:
        return Mark.NEWLY_FAILING
    verdicts = {f.verdict for f in figures}
    # A new miscompile suspect weighs like a figure that got worse; a new or fixed note is neutral.
    if "worse" in verdicts or lint.new_errors:
        return Mark.WORSE
    if "better" in verdicts or lint.fixed_errors:
        return Mark.BETTER
    if "changed" in verdicts or lint.changed:
        return Mark.CHANGED
    return Mark.UNCHANGED


def compare(base: Survey, head: Survey) -> Comparison:
    """Match the two surveys' rows by target and row id, and mark each pair.

    Rows are in key order (the head's, with keys only the base has slotted in after the key that
    preceded them there), then target, launch and config: the same whether a survey was made now or
    read back from the store (which keeps one file per target). A backend whose toolchain differs
    between the surveys makes its rows ``not comparable`` (their figures are still shown).
    """
    changes = toolchain_changes(base, head)
    changed_backends = {c.backend for c in changes}
    before_rows = {(r.target, r.row_id): r for r in base.rows if not r.skipped}
    after_rows = {(r.target, r.row_id): r for r in head.rows if not r.skipped}
    skipped_before = {(r.target, r.key): r for r in base.rows if r.skipped}
    skipped_after = {(r.target, r.key): r for r in head.rows if r.skipped}
    key_rank = {k: i for i, k in enumerate(_merged_order(list(dict.fromkeys(r.key for r in base.rows)),
                                                          list(dict.fromkeys(r.key for r in head.rows))))}
    target_rank = {t: i for i, t in enumerate(dict.fromkeys(head.targets + base.targets))}
    every = {**before_rows, **after_rows}
    order = sorted(every, key=lambda ref: (key_rank[every[ref].key], target_rank.get(ref[0], len(target_rank)),
                                           every[ref].launch, -1 if every[ref].config is None else every[ref].config))
    rows = []
    for ref in order:
        before, after = before_rows.get(ref), after_rows.get(ref)
        row = after or before
        assert row is not None
        figures = _figures(before, after)
        lint = _lint_change(before, after)
        note = None
        backend = _backend(row.target)
        flaky = [r for r in (before, after) if r is not None and r.is_flaky]
        if backend in changed_backends and before is not None and after is not None:
            mark = Mark.NOT_COMPARABLE
            note = "; ".join(c.describe() for c in changes if c.backend == backend)
        elif flaky:  # the toolchain's intermittent failure, twice: neither a build nor a failure
            mark = Mark.NOT_COMPARABLE
            note = f"flaky on the {'base' if flaky[0] is before else 'head'}: {flaky[0].error_line}"
        else:
            mark = _mark(before, after, figures, lint)
            skip = (skipped_before if after is not None else skipped_after).get((row.target, row.key))
            if (before is None or after is None) and skip is not None:
                note = f"skipped on the {'base' if after is not None else 'head'}: {_reason(skip)}"
        rows.append(RowComparison(
            target=row.target, row_id=row.row_id, key=row.key, kind=row.kind, axes=dict(row.axes),
            kernel=(after.kernel if after is not None and after.kernel else before.kernel if before else None),
            launch=row.launch, config=row.config, mark=mark, figures=figures, before=before, after=after,
            note=note, lint_findings=lint))
    skipped = []
    for ref in dict.fromkeys([*skipped_before, *skipped_after]):
        was, now = skipped_before.get(ref), skipped_after.get(ref)
        skipped.append(SkippedKey(target=ref[0], key=ref[1], kind=(now or was).kind,  # type: ignore[union-attr]
                                  before=_reason(was), after=_reason(now)))
    return Comparison(base=SurveyInfo.of(base), head=SurveyInfo.of(head), rows=tuple(rows),
                      toolchain_changes=changes, skipped=tuple(skipped))


def _reason(row: Row | None) -> str | None:
    return None if row is None else row.skip_reason or "no reason given"


def _merged_order(before: list[str], after: list[str]) -> list[str]:
    # The head's order, with each base-only item slotted in after its predecessor in the base.
    in_after = set(after)
    follow: dict[str | None, list[str]] = {}
    previous: str | None = None
    for ref in before:
        if ref in in_after:
            previous = ref
        else:
            follow.setdefault(previous, []).append(ref)
    merged = list(follow.pop(None, []))
    for ref in after:
        merged.append(ref)
        merged.extend(follow.pop(ref, []))
    for rest in follow.values():  # predecessors that vanished: keep them at the end
        merged.extend(rest)
    return merged


@dataclass(frozen=True)
class StackStep:
    """One commit of a range against its parent."""

    commit: str
    subject: str
    comparison: Comparison

    @property
    def lint_findings(self) -> LintCounts | None:
        """This commit's lint findings and those new against its parent; None when nothing was linted."""
        return self.comparison.lint_counts

    @property
    def builds(self) -> tuple[int, int]:
        """(builds that build, all builds) of this commit."""
        after = [r.after for r in self.comparison.rows if r.after is not None]
        return sum(r.ok for r in after), len(after)

    @property
    def keys_built(self) -> tuple[int, int]:
        """(keys whose every launch builds, all keys) of this commit, per target."""
        keys: dict[tuple[str, str], bool] = {}
        for r in self.comparison.rows:
            if r.after is not None:
                keys[(r.key, r.target)] = keys.get((r.key, r.target), True) and r.after.ok
        return sum(keys.values()), len(keys)


@dataclass(frozen=True)
class Stack:
    """A range of commits: each against its parent, and the head against the base."""

    base: SurveyInfo
    head: SurveyInfo
    steps: tuple[StackStep, ...]
    overall: Comparison
    schema_version: int = DIFF_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: each step's comparison and the overall one (see README)."""
        return {
            "schema_version": self.schema_version,
            "report": "stack",
            "base": asdict(self.base),
            "head": asdict(self.head),
            "steps": [{"commit": s.commit, "subject": s.subject,
                       "builds": dict(zip(("ok", "total"), s.builds)),
                       "keys_built": dict(zip(("ok", "total"), s.keys_built)),
                       "lint_findings": lint.to_dict() if (lint := s.lint_findings) is not None else None,
                       "comparison": s.comparison.to_dict()} for s in self.steps],
            "overall": self.overall.to_dict(),
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON."""
        return json.dumps(self.to_dict(), indent=1)


def stack(surveys: list[Survey], subjects: list[str]) -> Stack:
    """``surveys[0]`` is the base, then each commit of the range in order (``subjects`` for those)."""
    if len(surveys) < 2 or len(subjects) != len(surveys) - 1:
        raise ValueError("a stack needs the base survey and one survey per commit of the range")
    steps = tuple(StackStep(commit=after.commit or after.label, subject=subject,
                            comparison=compare(before, after))
                  for before, after, subject in zip(surveys, surveys[1:], subjects))
    return Stack(base=SurveyInfo.of(surveys[0]), head=SurveyInfo.of(surveys[-1]), steps=steps,
                 overall=compare(surveys[0], surveys[-1]))


__all__ = [
    "Comparison", "DIFF_SCHEMA_VERSION", "FigureDelta", "FigureTotal", "LintChange", "LintCounts", "Mark",
    "MARK_ORDER", "REGRESSIONS", "RowComparison", "SkippedKey", "Stack", "StackStep", "SurveyInfo", "ToolchainChange",
    "axis_segments", "compare", "finding_identity", "stack", "toolchain_changes",
]
