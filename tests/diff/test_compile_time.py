"""Compile time in comparisons and histories, on a real survey whose measured compiles are scaled
(tests/measured_survey.py): compared only where both sides measured a compile of their own build, told
where it moved notably, never a build's mark; in a history, a series per kind and target like the figures,
moved only where a build's moved notably (a loaded machine moves every one a little)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from regsurvey.diff.core import compare
from regsurvey.diff.history import history
from regsurvey.model.comparison import Mark
from regsurvey.model.results import Row, Survey
from regsurvey.output.history import format_html, format_markdown

from ..measured_survey import measured_survey, scaled, with_rows

SHAS = ("a" * 40, "b" * 40, "c" * 40)


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    return measured_survey(tmp_path_factory.mktemp("measured"))


def compiled(measured: Survey, target: str) -> Row:
    """The row of ``target`` whose kernel the survey compiled (the other key's row reused it)."""
    return next(r for r in measured.rows if r.target == target and not r.reused)


def test_a_comparison_tells_compile_time_where_both_sides_measured_their_own_build(measured: Survey) -> None:
    sm90, gfx950 = compiled(measured, "sm90"), compiled(measured, "gfx950")
    # The head's sm90 build: another kernel, its real measurement scaled to 2.5 times as long, 4 s; gfx950's
    # another kernel a little slower (1.3 times: a loaded machine); the other rows one kernel on both sides.
    head = with_rows(measured, {(sm90.row_id, "sm90"): scaled(sm90, 4.0, stage="llir", other_kernel=True),
                                (gfx950.row_id, "gfx950"): scaled(gfx950, gfx950.compile_s * 1.3, other_kernel=True)})
    base = with_rows(measured, {(sm90.row_id, "sm90"): scaled(sm90, 1.6)})
    comparison = compare(base, head)
    timed = {(r.row_id, r.target): r.compile_time for r in comparison.rows}
    change = timed[(sm90.row_id, "sm90")]
    assert change is not None and change.notable and not change.slowdown()
    assert (change.before, change.after) == (1.6, 4.0) and change.grew_most is not None
    assert change.grew_most.stage == "llir"
    noise = timed[(gfx950.row_id, "gfx950")]
    assert noise is not None and not noise.notable
    assert sum(ct is None for ct in timed.values()) == 2  # one kernel on both sides: nothing compared
    assert [r.mark for r in comparison.rows] == [Mark.UNCHANGED] * 4  # never worse for its compile time
    assert [(r.row_id, r.target) for r in comparison.compile_time_changes] == [(sm90.row_id, "sm90")]


def test_a_build_not_measured_on_a_side_has_no_compile_time(measured: Survey) -> None:
    sm90 = compiled(measured, "sm90")
    older = with_rows(measured, {(sm90.row_id, "sm90"): replace(sm90, stage_s=None)})  # a survey before schema 5
    head = with_rows(measured, {(sm90.row_id, "sm90"): scaled(sm90, 40.0, other_kernel=True)})
    assert all(r.compile_time is None for r in compare(older, head).rows)
    failed = with_rows(measured, {(sm90.row_id, "sm90"): replace(sm90, status="error", error="boom")})
    assert all(r.compile_time is None for r in compare(failed, head).rows)


def test_a_history_draws_compile_time_per_kind_and_target(measured: Survey) -> None:
    """Three commits: the base, one whose sm90 GEMM (another kernel) compiles 1.3 times as long (noise),
    one whose build takes over 10 times as long, 40 s (pathological)."""
    sm90 = compiled(measured, "sm90")
    ref = (sm90.row_id, "sm90")
    base = with_rows(replace(measured, commit=SHAS[0]), {ref: scaled(sm90, 3.0)})
    noisy = with_rows(replace(measured, commit=SHAS[1]), {ref: scaled(sm90, 3.9, other_kernel=True)})
    slow = with_rows(replace(measured, commit=SHAS[2]), {ref: scaled(sm90, 40.0, stage="ptxas")})
    h = history("HEAD~2..HEAD", [base, noisy, slow], ["base", "noise", "ptxas"], ("regs", "compile_s"))
    assert {(s.kind, s.target, s.figure) for s in h.series} == {
        ("gemm", "sm90", "regs"), ("gemm", "sm90", "compile_s"), ("gemm", "gfx950", "compile_s")}
    points = next(s.points for s in h.series if (s.target, s.figure) == ("sm90", "compile_s"))
    other = next(r.compile_s for r in measured.rows if r.target == "sm90" and r.reused)  # the w2/w8 twin
    assert [(p.max, p.built) for p in points] == [(max(3.0, other), 2), (3.9, 2), (40.0, 2)]
    assert [(p.moved, p.worse, p.better) for p in points] == [(0, 0, 0), (0, 0, 0), (1, 1, 0)]
    gfx950 = next(s for s in h.series if (s.target, s.figure) == ("gfx950", "compile_s"))
    assert not gfx950.changed  # its seconds never moved notably
    markdown = format_markdown(h)
    assert "#### gemm on sm90\n\n| commit | subject | regs | compile |" in markdown
    assert f"| ptxas | {sm90.resources['regs']} | 40.0 (" in markdown and "40.0); 1 build worse |" in markdown
    assert "Unchanged along the range: gemm on gfx950." in markdown
    assert "compile time s" in format_html(h)
