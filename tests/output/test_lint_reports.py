"""Lint findings in every report of a comparison: the terminal table, Markdown, and the HTML page (in
headless Chromium: the lint column, the detail panel's findings, the stack's lint column)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.diff.core import compare, stack
from regsurvey.output.formats import get_format

from ..lint_surveys import clean_and_mutated, findings, fixture_row, lint_survey
from .chromium import CHROMIUM, Chromium

needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run installs it)")


def comparison():
    base, head = clean_and_mutated()
    # gemm's suspect goes the other way: present on the base, fixed on the head.
    return compare(replace(base, rows=(base.rows[0], head.rows[1])), replace(head, rows=(head.rows[0], base.rows[1])))


def test_markdown_and_table() -> None:
    c = comparison()
    markdown = get_format("markdown").format(c)
    assert "- adds a miscompile suspect to buffers w8 on gfx950: argument out_ptr (never read)" in markdown
    assert "- removes a miscompile suspect from gemm w2 on gfx950: argument stride_cm" in markdown
    assert "| **worse** | `buffers/w8` | gfx950 | `many_buffers_kernel` | new miscompile suspect out_ptr |" \
        in markdown
    assert "| better | `gemm/w2` | gfx950 | `matmul_kernel` | fixed miscompile suspect stride_cm |" in markdown
    assert markdown.rstrip().endswith("; miscompile suspects 1 → 1</sub>")
    table = get_format("table").format(c).splitlines()
    assert table[table.index("worse (1)") + 1].split() == ["key", "target", "kernel", "kernarg", "lint"]
    assert "new miscompile suspect out_ptr" in table[table.index("worse (1)") + 2]
    assert "fixed miscompile suspect stride_cm" in table[table.index("better (1)") + 2]


def test_stack_columns() -> None:
    base, head = clean_and_mutated()
    notes = fixture_row("matmul-gfx950", findings("matmul-gfx950.amdgcn", "matmul-gfx950", with_ir=False))
    third = replace(head, commit="c" * 40, rows=(head.rows[0], notes))
    s = stack([base, head, third], ["lose two arguments", "notes instead"])
    markdown = get_format("markdown").format_stack(s)
    # (columns: worse, mixed, better, newly failing, fixed)
    assert "| bbbbbbbbbb | lose two arguments | 2/2 | 2 | 0 | 0 | 0 | 0 | unchanged | 2 (2 suspects, 2 new) |" \
        in markdown
    assert "| cccccccccc | notes instead | 2/2 | 0 | 0 | 1 | 0 | 0 | unchanged | 3 (1 suspect, 2 new, 1 fixed) |" \
        in markdown
    table = get_format("table", width=200).format_stack(s)
    assert "2 (2 suspects, 2 new)" in table and "3 (1 suspect, 2 new, 1 fixed)" in table


@needs_chromium
def test_html_lint_column_and_detail(browser: Chromium, tmp_path: Path) -> None:
    c = comparison()
    path = tmp_path / "lint.html"
    path.write_text(get_format("html").format(c), encoding="utf-8")
    page = browser.new_page()
    page.open(path.as_uri())
    assert page.evaluate("document.body.getAttribute('data-ready')") == "1"
    headers = page.evaluate("Array.from(document.querySelectorAll('#rows thead th')).map(th => th.textContent)")
    assert headers[:5] == ["mark", "key", "target", "kernel", "kernarg lint"]
    cells = page.evaluate("Array.from(document.querySelectorAll('#rows tbody tr.row')).map(tr => "
                          "[tr.cells[4].textContent, tr.cells[4].className])")
    assert cells == [["new miscompile suspect out_ptr", "worse"], ["fixed miscompile suspect stride_cm", "better"]]
    page.evaluate("document.querySelector('#rows tbody tr.row').click()")
    items = page.evaluate("Array.from(document.querySelectorAll('tr.detail ul.findings li')).map(li => "
                          "[li.className, li.firstChild.textContent])")
    assert items == [["worse", "new error: out_ptr (#32, offset 256) of many_buffers_kernel loaded and never read · "
                               "line 28: s_load_dwordx2 s[12:13], s[0:1], 0x100"]]
    assert "lint findings: 1" in page.evaluate("document.querySelector('tr.detail').textContent")
    page.evaluate("document.querySelectorAll('#rows tbody tr.row')[1].click()")
    fixed = page.evaluate("Array.from(document.querySelectorAll('tr.detail')).pop().textContent")
    assert "lint findings: none" in fixed and "fixed error: stride_cm (#8, offset 44) of matmul_kernel" in fixed
    page.screenshot(tmp_path / "lint.png")
    assert page.errors() == []
    data = json.loads(path.read_text().split('<script id="report-data" type="application/json">')[1]
                      .split("</script>")[0])
    row = data["rows"][data["comparisons"][0]["rows"][0]]  # each distinct build once, named by index
    # The sentence and its tone come made: the page's script only shows them.
    assert row["lint"]["after"] == 1 and row["lint"]["heading"] == "lint findings: 1"
    assert [(f["tone"], f["text"]) for f in row["lint"]["findings"]] == [(
        "worse", "new error: out_ptr (#32, offset 256) of many_buffers_kernel loaded and never read · "
                 "line 28: s_load_dwordx2 s[12:13], s[0:1], 0x100")]


@needs_chromium
def test_html_stack_lint_column(browser: Chromium, tmp_path: Path) -> None:
    base, head = clean_and_mutated()
    unlinted = replace(head, commit="c" * 40, rows=tuple(replace(r, lint=None) for r in head.rows))
    s = stack([base, head, unlinted], ["lose two arguments", "not linted"])
    path = tmp_path / "stack.html"
    path.write_text(get_format("html").format_stack(s), encoding="utf-8")
    page = browser.new_page()
    page.open(path.as_uri())
    cells = page.evaluate("Array.from(document.querySelectorAll('#steps tbody tr')).map(tr => "
                          "tr.cells[tr.cells.length - 1].textContent)")
    assert cells == ["2 (2 suspects, 2 new)", "not linted"]
    assert page.errors() == []


def test_unlinted_rows_say_so() -> None:
    row = fixture_row("matmul-gfx950", None)
    survey = lint_survey([row], "a" * 40, "a")
    c = compare(survey, survey)
    assert c.rows[0].lint_findings.linted is False and "miscompile" not in get_format("markdown").format(c)
