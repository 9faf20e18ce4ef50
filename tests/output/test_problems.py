"""``output/problems.py`` on a real survey (``tests/problem_survey.py``): which builds fail, spill and run at
low occupancy, judged against the figures read without regsurvey (``tests/readings.py``), and the lines
``run`` ends with."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from regsurvey.model.figures import SPILL_FIGURES
from regsurvey.model.names import build_names
from regsurvey.model.results import Row
from regsurvey.model.words import count, count_plural
from regsurvey.output.problems import (
    FAILURES,
    LOW_OCCUPANCY,
    PROBLEMS,
    SPILLS,
    low_occupancy_level,
    most_occupancy,
    occupancy_figure,
    only,
    problem_lines,
)
from regsurvey.output.table import summary_line

from ..problem_survey import ProblemSurvey, problem_survey
from ..readings import independent_reading

Build = tuple[str, str]  # (target, row id)


@pytest.fixture(scope="module")
def problems(tmp_path_factory: pytest.TempPathFactory) -> ProblemSurvey:
    return problem_survey(tmp_path_factory.mktemp("problems"))


@pytest.fixture(scope="module")
def readings(problems: ProblemSurvey) -> dict[Build, dict[str, int]]:
    """Every built row's figures, read without regsurvey."""
    return {(r.target, r.row_id): independent_reading(problems.store, r.to_dict())
            for r in problems.survey.rows if r.ok}


def builds(rows: Iterable[Row]) -> set[Build]:
    return {(r.target, r.row_id) for r in rows}


def test_only_selects_the_builds_the_second_readings_say(problems: ProblemSurvey,
                                                          readings: dict[Build, dict[str, int]]) -> None:
    survey = problems.survey
    spilling = {b for b, fig in readings.items() if any(fig.get(name) for name in SPILL_FIGURES)}
    low = {b for b, fig in readings.items() if fig[occupancy_figure(b[0]).name] <= low_occupancy_level(b[0])}
    failing = {(r.target, r.row_id) for r in survey.rows if r.status == "error"}
    # The project holds each problem (by construction: the capped kernel spills on gfx950, the tile of 2000
    # fails on both targets), and builds that are none (steady on gfx950; its sm90 key is skipped).
    assert ("gfx950", "capped/n4") in spilling and low
    assert failing == {("gfx950", "broken/n4"), ("sm90", "broken/n4")}
    assert ("gfx950", "steady/n4") in set(readings) - spilling - low
    assert builds(only(survey, SPILLS).rows) == spilling
    assert builds(only(survey, LOW_OCCUPANCY).rows) == low
    assert builds(only(survey, FAILURES).rows) == failing
    assert builds(only(survey, PROBLEMS).rows) == spilling | low | failing
    assert ("sm90", "steady/n4") not in builds(only(survey, PROBLEMS).rows)  # skipped: no build
    assert only(survey, PROBLEMS).targets == survey.targets


def test_the_lines_say_what_spills_fails_and_runs_lowest(problems: ProblemSurvey,
                                                        readings: dict[Build, dict[str, int]]) -> None:
    survey = problems.survey
    names = build_names(survey.rows)
    spills, failures, lowest = problem_lines(survey)
    spilling = [b for b, fig in readings.items() if any(fig.get(name) for name in SPILL_FIGURES)]
    assert spills.startswith(f"spills: {count(len(spilling), 'build')}: ")
    for target, row_id in spilling:
        fig = readings[(target, row_id)]
        said = ([count_plural(fig["vgpr_spill"], "VGPR spills")] if fig.get("vgpr_spill") else []) + (
            [f"{fig['spill_store_bytes']} B of spill stores"] if fig.get("spill_store_bytes") else [])
        assert said and f"{names[(target, row_id)]} on {target} ({', '.join(said)}" in spills, spills
    broken = {r.target: r for r in survey.rows if r.key == "broken/n4"}
    assert failures == ("failures: 2 builds: " + "; ".join(
        f"{names[(t, 'broken/n4')]} on {t} (error: {broken[t].error_line})" for t in ("gfx950", "sm90")))
    # Each target's lowest occupancy as the second readings give it, and its builds.
    parts = []
    for target in ("gfx950", "sm90"):
        figure = occupancy_figure(target)
        values = {b: fig[figure.name] for b, fig in readings.items() if b[0] == target}
        least = min(values.values())
        at = [str(names[b]) for b, v in values.items() if v == least]
        low = ", low" if least <= low_occupancy_level(target) else ""
        parts.append(f"{target} {least} of {most_occupancy(target)}{figure.unit}{low} "
                     f"({count(len(at), 'build')}: {', '.join(at)})")
    assert lowest == "lowest occupancy: " + "; ".join(parts)
    assert ", low (" in lowest  # the wide tile takes gfx950's registers: 1 wave per SIMD


def test_the_summary_line_counts_keys_and_builds_in_agreement(problems: ProblemSurvey,
                                                              readings: dict[Build, dict[str, int]]) -> None:
    survey = problems.survey
    # 7 keys (capped on gfx950 only; wide, broken, steady on both), steady skipped on sm90: 6 builds.
    assert len(survey.rows) == 7
    spilled = {name: sum(1 for fig in readings.values() if fig.get(name))
               for name in ("vgpr_spill", "sgpr_spill", "spill_store_bytes", "loop_spill_ops")}
    ok = len(readings)
    assert summary_line(survey) == (
        f"7 keys on gfx950, sm90: 6 builds ({ok} ok, 2 failed), 1 key skipped; "
        f"VGPR spills in {count(spilled['vgpr_spill'], 'build')}, SGPR spills in "
        f"{count(spilled['sgpr_spill'], 'build')}, spill stores in {count(spilled['spill_store_bytes'], 'build')}, "
        f"spill instructions in loops in {count(spilled['loop_spill_ops'], 'build')}")


def test_a_survey_without_problems_says_none(problems: ProblemSurvey) -> None:
    survey = problems.survey
    calm = survey.narrowed_to(tuple(r for r in survey.rows if r.key == "steady/n4"), survey.targets)
    spills, failures, lowest = problem_lines(calm)
    assert (spills, failures) == ("spills: none", "failures: none")
    assert lowest.startswith("lowest occupancy: gfx950 ") and "sm90" not in lowest  # sm90's steady is skipped
    assert only(calm, PROBLEMS).rows == ()
