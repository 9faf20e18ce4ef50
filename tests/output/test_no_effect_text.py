"""How every report tells a knob that did nothing (output/no_effect_text.py), on the real survey of
tests/knob_survey.py (fla's ``NB`` on gfx950 and sm90): ``run``'s table and JSON, and a comparison's table,
Markdown, HTML data and JSON, where a knob the base did not have is new."""

from __future__ import annotations

import json

import pytest

from regsurvey.diff.core import compare
from regsurvey.model.no_effect import KnobKind, NoEffect
from regsurvey.model.results import Survey
from regsurvey.output.formats import Style, render
from regsurvey.output.html import comparison_data
from regsurvey.output.no_effect_text import knob_notes
from regsurvey.output.problems import SurveyReport

from ..knob_survey import knob_survey

NB_LINE = ("l2norm: NB of l2norm_fwd_kernel takes 3 values (1, 2, 4; axis rows), all give the same object on "
           "gfx950 and sm90")


@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    return knob_survey(tmp_path_factory.mktemp("knobs")).survey


@pytest.fixture(scope="module")
def base(survey: Survey) -> Survey:
    """The survey before the keys varied the token count: one NB value, nothing to tell."""
    return survey.narrowed_to(tuple(r for r in survey.rows if r.axes["rows"] == 65536), survey.targets)


def test_a_knob_is_told_once_for_the_targets_where_it_held() -> None:
    def fact(target: str, what: KnobKind = KnobKind.CONSTEXPR, knob: str = "NB") -> NoEffect:
        return NoEffect("norm", target, knob, what, tuple(range(1, 9)), ("a", "b", "c"), 8, ())

    notes = knob_notes([fact("gfx942"), fact("sm90"), fact("gfx950", KnobKind.AXIS, "batch")])
    assert [n.line for n in notes] == [
        "norm: NB of 3 kernels takes 8 values (1, 2, 3, 4, 5, 6 and 2 more; autotune configs), all give the same "
        "object on gfx942 and sm90",
        "norm: axis batch takes 8 values (1, 2, 3, 4, 5, 6 and 2 more), all give the same objects on gfx950"]


def test_run_ends_with_the_knob(survey: Survey) -> None:
    text = render(SurveyReport(survey), "table", Style(width=200))
    assert text.splitlines()[-2:] == [
        "knobs with no effect (values the keys vary that never changed the compiled object):", f"  {NB_LINE}"]
    # --only narrows the builds shown, not what the knobs were judged on.
    data = json.loads(render(SurveyReport(survey, "spills"), "json"))
    assert data["rows"] == [] and [(f["target"], f["knob"], f["values"], f["axes"]) for f in data["no_effect"]] == [
        ("gfx950", "NB", [1, 2, 4], ["rows"]), ("sm90", "NB", [1, 2, 4], ["rows"])]
    assert list(data)[-2:] == ["no_effect", "schema_version"]


def test_a_comparison_tells_the_heads_knobs_and_which_are_new(survey: Survey, base: Survey) -> None:
    comparison = compare(base, survey)
    assert comparison.no_effect.base == () and len(comparison.no_effect.new) == 2
    assert f"{NB_LINE} (new)" in render(comparison, "table", Style(width=200))
    markdown = render(comparison, "markdown")
    assert ("<details><summary>Knobs with no effect (values the keys vary that never changed the compiled "
            "object): 1 knob, 1 new</summary>") in markdown
    assert ("- l2norm: NB of l2norm_fwd_kernel takes 3 values (1, 2, 4; axis rows), all give the same object "
            "on gfx950 and sm90 **(new)**") in markdown
    assert comparison_data(comparison, "c")["knobs"]["lines"] == [{"text": f"{NB_LINE} (new)", "new": True}]
    told = json.loads(render(comparison, "json"))["no_effect"]
    assert [(f["target"], f["knob"], f["new"]) for f in told] == [("gfx950", "NB", True), ("sm90", "NB", True)]
    assert told[0]["text"] == NB_LINE.removeprefix("l2norm: ")
    # The same survey on both sides: the knob is told, not new; a base without it tells nothing.
    again = compare(survey, survey)
    assert again.no_effect.new == () and "(new)" not in render(again, "markdown")
    assert "Knobs with no effect" not in render(compare(survey, base), "markdown")
