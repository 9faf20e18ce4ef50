"""Figures over commits: the series ``regsurvey history`` draws, from one survey per commit."""

from __future__ import annotations

from collections.abc import Sequence

from ..model.comparison import Comparison
from ..model.figures import AMD, NVIDIA, figure
from ..model.history import History, HistoryCommit, Point, Series
from ..model.results import Row, Survey
from ..model.targets import get_target
from .core import compare
from .summary import summarize

# Drawn when no --figure is given: per vendor, its registers and its spills.
DEFAULT_FIGURES = ("vgpr", "vgpr_spill", "regs", "spill_store_bytes")


def history(spec: str, surveys: Sequence[Survey], subjects: Sequence[str], figures: Sequence[str] = DEFAULT_FIGURES,
            every: int = 1) -> History:
    """The history of ``surveys`` (one per commit, oldest first; ``subjects`` their commit subjects):
    per kind, target and figure (of the target's vendor), the largest and smallest value over the kind's
    builds at each commit; and per commit, its diff against the commit before it, summarized."""
    for name in figures:
        figure(name)  # KeyError for an unknown figure: the command checks names first
    commits = []
    previous: Survey | None = None
    for survey, subject in zip(surveys, subjects):
        built = sum(1 for r in survey.rows if r.ok)
        failed = sum(1 for r in survey.rows if r.failed)
        if previous is None:
            commits.append(HistoryCommit(survey.commit or "", subject, builds=built + failed, failed=failed))
        else:
            comparison = compare(previous, survey)
            commits.append(HistoryCommit(survey.commit or "", subject, _summary(comparison), _counts(comparison),
                                         built + failed, failed))
        previous = survey
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
            if figure(name).vendor != vendor:
                continue
            points = []
            for groups in grouped:
                rows = groups.get((kind, target), [])
                values = [r.resources[name] for r in rows if r.ok and isinstance(r.resources.get(name), int)]
                points.append(Point(max(values, default=None), min(values, default=None), len(values),
                                    sum(1 for r in rows if r.failed)))
            series.append(Series(kind, target, name, tuple(points)))
    return History(spec, tuple(commits), tuple(series), every, tuple(figures))


def _summary(comparison: Comparison) -> tuple[tuple[str, ...], ...]:
    return tuple(line.segments for line in summarize(comparison).lines)


def _counts(comparison: Comparison) -> dict[str, int]:
    """Builds per mark (the marks it has), in report order."""
    return {mark.value: n for mark, n in comparison.counts.items() if n}
