"""The survey's terminal table (:mod:`regsurvey.output.table`) on a real survey
(tests/fixtures/surveys/schema1.json, written by regsurvey from a gfx950 compile): the units under each
vendor's table are that table's own, and the line of where the time went counts each thing apart."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from regsurvey.model.results import Status, Survey
from regsurvey.output.table import print_survey, timing_line, units_caption

SURVEY = Path(__file__).resolve().parents[1] / "fixtures" / "surveys" / "schema1.json"


def test_each_vendor_table_names_its_own_units() -> None:
    """From the figure registry: the AMD table lists no NVIDIA unit (stack, smem, per SM), nor the other way."""
    assert units_caption("AMD") == "scratch, LDS and kernarg in bytes; waves per SIMD"
    assert units_caption("NVIDIA") == "spill st, spill ld, stack and smem in bytes; blocks and warps per SM"
    out = io.StringIO()
    print_survey(Survey.from_json(SURVEY.read_text()), Console(file=out, width=220))
    shown = out.getvalue()
    assert "scratch, LDS and kernarg in bytes; waves per SIMD" in shown
    assert "smem" not in shown and "per SM" not in shown


def test_where_the_time_went_counts_reused_and_failed_apart() -> None:
    survey = Survey.from_json(SURVEY.read_text())
    first, second = survey.rows
    failed = replace(second, key="gemm/w4", status=Status.ERROR, error="boom", object=None, resources={})
    timed = replace(survey, rows=(first, replace(second, reused=True), failed),
                    timing={"wall_s": 2.0, "jobs": 1, "compile_s": 1.5})
    line = timing_line(timed)
    assert line == ("made earlier on 1 worker in 2.0 s: 1 launch compiled in 1.5 s of compile time, 1 reused, "
                    "1 failed; regsurvey's own work 0.0 s")
