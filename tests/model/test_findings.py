"""Lint findings as the model holds them: typed, one JSON form, checked on load."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.model.figures import FIGURES, LOOP_SPILL, Figures
from regsurvey.model.findings import ERROR, NOTE, Finding, Severity, findings_from_json
from regsurvey.model.results import ObjectReport, Row, Survey

from ..lint_surveys import clean_and_mutated, findings

SCHEMA1 = Path(__file__).parents[1] / "fixtures" / "surveys" / "schema1.json"


def real() -> Finding:
    (found,) = findings("restore-removed.amdgcn", "many_buffers-gfx950")
    return found


def test_a_finding_round_trips_through_its_one_json_form() -> None:
    found = real()
    assert found.severity is Severity.ERROR and found.is_error and found.argument == "out_ptr"
    data = found.to_dict()
    assert data["severity"] == "error" and data["load"] == {"instruction": found.load, "line": found.line}
    assert Finding.from_dict(json.loads(json.dumps(data))) == found
    keyed = replace(found, key="buffers/w8", address=64)
    assert Finding.from_dict(keyed.to_dict()) == keyed


def test_severity_is_checked_and_compares_as_text() -> None:
    found = real()
    assert replace(found, severity="note").severity is NOTE and NOTE == "note" and ERROR == "error"
    with pytest.raises(ValueError, match="'warning' is not a valid Severity"):
        replace(found, severity="warning")


@pytest.mark.parametrize(("edit", "problem"), [
    ({"arg_offset": "256"}, "arg_offset is '256', not a whole number"),
    ({"kernel": None}, "kernel is None, not text"),
    ({"load": "s_load"}, "not a lint finding"),
])
def test_a_damaged_finding_is_refused_naming_the_field(edit: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        findings_from_json([{**real().to_dict(), **edit}])


def test_a_finding_without_a_field_is_refused() -> None:
    data = real().to_dict()
    del data["reason"]
    with pytest.raises(ValueError, match="lint finding without 'reason'"):
        findings_from_json([data])


def test_rows_hold_findings_and_round_trip() -> None:
    _, head = clean_and_mutated()
    row = head.rows[0]
    assert isinstance(row.lint, tuple) and all(isinstance(f, Finding) for f in row.lint)
    assert Row.from_dict(json.loads(json.dumps(row.to_dict()))) == row
    assert Survey.from_json(head.to_json()) == head


def test_a_schema_1_survey_is_read() -> None:
    # Written by regsurvey at schema version 1 (tests/fixtures/surveys/regenerate_schema1.py): the same
    # rows, typed, as the lint fixtures give today; it names no reader revision, so it is never reused.
    old = Survey.from_json(SCHEMA1.read_text())
    _, head = clean_and_mutated()
    assert json.loads(SCHEMA1.read_text())["schema_version"] == 1
    # Without the figures added since (schema 6: the spills in loops), which an older survey reads without.
    older = {f.name for f in FIGURES if f.kind == LOOP_SPILL}
    assert all(older.isdisjoint(r.resources) for r in old.rows)
    assert old.rows == tuple(replace(r, resources=Figures(r.resources.vendor, {n: v for n, v in r.resources.items()
                                                                                if n not in older}))
                             for r in head.rows) and old.reader == ""


def test_an_object_report_round_trips_and_is_checked() -> None:
    report = ObjectReport({"vgpr": 70, "sgpr_spill": 156}, (real(),))
    assert report.linted and ObjectReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report
    unlinted = ObjectReport({"regs": 40})
    assert not unlinted.linted and ObjectReport.from_dict(unlinted.to_dict()) == unlinted
    with pytest.raises(ValueError, match="not figures"):
        ObjectReport.from_dict({"resources": {"vgprs": 1}, "findings": None})
