"""``--format csv`` (:mod:`regsurvey.output.csv_format`) on real surveys (tests/fixtures/surveys/schema1.json,
written by regsurvey from a gfx950 compile; tests/lint_surveys.py's, from committed gfx950 objects): a row
per build with every figure of the registry a column, read back with the csv module."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from regsurvey.diff.core import compare, stack
from regsurvey.diff.history import history
from regsurvey.model.figures import FIGURES
from regsurvey.model.findings import LintReport
from regsurvey.model.rebuild import RebuildCheck, RebuildDifference
from regsurvey.model.results import Survey
from regsurvey.output.csv_format import COMPARISON_COLUMNS, SURVEY_COLUMNS
from regsurvey.output.formats import render
from regsurvey.output.problems import SurveyReport

from ..lint_surveys import clean_and_mutated

SURVEY = Path(__file__).resolve().parents[1] / "fixtures" / "surveys" / "schema1.json"


def read(text: str) -> list[dict[str, str]]:
    assert "\r" not in text and text.endswith("\n")
    return list(csv.DictReader(io.StringIO(text)))


def test_a_survey_is_a_row_per_build_and_a_column_per_figure() -> None:
    survey = Survey.from_json(SURVEY.read_text())
    text = render(SurveyReport(survey), "csv")
    assert text.splitlines()[0].split(",") == list(SURVEY_COLUMNS)
    assert [f.name for f in FIGURES] == list(SURVEY_COLUMNS[10:-1])  # the registry's, in its order
    rows = read(text)
    assert [(r["key"], r["kernel"], r["status"], r["vgpr"], r["sgpr"], r["sgpr_spill"], r["occupancy"],
             r["kernarg_bytes"], r["regs"]) for r in rows] == [
        ("buffers/w8", "many_buffers_kernel", "ok", "70", "106", "156", "6", "288", ""),
        ("gemm/w2", "matmul_kernel", "ok", "138", "34", "0", "3", "320", "")]
    # --only narrows it as it narrows the table.
    assert [r["key"] for r in read(render(SurveyReport(survey, only="spills"), "csv"))] == ["buffers/w8"]


def test_a_comparison_has_each_figure_before_and_after() -> None:
    base, head = clean_and_mutated()
    rows = read(render(compare(base, head), "csv"))
    assert list(rows[0]) == list(COMPARISON_COLUMNS)
    assert [(r["key"], r["mark"], r["vgpr_before"], r["vgpr_after"], r["regs_before"]) for r in rows] == [
        ("buffers/w8", "worse", "70", "70", ""), ("gemm/w2", "worse", "138", "138", "")]
    steps = read(render(stack([base, head, head], ["mutate", "again"]), "csv"))
    assert [(r["commit"][:4], r["subject"], r["key"], r["mark"]) for r in steps] == [
        (head.commit[:4], "mutate", "buffers/w8", "worse"), (head.commit[:4], "mutate", "gemm/w2", "worse"),
        (head.commit[:4], "again", "buffers/w8", "unchanged"), (head.commit[:4], "again", "gemm/w2", "unchanged")]


def test_a_history_is_a_row_per_commit_kind_and_target() -> None:
    base, head = clean_and_mutated()
    rows = read(render(history("A..B", [base, head], ["base", "mutate"], ["vgpr", "sgpr_spill"]), "csv"))
    assert [(r["subject"], r["kind"], r["target"], r["vgpr_max"], r["sgpr_spill_max"]) for r in rows] == [
        ("base", "buffers", "gfx950", "70", "156"), ("base", "gemm", "gfx950", "138", "0"),
        ("mutate", "buffers", "gfx950", "70", "156"), ("mutate", "gemm", "gfx950", "138", "0")]


def test_lint_findings_and_rebuild_differences_are_a_row_each() -> None:
    _, head = clean_and_mutated()
    findings = tuple(f for r in head.rows for f in r.lint or ())
    rows = read(render(LintReport(findings, kernels=2), "csv"))
    assert [(r["key"], r["arg_name"], r["arg_index"], r["severity"], r["line"]) for r in rows] == [
        ("buffers/w8", "out_ptr", "32", "error", "28"), ("gemm/w2", "stride_cm", "8", "error", "452")]
    assert rows[0]["load"] == "s_load_dwordx2 s[12:13], s[0:1], 0x100"  # a comma inside a field, quoted
    check = RebuildCheck("HEAD", None, 2, (RebuildDifference("sm90", "k/0", "k", "add", "a" * 64, "b" * 64,
                                                             ".text", "at offset 0x40"),))
    assert [(r["row_id"], r["section"], r["detail"]) for r in read(render(check, "csv"))] == [
        ("k/0", ".text", "at offset 0x40")]
