"""A survey's problems: the builds that fail, that spill, and that run at low occupancy. ``run`` ends with a
line on each (:func:`problem_lines`) and ``run --only`` shows only those builds (:func:`only`).

Low occupancy is at most an eighth of the target's most (:data:`LOW_OCCUPANCY_SHARE`): 1 of 8 waves per SIMD
on AMD, 8 of 64 warps per SM on NVIDIA, what a build holding every register a thread may have gets (512
unified VGPRs; 255 registers in blocks of 256 threads). The lowest occupancy of each target is said
whatever it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..model.figures import FIGURES, OCCUPANCY, SPILL_FIGURES, Figure, figure
from ..model.names import build_names
from ..model.results import Row, Survey
from ..model.targets import get_target
from ..model.words import count, count_plural

LOW_OCCUPANCY_SHARE = 8  # low: at most 1/8 of the target's most (see the module's docstring)
SHOWN_BUILDS = 3  # builds named on a line, then "and N more"
_ERROR_WIDTH = 80  # of a failure's error line

FAILURES, SPILLS, LOW_OCCUPANCY, PROBLEMS = "failures", "spills", "low-occupancy", "problems"
ONLY_CHOICES = (PROBLEMS, FAILURES, SPILLS, LOW_OCCUPANCY)  # what ``run --only`` takes


def occupancy_figure(target: str) -> Figure:
    """The figure occupancy is judged by on ``target``: waves per SIMD (AMD), warps per SM (NVIDIA)."""
    vendor = "AMD" if get_target(target).is_amd else "NVIDIA"
    return next(f for f in FIGURES if f.vendor == vendor and f.kind == OCCUPANCY and f.worse < 0)


def most_occupancy(target: str) -> int:
    """The most waves per SIMD (AMD) or warps per SM (NVIDIA) ``target`` runs."""
    return get_target(target).max_waves_per_simd


def low_occupancy_level(target: str) -> int:
    """The occupancy at or below which a build of ``target`` runs at low occupancy."""
    return most_occupancy(target) // LOW_OCCUPANCY_SHARE


def occupancy(row: Row) -> int | None:
    """The build's occupancy in its target's figure; None where it did not build."""
    return row.resources.get(occupancy_figure(row.target).name) if row.ok else None


def fails(row: Row) -> bool:
    """The build failed (an error, or a known-intermittent failure twice: flaky); a skipped key is no build."""
    return row.failed or row.is_flaky


def spills(row: Row) -> bool:
    """The build has any spill figure above 0 (VGPR/SGPR spills or scratch; spill stores, loads or stack)."""
    return row.ok and any(row.resources.get(name) for name in SPILL_FIGURES)


def low_occupancy(row: Row) -> bool:
    """The build runs at low occupancy (see the module's docstring)."""
    value = occupancy(row)
    return value is not None and value <= low_occupancy_level(row.target)


def is_problem(row: Row) -> bool:
    """The build fails, spills, or runs at low occupancy."""
    return fails(row) or spills(row) or low_occupancy(row)


_TESTS: dict[str, Callable[[Row], bool]] = {
    PROBLEMS: is_problem, FAILURES: fails, SPILLS: spills, LOW_OCCUPANCY: low_occupancy}


@dataclass(frozen=True)
class SurveyReport:
    """What ``regsurvey run`` shows of a survey: ``survey`` whole, or with ``only`` (one of
    :data:`ONLY_CHOICES`) only those builds (:attr:`shown`; the counts and problem lines still count every
    build)."""

    survey: Survey
    only: str | None = None

    @property
    def shown(self) -> Survey:
        """The survey with only the builds shown."""
        return only(self.survey, self.only) if self.only else self.survey


def only(survey: Survey, which: str = PROBLEMS) -> Survey:
    """``survey`` with only the builds of ``which`` (one of :data:`ONLY_CHOICES`), on all its targets."""
    test = _TESTS[which]
    return survey.narrowed_to(tuple(r for r in survey.rows if test(r)), survey.targets)


def problem_lines(survey: Survey) -> list[str]:
    """What spills, what fails, and each target's lowest occupancy, a line each::

        spills: 2 builds: spill/n4 spill_kernel on gfx950 (14 VGPR spills, 56 B of scratch); ...
        failures: 1 build: broken/n4 on gfx950 (error: ...)
        lowest occupancy: gfx950 1 of 8 waves/SIMD, low (1 build: spill/n4 spill_kernel); sm90 ...
    """
    names = build_names(survey.rows)

    def named(r: Row) -> str:
        return f"{names[(r.target, r.row_id)]} on {r.target}"

    spilling = sorted((r for r in survey.rows if spills(r)), key=_spill_order)
    failing = [r for r in survey.rows if fails(r)]
    return [
        "spills: " + (_listed([f"{named(r)} ({spill_text(r)})" for r in spilling]) if spilling else "none"),
        "failures: " + (_listed([f"{named(r)} ({failure_text(r)})" for r in failing]) if failing else "none"),
        "lowest occupancy: " + ("; ".join(_lowest_text(survey, t, named) for t in _built_targets(survey))
                                or "no build"),
    ]


def spill_text(row: Row) -> str:
    """``14 VGPR spills, 56 B of scratch``: the build's spill figures above 0, most important first."""
    parts = []
    for name in SPILL_FIGURES:
        value = row.resources.get(name)
        if value:
            fig = figure(name)
            parts.append(f"{value}{fig.unit} of {fig.noun}" if fig.unit.strip() else count_plural(value, fig.noun))
    return ", ".join(parts)


def failure_text(row: Row) -> str:
    """``error: LLVM ERROR: ...`` (cut), or ``flaky: ...``."""
    line = row.error_line or ("flaky" if row.is_flaky else "error")
    if len(line) > _ERROR_WIDTH:
        line = line[:_ERROR_WIDTH - 3] + "..."
    return f"{'flaky' if row.is_flaky else 'error'}: {line}"


def _spill_order(row: Row) -> tuple[int, ...]:
    # The most spilling first: by each spill figure, most important first.
    return tuple(-row.resources.get(name, 0) for name in SPILL_FIGURES)


def _built_targets(survey: Survey) -> list[str]:
    return [t for t in survey.targets if any(r.target == t and occupancy(r) is not None for r in survey.rows)]


def _lowest_text(survey: Survey, target: str, named: Callable[[Row], str]) -> str:
    """``gfx950 1 of 8 waves/SIMD, low (2 builds: a, b)``: ``target``'s lowest occupancy and its builds."""
    values = [(occupancy(r), r) for r in survey.rows if r.target == target and occupancy(r) is not None]
    lowest = min(v for v, _ in values if v is not None)
    at = [r for v, r in values if v == lowest]
    low = ", low" if lowest <= low_occupancy_level(target) else ""
    builds = [named(r).removesuffix(f" on {target}") for r in at]
    shown = ", ".join(builds[:SHOWN_BUILDS]) + (f" and {len(builds) - SHOWN_BUILDS} more"
                                                if len(builds) > SHOWN_BUILDS else "")
    return (f"{target} {lowest} of {most_occupancy(target)}{occupancy_figure(target).unit}{low} "
            f"({count(len(at), 'build')}: {shown})")


def _listed(items: list[str]) -> str:
    """``2 builds: a; b``, the first :data:`SHOWN_BUILDS` named, then ``and N more``."""
    more = f"; and {len(items) - SHOWN_BUILDS} more" if len(items) > SHOWN_BUILDS else ""
    return f"{count(len(items), 'build')}: " + "; ".join(items[:SHOWN_BUILDS]) + more
