"""The one registry of report formats (:mod:`regsurvey.output.formats`): each result type's formats, the
default first, a ``*_format.py`` module found without being named, and the registry rendering exactly what
the comparison's own format classes write."""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.diff.core import compare, stack
from regsurvey.model.bisect import BisectResult
from regsurvey.model.comparison import Comparison, Stack
from regsurvey.model.findings import LintReport
from regsurvey.model.history import History
from regsurvey.model.rebuild import RebuildCheck
from regsurvey.model.results import Survey
from regsurvey.output.explain import Explanation
from regsurvey.output.formats import Style, format_names, get_format, register, render
from regsurvey.output.problems import SurveyReport

from ..lint_surveys import clean_and_mutated

SURVEY = Path(__file__).resolve().parents[1] / "fixtures" / "surveys" / "schema1.json"


def test_every_result_type_has_its_formats_the_default_first() -> None:
    assert format_names(SurveyReport) == ("table", "json", "csv")
    assert format_names(LintReport) == ("table", "json", "csv")
    assert format_names(Comparison) == ("table", "json", "markdown", "html", "csv")
    assert format_names(Stack) == ("table", "json", "markdown", "html", "csv")
    assert format_names(History) == ("html", "markdown", "json", "csv")
    assert format_names(RebuildCheck) == ("table", "json", "csv")
    # Not tables: an explanation's source lines, a bisect's one commit.
    assert format_names(Explanation) == ("text", "json", "markdown", "html")
    assert format_names(BisectResult) == ("table", "markdown", "json")


def test_the_registry_renders_what_the_comparison_formats_write() -> None:
    base, head = clean_and_mutated()
    c = compare(base, head)
    assert render(c, "table", Style(width=200, limit=1)) == get_format("table", width=200, limit=1).format(c)
    assert render(c, "table") == get_format("table").format(c)  # 140 columns, as get_format's
    for name in ("json", "markdown", "html"):
        assert render(c, name) == get_format(name).format(c)
    s = stack([base, head], ["mutate"])
    assert render(s, "markdown") == get_format("markdown").format_stack(s)


def test_a_format_a_type_lacks_and_a_second_registration_are_refused() -> None:
    survey = Survey.from_json(SURVEY.read_text())
    with pytest.raises(ValueError, match="unknown format 'html' of SurveyReport; formats: table, json, csv"):
        render(SurveyReport(survey), "html")
    with pytest.raises(ValueError, match="no format renders a Survey"):
        render(survey, "json")
    with pytest.raises(ValueError, match="format 'json' of LintReport is registered twice"):
        register(LintReport, "json", "again")(lambda report, style: "")


def test_the_survey_json_is_the_survey_narrowed_as_asked() -> None:
    survey = Survey.from_json(SURVEY.read_text())
    # The survey, and the knobs that did nothing (none in this one: derived from its rows, not stored).
    assert render(SurveyReport(survey), "json") == survey.to_json(no_effect=())
    spilling = Survey.from_json(render(SurveyReport(survey, only="spills"), "json"))
    assert [(r.key, r.resources["sgpr_spill"]) for r in spilling.rows] == [("buffers/w8", 156)]
