"""What a comparison of two surveys is: builds matched and marked, figure by figure, with the kernarg
lint's findings on both sides, and a stack of commits each against its parent.

Plain frozen dataclasses; :func:`regsurvey.diff.core.compare` and :func:`~regsurvey.diff.core.stack`
make them, ``output/`` shows them (its ``diff_json`` is their JSON).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .compile_time import CompileTime
from .enums import TextEnum
from .figures import BY_IMPORTANCE, SPILL, SPILL_FIGURES, verdict
from .findings import Finding
from .launch_limit import LaunchLimit, launch_limit, stops_launching
from .names import BuildName
from .no_effect import KnobsWithoutEffect
from .results import Row, Survey
from .stages import Stage
from .toolchain_change import ToolchainChange
from .where import AnnotatedFile, HotLine, WhereChange
from .words import ARROW

if TYPE_CHECKING:
    from .rebuild import RebuildCheck

DIFF_SCHEMA_VERSION = 1

_UNNAMED = BuildName("", None)  # RowComparison.name left out: its own key and kernel name it


class Mark(TextEnum):
    """What happened to one build between the two surveys."""

    # A figure moved the wrong way (see model.figures.FIGURES), or the lint found a new miscompile suspect,
    # and nothing improved.
    WORSE = "worse"
    # Some figures (or lint findings) got worse and others better: a regression all the same (``check``
    # judges its worse figures as a worse build's), shown apart so a trade-off is not read as a plain loss.
    MIXED = "mixed"
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
REGRESSIONS = frozenset({Mark.WORSE, Mark.MIXED, Mark.NEWLY_FAILING})
# Marks of builds whose figures (or lint findings) changed while both sides built.
FIGURE_MARKS = frozenset({Mark.WORSE, Mark.MIXED, Mark.BETTER, Mark.CHANGED})


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


@dataclass(frozen=True)
class LintChange:
    """The kernarg lint's findings on one build, before and after, as the surveys recorded them.

    A side is None where the survey did not lint the build: it failed or is missing, or its object
    could not be linted (surveys made before every NVIDIA build was linted also left those without a
    stack frame unlinted). Findings are ``Row.lint``'s, matched by :attr:`Finding.identity`. A finding of a
    build the base did not lint counts as new; a build the head did not lint has fixed nothing.
    """

    before: tuple[Finding, ...] | None = None
    after: tuple[Finding, ...] | None = None

    @property
    def linted(self) -> bool:
        """True when either side was linted."""
        return self.before is not None or self.after is not None

    @property
    def new(self) -> tuple[Finding, ...]:
        """Findings of the head that the base does not have."""
        if self.after is None:
            return ()
        known = {f.identity for f in self.before or ()}
        return tuple(f for f in self.after if f.identity not in known)

    @property
    def fixed(self) -> tuple[Finding, ...]:
        """Findings of the base that the head, linted too, does not have."""
        if self.before is None or self.after is None:
            return ()
        now = {f.identity for f in self.after}
        return tuple(f for f in self.before if f.identity not in now)

    @property
    def new_errors(self) -> tuple[Finding, ...]:
        """New miscompile suspects (severity ``error``): what makes a build worse."""
        return tuple(f for f in self.new if f.is_error)

    @property
    def fixed_errors(self) -> tuple[Finding, ...]:
        """Miscompile suspects the head no longer has: what makes a build better."""
        return tuple(f for f in self.fixed if f.is_error)

    @property
    def changed(self) -> bool:
        """True when a finding appeared or went away."""
        return bool(self.new or self.fixed)

    def to_dict(self) -> dict[str, Any] | None:
        """``{"before", "after", "new", "fixed"}`` (lists of findings; a side not linted is null), or None
        when neither side was linted."""
        if not self.linted:
            return None
        def items(found: tuple[Finding, ...] | None) -> list[dict[str, Any]] | None:
            return [f.to_dict() for f in found] if found is not None else None
        return {"before": items(self.before), "after": items(self.after),
                "new": items(self.new), "fixed": items(self.fixed)}


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
class BuildChange:
    """One thing the build itself was made with that differs between the sides: ``num_warps``,
    ``num_stages``, or a constexpr argument by its name (None: that side has no such value)."""

    name: str
    before: Any
    after: Any
    constexpr: bool = False  # a constexpr argument (else a compile option)

    def describe(self, arrow: str = ARROW) -> str:
        """``num_warps 4 → 8``, ``BLOCK_N 64 → 128`` (a side without it: ``-``)."""
        def shown(value: Any) -> str:
            return "-" if value is None else str(value)
        return f"{self.name} {shown(self.before)} {arrow} {shown(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RowComparison:
    """One build (a row of a key on a target) on both sides."""

    target: str
    # Its row id (the head's where the head has the build), unique within the comparison; a build the sides
    # built under different row ids (an autotune config moved in the list) has both (diff.core.paired_row_id):
    # ``gemm/w2@cfg0->gemm/w2#1@cfg1``.
    row_id: str
    key: str
    kind: str
    axes: dict[str, Any]
    kernel: str | None
    launch: int  # the launch index and the autotune config index: the head's, where the head has the build
    config: int | None
    mark: Mark
    figures: tuple[FigureDelta, ...]
    before: Row | None
    after: Row | None
    # Why the row is not comparable; or, for a build only one side has, that the other skipped its key.
    note: str | None = None
    lint_findings: LintChange = LintChange()  # the kernarg lint's findings on both sides
    # What makes a ``not comparable`` row so: its backend's toolchain parts that differ (``note`` says
    # the same in words).
    toolchain_changes: tuple[ToolchainChange, ...] = ()
    # Where its registers or spills changed, on the kernel's source lines (the VGPR peak moved from
    # attention.py:188 to attention.py:203, 24 more live): filled in from the objects when the store holds
    # them (regsurvey.where.where_changed), else empty; output.where_text says them.
    where: tuple[WhereChange, ...] = ()
    # The source lines holding the most registers on each side of such a build (same source).
    hot_before: tuple[HotLine, ...] = ()
    hot_after: tuple[HotLine, ...] = ()
    # Each side's source, annotated (the HTML report's detail shows it), where ``where`` was computed.
    source_before: tuple[AnnotatedFile, ...] = ()
    source_after: tuple[AnnotatedFile, ...] = ()
    # What the build was made with that differs between the sides (warps, stages, constexprs), where both
    # sides are there (constexprs only where both surveys recorded them).
    build_changes: tuple[BuildChange, ...] = ()
    # How every report names the build (model.names.build_names, from the head's survey where the head has
    # it): its key, kernel, and the kind body's name for the launch or its index. Left out: its kernel alone.
    name: BuildName = _UNNAMED
    # Its compile time on both sides, where both measured a compile of their own build (diff.core.compile_time);
    # told apart from the figures, never part of the mark.
    compile_time: CompileTime | None = None
    # The first compiler stage whose output differs between the sides (TTGIR: Triton's lowering changed;
    # IDENTICAL: the same object), for a build both sides built: filled in from the texts kept beside the
    # objects (regsurvey.first_stage.first_differences), else None (a survey read from a file made elsewhere).
    first_difference: Stage | None = None

    def __post_init__(self) -> None:
        if self.name is _UNNAMED:
            object.__setattr__(self, "name", BuildName(self.key, self.kernel, config=self.config))

    @property
    def ref(self) -> str:
        """``target:row_id``, unique within a comparison."""
        return f"{self.target}:{self.row_id}"

    @property
    def changed_figures(self) -> tuple[FigureDelta, ...]:
        """Figures present on both sides whose values differ."""
        return tuple(f for f in self.figures if f.changed)

    @property
    def no_longer_launches(self) -> bool:
        """True when the build launched on the base and cannot on the head: its occupancy fell to 0
        (:func:`~.launch_limit.stops_launching`). Such a build is ``worse``, whatever it gained."""
        return (self.after is not None and self.after.ok
                and any(stops_launching(f.name, f.before, f.after) for f in self.figures))

    @property
    def launch_limit(self) -> LaunchLimit | None:
        """What keeps a build that no longer launches from launching, where the head's figures say it (its
        LDS or shared memory, else its registers, above the target's limit); None otherwise."""
        return launch_limit(self.after) if self.no_longer_launches and self.after is not None else None

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
    # The builds of backends whose toolchains differ are judged (marked as any others), not "not comparable":
    # what a toolchain upgrade changed (``upgrade``, ``diff --across-toolchains``).
    across_toolchains: bool = False
    no_effect: KnobsWithoutEffect = KnobsWithoutEffect()  # the head's knobs that did nothing, and the base's

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
        return LintCounts(findings=len(after), errors=sum(f.is_error for f in after),
                          new=sum(len(c.new) for c in changes), new_errors=sum(len(c.new_errors) for c in changes),
                          fixed=sum(len(c.fixed) for c in changes),
                          fixed_errors=sum(len(c.fixed_errors) for c in changes), linted=len(linted))

    @property
    def lint_errors(self) -> tuple[int, int]:
        """Miscompile suspects on all linted builds, before and after."""
        def errors(row: Row | None) -> int:
            return sum(f.is_error for f in row.lint or ()) if row is not None else 0
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
        """Each spill figure summed over all builds of each side (vendors with no build are left out); not
        the spills in loops (a depth sums to nothing), which each build's line tells."""
        totals = []
        for f in (f for f in BY_IMPORTANCE if f.kind == SPILL):
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

    @property
    def compile_time_changes(self) -> tuple[RowComparison, ...]:
        """The builds whose compile time moved notably (:attr:`CompileTime.notable`), the most slowed first."""
        moved = [r for r in self.rows if r.compile_time is not None and r.compile_time.notable]
        return tuple(sorted(moved, key=lambda r: -r.compile_time.ratio if r.compile_time else 0.0))


def axis_segments(key: str, axes: dict[str, Any]) -> dict[str, str]:
    """Each axis of a key as its id spells it: ``router/tp8/w4`` -> ``{"tp": "tp8", "width": "w4"}``.

    Key ids hold one segment per axis in the kind's axis order (see matrix.axis_label), which is also
    the order of ``axes``; so the project's own labels come back without the matrix.
    """
    parts = key.split("/")[1:]
    if len(parts) == len(axes):
        return dict(zip(axes, parts))
    from .keys import axis_label

    return {a: axis_label(a, v, {}) for a, v in axes.items()}  # a key id of another shape: unlabelled


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
