"""Compile time in every report of a comparison (table, Markdown, HTML, JSON, CSV), on a real survey whose
measured compiles are scaled (tests/measured_survey.py): the builds where it moved notably, told apart from
the figures and the marks, the pathological ones called out; nothing where it did not move notably."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from regsurvey.diff.core import compare
from regsurvey.model.comparison import Comparison
from regsurvey.model.results import Row, Survey
from regsurvey.output.diff_table import TableFormat
from regsurvey.output.formats import render
from regsurvey.output.html import comparison_data

from ..measured_survey import measured_survey, scaled, with_rows
from .chromium import CHROMIUM, Chromium


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    return measured_survey(tmp_path_factory.mktemp("measured"))


def compiled(measured: Survey, target: str) -> Row:
    return next(r for r in measured.rows if r.target == target and not r.reused)


@pytest.fixture(scope="module")
def slower(measured: Survey) -> Comparison:
    """The sm90 GEMM (another kernel on the head) from 2 s to 40 s, ptxas taking every second added (real
    stages scaled); the gfx950 GEMM from 6 s to 2 s."""
    sm90, gfx950 = compiled(measured, "sm90"), compiled(measured, "gfx950")
    nvidia, amd = (sm90.row_id, "sm90"), (gfx950.row_id, "gfx950")
    base = with_rows(measured, {nvidia: scaled(sm90, 2.0), amd: scaled(gfx950, 6.0)})
    head = with_rows(measured, {nvidia: scaled(scaled(sm90, 2.0), 40.0, stage="ptxas", other_kernel=True),
                                amd: scaled(gfx950, 2.0, other_kernel=True)})
    return compare(base, head)


def test_the_terminal_and_markdown_list_the_builds_whose_compile_time_moved(slower: Comparison,
                                                                          measured: Survey) -> None:
    sm90 = compiled(measured, "sm90")
    heading = ("compile time moved notably in 2 builds (1 slower, 1 faster; at least 2x or 1/2 as long, by 1 s or "
               "more)")
    table = TableFormat(width=200).format(slower)
    assert heading in table and "unchanged: 4 builds" in table
    assert "2.00 s → 40.0 s (20.0x slower; most in ptxas " in table and "6.00 s → 2.00 s (3.0x faster)" in table
    assert table.index("20.0x slower") < table.index("3.0x faster")  # the most slowed first
    markdown = render(slower, "markdown")
    assert "Compile time moved notably in 2 builds" in markdown
    assert f"- `{sm90.key}` sm90 `{sm90.kernel}`: **compile time 2.00 s → 40.0 s (20.0x slower;" in markdown
    assert "**compile time 6.00 s" not in markdown  # only a pathological slowdown is bold


def test_the_json_and_csv_carry_each_builds_compile_time(slower: Comparison, measured: Survey) -> None:
    sm90 = compiled(measured, "sm90")
    rows = {(r["row_id"], r["target"]): r for r in json.loads(render(slower, "json"))["rows"]}
    timed = rows[(sm90.row_id, "sm90")]["compile_time"]
    assert (timed["before"], timed["after"], timed["ratio"], timed["notable"], timed["pathological"]) == (
        2.0, 40.0, 20.0, True, True)
    assert timed["grew_most"]["stage"] == "ptxas" and set(timed["stages"]["after"]) == set(sm90.stage_s or ())
    assert sum(r["compile_time"] is None for r in rows.values()) == 2  # one kernel on both sides
    table = list(csv.DictReader(io.StringIO(render(slower, "csv"))))
    by_row = {(r["key"], r["target"]): r for r in table}
    assert (by_row[(sm90.key, "sm90")]["compile_s_before"], by_row[(sm90.key, "sm90")]["compile_s_after"],
            by_row[(sm90.key, "sm90")]["compile_ratio"]) == ("2.0", "40.0", "20.0")
    twin = next(r for r in measured.rows if r.target == "sm90" and r.reused)
    assert by_row[(twin.key, "sm90")]["compile_s_after"] == str(twin.compile_s)  # measured, reused: its compile's
    assert by_row[(twin.key, "sm90")]["compile_ratio"] == ""  # one kernel on both sides


def test_the_html_page_has_a_notice_of_them(slower: Comparison, measured: Survey) -> None:
    notice = comparison_data(slower, "head against base")["compile_times"]
    assert notice["heading"].startswith("compile time moved notably in 2 builds")
    assert [line["tone"] for line in notice["lines"]] == ["worse", ""]
    assert notice["lines"][0]["text"].startswith(f"{compiled(measured, 'sm90').key} sm90 ")


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run installs it)")
def test_the_page_shows_the_notice(browser: Chromium, slower: Comparison, tmp_path: Path) -> None:
    path = tmp_path / "slower.html"
    path.write_text(render(slower, "html"), encoding="utf-8")
    page = browser.new_page()
    page.open(path.as_uri())
    assert page.evaluate("document.body.getAttribute('data-ready')") == "1" and page.errors() == []
    notice = page.evaluate("Array.from(document.querySelectorAll('#notices .notice')).map(n => n.textContent)")
    (text,) = [n for n in notice if n.startswith("compile time moved notably in 2 builds")]
    assert "2.00 s → 40.0 s (20.0x slower" in text and "6.00 s → 2.00 s (3.0x faster)" in text
    assert page.evaluate("document.querySelectorAll('#notices .notice .worse').length") == 1


def test_nothing_is_said_where_compile_time_did_not_move_notably(measured: Survey) -> None:
    sm90 = compiled(measured, "sm90")
    noise = compare(measured, with_rows(measured, {(sm90.row_id, "sm90"): scaled(sm90, sm90.compile_s * 1.4,
                                                                                  other_kernel=True)}))
    assert not noise.compile_time_changes
    assert "compile time" not in TableFormat().format(noise) and "ompile time" not in render(noise, "markdown")
    assert comparison_data(noise, "x")["compile_times"] is None
