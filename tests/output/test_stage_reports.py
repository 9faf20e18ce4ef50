"""The first compiler stage that differs in every format of a comparison: a column in the table, Markdown and
HTML (with a line in a build's detail), the JSON's ``first_difference``, a CSV column; the summary's lines
in each. On real builds made two ways (tests/fixtures/stages)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from regsurvey.first_stage import first_differences
from regsurvey.model.comparison import Comparison
from regsurvey.output.formats import Style, get_format, render
from regsurvey.output.html import comparison_data

from ..stage_cases import OBJECTS, stage_comparison
from .chromium import Chromium
from .test_html import needs_chromium, open_report

STAGE_LINE = "1 build: Triton's lowering changed (TTGIR differs first: VGPRs +16, AGPRs -8, SGPRs -2)"


@pytest.fixture(scope="module")
def staged() -> Comparison:
    return first_differences(stage_comparison(), OBJECTS)


def test_json_has_each_rows_stage(staged: Comparison) -> None:
    data = json.loads(render(staged, "json"))
    assert {(r["target"], r["key"]): r["first_difference"] for r in data["rows"]} == {
        ("gfx942", "moe_up_gate/tp4/w2/nostop"): "ttir", ("gfx942", "v_up/w4/nostop"): "ttgir",
        ("gfx942", "kv_write/bf16/nostop"): "llir",
        ("gfx942", "kv_write/bf16/stop"): "amdgcn",
        ("sm90", "kv_write/bf16/nostop"): "ptx", ("sm90", "moe_align/w2"): "object",
        ("gfx942", "scale/width2"): "locations", ("sm90", "scale/width2"): "locations"}
    assert STAGE_LINE in [line["text"] for line in data["summary"]]
    # Not known (the store was not asked): null.
    assert {r["first_difference"] for r in json.loads(render(stage_comparison(), "json"))["rows"]} == {None}


def test_csv_has_a_column(staged: Comparison) -> None:
    rows = list(csv.DictReader(io.StringIO(render(staged, "csv"))))
    assert [r["first_difference"] for r in rows] == [r.first_difference.value for r in staged.rows
                                                     if r.first_difference is not None]
    assert {r["first_difference"] for r in csv.DictReader(io.StringIO(render(stage_comparison(), "csv")))} == {""}


def test_markdown_has_a_column_where_known(staged: Comparison) -> None:
    text = render(staged, "markdown")
    assert f"- {STAGE_LINE}" in text
    assert "| | key | target | kernel | change | first differs |" in text
    assert "| `v_up/w4/nostop` | gfx942 | `head_bmm_kernel` |" in text.replace("**mixed** ", "")
    row = next(line for line in text.splitlines() if "`v_up/w4/nostop`" in line)
    assert row.endswith("| TTGIR |")
    assert "first differs" not in render(stage_comparison(), "markdown")


def test_the_table_has_a_column_where_known(staged: Comparison) -> None:
    text = render(staged, "table", Style(width=160))
    assert STAGE_LINE in text
    worse = text[text.index("worse ("):]
    header = worse.splitlines()[1]
    assert header.rstrip().endswith("first differs")
    assert next(line for line in worse.splitlines() if line.startswith("kv_write")).rstrip().endswith("LLIR")
    assert "first differs" not in render(stage_comparison(), "table", Style(width=160))


def test_html_data_has_the_stage_and_its_words(staged: Comparison) -> None:
    """The page lists the builds of kinds on targets where one changed (moe_align and the toy's scale did
    not: folded; kv_write's stop build on gfx942 did not either, but its nostop one did); the summary's line
    speaks of the others too."""
    data = comparison_data(staged, "fixtures")
    assert data["stages"] is True
    rows = {r["ref"]: r for r in data["rows"]}
    assert {ref: (r["stage"], r["stage_text"]) for ref, r in rows.items()} == {
        "gfx942:moe_up_gate/tp4/w2/nostop": ("TTIR", "the kernel's Triton IR changed (TTIR differs)"),
        "gfx942:kv_write/bf16/nostop": ("LLIR", "Triton's LLVM lowering changed (LLIR differs first)"),
        "gfx942:kv_write/bf16/stop": ("AMDGCN", "LLVM's backend changed (identical LLIR, different AMDGCN)"),
        "sm90:kv_write/bf16/nostop": ("PTX", "LLVM's backend changed (identical LLIR, different PTX)"),
        "gfx942:v_up/w4/nostop": ("TTGIR", "Triton's lowering changed (TTGIR differs first)")}
    assert "2 builds: identical from TTIR on (only source locations differ)" in [s["text"] for s in data["summary"]]
    assert comparison_data(stage_comparison(), "fixtures")["stages"] is False


@needs_chromium
def test_html_shows_a_column_sorted_in_the_compilers_order(staged: Comparison, browser: Chromium,
                                                          tmp_path: Path) -> None:
    page = open_report(browser, tmp_path / "stages.html", get_format("html").format(staged))
    assert "first differs" in page.evaluate(
        "Array.from(document.querySelectorAll('#rows thead th')).map(th => th.textContent)")
    page.evaluate("document.querySelector('#rows th[data-col=\"stage\"]').click()")
    column = page.evaluate("Array.from(document.querySelectorAll('#rows thead th')).map(th => th.dataset.col)"
                           ".indexOf('stage')")
    shown = page.evaluate(f"Array.from(document.querySelectorAll('#rows tbody tr.row')).map(tr => "
                          f"tr.cells[{column}].textContent)")
    assert shown == ["TTIR", "TTGIR", "LLIR", "AMDGCN", "PTX"]
    page.evaluate("document.querySelector('#rows th[data-col=\"stage\"]').click()")
    assert page.evaluate(f"Array.from(document.querySelectorAll('#rows tbody tr.row')).map(tr => "
                         f"tr.cells[{column}].textContent)") == ["PTX", "AMDGCN", "LLIR", "TTGIR", "TTIR"]
    page.evaluate("document.querySelector('#rows tbody tr.row').click()")  # the PTX build's detail
    assert "first stage that differs: LLVM's backend changed (identical LLIR, different PTX)" in page.evaluate(
        "document.querySelector('tr.detail').textContent")
