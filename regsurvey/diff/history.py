"""Figures over commits: the series ``regsurvey history`` draws, from one survey per commit; or over toolchains
(``history --toolchains``), from one survey of a revision per toolchain (:func:`toolchain_history`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..model.comparison import Comparison
from ..model.figures import AMD, COMPILE_TIME, NVIDIA, figure
from ..model.history import History, HistoryCommit, Point, Series
from ..model.results import Row, Survey
from ..model.targets import get_target
from .core import compare
from .ranges import ARROW_GAP
from .stage_summary import stage_sentences
from .summary import summarize

# Drawn when no --figure is given: per vendor, its registers and its spills.
DEFAULT_FIGURES = ("vgpr", "vgpr_spill", "regs", "spill_store_bytes")


def history(spec: str, surveys: Sequence[Survey], subjects: Sequence[str], figures: Sequence[str] = DEFAULT_FIGURES,
            every: int = 1, spans: Sequence[int] | None = None) -> History:
    """The history of ``surveys`` (one per commit, oldest first; ``subjects`` their commit subjects):
    per kind, target and figure (of the target's vendor; compile time of both), the largest and smallest
    value over the kind's builds at each commit and how many builds it moved since the point before (compile
    time: notably, model.compile_time); and per commit, its diff
    against the point before it, summarized. ``spans``: per survey, the commits its diff covers (under
    ``--every``, the sampled commit and those skipped before it); 1 each when not given."""
    for name in figures:
        figure(name)  # KeyError for an unknown figure: the command checks names first
    commits = []
    comparisons: list[Comparison | None] = []
    previous: Survey | None = None
    for i, (survey, subject) in enumerate(zip(surveys, subjects)):
        built = sum(1 for r in survey.rows if r.ok)
        failed = sum(1 for r in survey.rows if r.failed)
        if previous is None:
            commits.append(HistoryCommit(survey.commit or "", subject, builds=built + failed, failed=failed, span=0))
            comparisons.append(None)
        else:
            comparison = compare(previous, survey)
            commits.append(HistoryCommit(survey.commit or "", subject, _summary(comparison), _counts(comparison),
                                         built + failed, failed, spans[i] if spans is not None else 1))
            comparisons.append(comparison)
        previous = survey
    return History(spec, tuple(commits), _series(surveys, comparisons, figures), every, tuple(figures))


def toolchain_history(revision: str, surveys: Sequence[Survey], toolchains: Sequence[tuple[str, str | None]],
                      figures: Sequence[str] = DEFAULT_FIGURES,
                      comparisons: Sequence[Comparison] | None = None) -> History:
    """The history of one revision (``revision``: as asked for, ``HEAD`` or ``working tree``) over
    ``toolchains`` (each its name, ``triton 3.6.0``, and its interpreter, None for the environment
    regsurvey runs in), ``surveys`` one per toolchain in that order: the same series as :func:`history`'s,
    each point a toolchain, each step judged across the toolchains (``compare(..., across_toolchains=True)``)
    and saying what differs in the toolchain and, where ``comparisons`` (one per step, each against the
    toolchain before) know each build's first differing compiler stage, a sentence per stage."""
    for name in figures:
        figure(name)
    if comparisons is None:
        comparisons = [compare(before, after, across_toolchains=True) for before, after in zip(surveys, surveys[1:])]
    if len(comparisons) != len(surveys) - 1 or len(toolchains) != len(surveys):
        raise ValueError("toolchain_history: a toolchain per survey, and a comparison per step")
    points = []
    for i, (survey, (name, python)) in enumerate(zip(surveys, toolchains)):
        built = sum(1 for r in survey.rows if r.ok)
        failed = sum(1 for r in survey.rows if r.failed)
        where = python or "this environment"
        if i == 0:
            points.append(HistoryCommit(survey.commit or "", where, builds=built + failed, failed=failed, span=0,
                                        toolchain=name, python=python))
            continue
        comparison = comparisons[i - 1]
        stages = tuple(text for text, _ in stage_sentences(comparison))
        summary = tuple(line for line in _summary(comparison) if not (len(line) == 1 and line[0] in stages))
        changes = tuple(tuple(change.describe(ARROW_GAP.strip()).split(ARROW_GAP))
                        for change in comparison.toolchain_changes)
        points.append(HistoryCommit(survey.commit or "", where, summary, _counts(comparison), built + failed, failed,
                                    span=1, toolchain=name, python=python, toolchain_changes=changes, stages=stages))
    return History(revision, tuple(points), _series(surveys, [None, *comparisons], figures), 1, tuple(figures),
                   across_toolchains=True)


