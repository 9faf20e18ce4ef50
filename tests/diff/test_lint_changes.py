"""Lint findings in comparisons: new and fixed ones per build, marks, summary lines, JSON, stack counts.

The findings are real: the kernarg lint run on its committed fixtures (tests/lint_surveys.py).
"""

from __future__ import annotations

from dataclasses import replace

from regsurvey.diff.core import compare, stack
from regsurvey.diff.summary import summarize
from regsurvey.model.comparison import LintCounts, Mark
from regsurvey.output.diff_json import comparison_dict, stack_dict

from ..lint_surveys import clean_and_mutated, findings, fixture_row, lint_survey

BUFFERS, GEMM = "many_buffers-gfx950", "matmul-gfx950"


def test_new_suspects_make_builds_worse() -> None:
    base, head = clean_and_mutated()
    c = compare(base, head)
    assert {r.key: r.mark for r in c.rows} == {"buffers/w8": Mark.WORSE, "gemm/w2": Mark.WORSE}
    assert [r.key for r in c.regressions] == ["buffers/w8", "gemm/w2"]
    buffers = c.rows[0]
    assert buffers.changed_figures == ()  # the same object figures: only the lint tells
    assert buffers.lint_findings.before == ()
    (new,) = buffers.lint_findings.new_errors
    assert (new.arg_name, new.arg_index, new.arg_offset, new.key) == ("out_ptr", 32, 256, "buffers/w8")
    assert buffers.lint_findings.fixed == ()
    assert summarize(c).texts == (
        "adds a miscompile suspect to buffers w8 on gfx950: argument out_ptr (never read)",
        "adds a miscompile suspect to gemm w2 on gfx950: argument stride_cm (never read)",
        "every key builds on both commits",
    )
    assert c.lint_counts == LintCounts(findings=2, errors=2, new=2, new_errors=2, fixed=0, fixed_errors=0, linted=2)
    assert c.lint_errors == (0, 2)


def test_fixed_suspects_make_builds_better() -> None:
    base, head = clean_and_mutated()
    c = compare(head, base)
    assert {r.key: r.mark for r in c.rows} == {"buffers/w8": Mark.BETTER, "gemm/w2": Mark.BETTER}
    assert c.regressions == ()
    assert [f.arg_name for r in c.rows for f in r.lint_findings.fixed_errors] == ["out_ptr", "stride_cm"]
    assert summarize(c).texts[:2] == (
        "removes a miscompile suspect from buffers w8 on gfx950: argument out_ptr",
        "removes a miscompile suspect from gemm w2 on gfx950: argument stride_cm",
    )


def test_not_linted_is_never_fixed() -> None:
    suspect = fixture_row(BUFFERS, findings("restore-removed.amdgcn", BUFFERS))
    unlinted = replace(suspect, lint=None)
    failed = replace(suspect, status="error", error="boom", resources={}, lint=None)
    # The head not linted (an NVIDIA build without a stack frame, say): nothing fixed, the build unchanged.
    c = compare(lint_survey([suspect], "a" * 40, "a"), lint_survey([unlinted], "b" * 40, "b"))
    (row,) = c.rows
    assert (row.mark, row.lint_findings.fixed, row.lint_findings.after) == (Mark.UNCHANGED, (), None)
    assert c.lint_counts is None and comparison_dict(c)["totals"]["lint"] is None
    # The head failed to build: newly failing, and its suspect is not "fixed" either.
    (row,) = compare(lint_survey([suspect], "a" * 40, "a"), lint_survey([failed], "b" * 40, "b")).rows
    assert (row.mark, row.lint_findings.fixed) == (Mark.NEWLY_FAILING, ())
    # The base not linted: the head's suspect is new.
    (row,) = compare(lint_survey([unlinted], "a" * 40, "a"), lint_survey([suspect], "b" * 40, "b")).rows
    assert row.mark is Mark.WORSE and [f.arg_name for f in row.lint_findings.new] == ["out_ptr"]
    # Neither side linted: null in the JSON, as before the lint existed.
    both = compare(lint_survey([unlinted], "a" * 40, "a"), lint_survey([unlinted], "b" * 40, "b"))
    assert comparison_dict(both)["rows"][0]["lint_findings"] is None


def test_new_notes_are_a_neutral_change() -> None:
    clean = fixture_row(GEMM, [])
    notes = fixture_row(GEMM, findings("matmul-gfx950.amdgcn", GEMM, with_ir=False))  # M and N: preloaded, unread
    c = compare(lint_survey([clean], "a" * 40, "a"), lint_survey([notes], "b" * 40, "b"))
    (row,) = c.rows
    assert row.mark is Mark.CHANGED and c.regressions == ()
    assert summarize(c).texts[0] == "adds kernarg lint notes to gemm w2 on gfx950: arguments M, N (loaded, never read)"


def test_json_rows_and_totals() -> None:
    base, head = clean_and_mutated()
    data = comparison_dict(compare(base, head))
    row = data["rows"][0]
    assert set(row["lint_findings"]) == {"before", "after", "new", "fixed"}
    assert row["lint_findings"]["before"] == [] and row["lint_findings"]["fixed"] == []
    assert row["lint_findings"]["new"] == row["lint_findings"]["after"] == [
        f.to_dict() for f in head.rows[0].lint or ()]
    assert row["after"] == head.rows[0].to_dict()  # the survey's own row, in full
    assert data["totals"]["lint"] == {"findings": 2, "errors": 2, "new": 2, "new_errors": 2, "fixed": 0,
                                      "fixed_errors": 0, "linted": 2}


def test_stack_counts_findings_per_commit() -> None:
    base, head = clean_and_mutated()
    s = stack([base, head, replace(base, commit="c" * 40, label="c")], ["lose two arguments", "restore them"])
    first, second = s.steps
    assert first.lint_findings == LintCounts(2, 2, 2, 2, 0, 0, 2)
    assert second.lint_findings == LintCounts(0, 0, 0, 0, 2, 2, 2)
    data = stack_dict(s)
    assert [step["lint_findings"]["new"] for step in data["steps"]] == [2, 0]
    assert data["steps"][1]["lint_findings"]["fixed"] == 2
