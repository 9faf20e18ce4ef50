"""The words every comparison report shares (:mod:`regsurvey.output.figure_text`), on a real survey
(tests/fixtures/surveys/schema1.json, written by regsurvey from a gfx950 compile): counts in the number
they take, and the one arrow."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from regsurvey.diff.core import compare
from regsurvey.diff.summary import summarize
from regsurvey.model.comparison import Comparison
from regsurvey.model.rebuild import RebuildCheck, RebuildDifference
from regsurvey.model.results import Survey
from regsurvey.output.diff_table import TableFormat
from regsurvey.output.figure_text import rebuild_verdict, total_line

SURVEY = Path(__file__).resolve().parents[1] / "fixtures" / "surveys" / "schema1.json"


def _one_build(vgpr_spill: int) -> Comparison:
    """The survey's first build against itself, its VGPR spills set to ``vgpr_spill`` on the head."""
    survey = Survey.from_json(SURVEY.read_text())
    base = survey.narrowed_to(survey.rows[:1], survey.targets)
    row = base.rows[0]
    head = replace(base, rows=(replace(row, resources={**row.resources, "vgpr_spill": vgpr_spill}),))
    return compare(base, head)


def test_one_key_is_one_key() -> None:
    comparison = _one_build(3)
    assert total_line(comparison).startswith("1 key (1 build) compared on gfx950: 1 worse; spill totals "
                                             "VGPR spills 0 → 3, ")
    table = TableFormat().format(comparison)
    assert "unchanged: 0 builds" in table and "TOTAL 1 key (1 build) compared on gfx950" in table
    assert "->" not in table and "0 → 3 (+3)" in table


def test_one_unchanged_build_is_said_so() -> None:
    assert summarize(_one_build(0)).texts[-1] == "no figure changed in the one build"


def test_a_rebuild_check_of_one_build_and_one_difference() -> None:
    difference = RebuildDifference("gfx950", "gemm/w2", "gemm/w2", "matmul", "a" * 64, "b" * 64, ".text", "differ")
    assert rebuild_verdict(RebuildCheck("HEAD", None, 1, ())) == "1 build identical"
    assert rebuild_verdict(RebuildCheck("HEAD", None, 12, ())) == "all 12 builds identical"
    assert rebuild_verdict(RebuildCheck("HEAD", None, 12, (difference,))) == "1 of 12 builds differs"
    assert rebuild_verdict(RebuildCheck("HEAD", None, 12, (difference, difference))) == "2 of 12 builds differ"