def _series(surveys: Sequence[Survey], comparisons: Sequence[Comparison | None],
            figures: Sequence[str]) -> tuple[Series, ...]:
    """Per kind, target and figure (of the target's vendor; compile time of both), a point per survey: the
    largest and smallest value over the kind's builds, and the builds each comparison (of the survey
    against the one before; None for the first) moved."""
    moves = [_moves(c) if c is not None else {} for c in comparisons]
    # Each survey's rows by kind and target, once; kinds in name order, targets in the surveys' order.
    grouped: list[dict[tuple[str, str], list[Row]]] = []
    for survey in surveys:
        groups: dict[tuple[str, str], list[Row]] = {}
        for r in survey.rows:
            groups.setdefault((r.kind, r.target), []).append(r)
        grouped.append(groups)
    target_rank = {t: i for i, t in enumerate(dict.fromkeys(t for s in surveys for t in s.targets))}
    kinds = dict.fromkeys(kt for groups in grouped for kt in groups)
    series = []
    for kind, target in sorted(kinds, key=lambda kt: (kt[0], target_rank.get(kt[1], len(target_rank)))):
        vendor = AMD if get_target(target).is_amd else NVIDIA
        for name in figures:
            if figure(name).vendor not in (vendor, ""):
                continue
            points = []
            for groups, moved in zip(grouped, moves):
                rows = groups.get((kind, target), [])
                values = _values(rows, name)
                points.append(Point(max(values, default=None), min(values, default=None), len(values),
                                    sum(1 for r in rows if r.failed), *moved.get((kind, target, name), (0, 0, 0))))
            series.append(Series(kind, target, name, tuple(points)))
    return tuple(series)


def _values(rows: list[Row], name: str) -> list[float]:
    """The figure ``name`` of each of ``rows`` that built and has it: compile time (seconds, to the hundredth)
    where the build's compile was measured (``Row.stage_s``: not a read from Triton's cache)."""
    if name == COMPILE_TIME.name:
        return [round(r.compile_s, 2) for r in rows if r.ok and r.stage_s is not None]
    return [r.resources[name] for r in rows if r.ok and isinstance(r.resources.get(name), int)]


def _moves(comparison: Comparison) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """Per kind, target and figure: the builds whose figure moved (both sides built), and of those the
    worse and the better ones. Compile time moved where it did notably, worse where it is a pathological
    slowdown, never better (model.compile_time)."""
    out: dict[tuple[str, str, str], tuple[int, int, int]] = {}
    for r in comparison.rows:
        for f in r.figures:
            if f.changed:
                moved, worse, better = out.get((r.kind, r.target, f.name), (0, 0, 0))
                out[(r.kind, r.target, f.name)] = (moved + 1, worse + (f.verdict == "worse"),
                                                   better + (f.verdict == "better"))
        if r.compile_time is not None and r.compile_time.notable:
            moved, worse, better = out.get((r.kind, r.target, COMPILE_TIME.name), (0, 0, 0))
            out[(r.kind, r.target, COMPILE_TIME.name)] = (moved + 1, worse + r.compile_time.slowdown(), better)
    return out


def _summary(comparison: Comparison) -> tuple[tuple[str, ...], ...]:
    return tuple(line.segments for line in summarize(comparison).lines)


def _counts(comparison: Comparison) -> dict[str, int]:
    """Builds per mark (the marks it has), in report order."""
    return {mark.value: n for mark, n in comparison.counts.items() if n}
