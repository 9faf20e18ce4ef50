"""The HTML report in headless Chromium: loads without a console error, escapes what kernels and
compilers wrote, sorts, filters, pages through thousands of rows, and looks right (screenshots are
saved in the test's tmp dir)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.diff.core import compare, stack
from regsurvey.model.comparison import Comparison
from regsurvey.model.results import Survey
from regsurvey.output.formats import get_format
from regsurvey.output.html import script_json

from ..layer_survey import edited
from .chromium import CHROMIUM, Chromium, Page

MALICIOUS = "</script><img src=x onerror=alert(1)><!-- & \u2028"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="needs Debian's chromium (.ci/run installs it)")


def open_report(browser: Chromium, path: Path, text: str) -> Page:
    path.write_text(text, encoding="utf-8")
    page = browser.new_page()
    page.open(path.as_uri())
    assert page.evaluate("document.body.getAttribute('data-ready')") == "1"
    return page


def visible(page: Page, what: str) -> list:
    """``what`` (a JS expression of a row element ``tr``) for each row shown."""
    return page.evaluate(f"Array.from(document.querySelectorAll('#rows tbody tr.row')).map(tr => {what})")


def choose(page: Page, label: str, value: str) -> None:
    page.evaluate(f"(() => {{ const s = document.querySelector('#filters select[aria-label={json.dumps(label)}]');"
                  f" s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()")


def changed(layer: Survey) -> Comparison:
    base = replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)")
    head = edited(layer, {
        ("attn/tp4/w2/bf16", "gfx950"): {"vgpr": 64, "occupancy": 6},
        ("attn/tp8/w8/e4m3", "gfx950"): {"vgpr": 120, "vgpr_spill": 12, "scratch_bytes": 48},
        ("attn/tp4/w8/bf16", "sm90"): {"regs": 40},
        ("proj/tp8/w8", "sm90"): {"status": "error", "error": MALICIOUS},
    }, commit="b" * 40, label="HEAD (bbbbbbbbbb)")
    return compare(base, head)


def test_script_json_cannot_close_its_element() -> None:
    text = script_json({"e": MALICIOUS})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"e": MALICIOUS}


def test_report(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    page = open_report(browser, tmp_path / "report.html", get_format("html").format(changed(layer)))
    assert page.errors() == []
    assert page.evaluate("document.images.length + document.querySelectorAll('[onerror]').length") == 0
    assert page.evaluate("document.title") == "Registers: main → HEAD"
    # Summary block and prose.
    assert page.evaluate("document.getElementById('counts').textContent") == (
        "2worse1newly failing1better36unchanged")
    prose = page.evaluate("Array.from(document.querySelectorAll('#summary li')).map(li => li.textContent)")
    # (The summary quotes the error's first line: U+2028 ends it.)
    assert prose[:2] == ["breaks proj tp8 w8 on sm90: </script><img src=x onerror=alert(1)><!-- &",
                         "adds VGPR spills to attn (matmul) tp8 w8 e4m3 on gfx950 (0 → 12; scratch 0 → 48 B)"]
    # Worst first: the default order is by mark.
    assert visible(page, "tr.cells[0].textContent")[:4] == ["worse", "worse", "newly failing", "better"]
    assert len(visible(page, "1")) == 40
    # Sorting by a figure column orders by its change, biggest growth first; again: smallest first.
    page.evaluate("document.querySelector('#rows th[data-col=\"f:vgpr\"]').click()")
    assert visible(page, "tr.dataset.ref")[:2] == ["gfx950:attn/tp8/w8/e4m3", "gfx950:attn/tp4/w2/bf16"]
    page.evaluate("document.querySelector('#rows th[data-col=\"f:vgpr\"]').click()")
    assert visible(page, "tr.dataset.ref")[0] == "gfx950:attn/tp4/w2/bf16#1"  # unchanged, VGPR 3 < 38
    page.evaluate("document.querySelector('#rows th[data-col=\"key\"]').click()")
    keys = visible(page, "tr.cells[1].textContent")
    assert keys == sorted(keys)
    # Filters: kind, target and every axis.
    choose(page, "kind", "proj")
    assert set(visible(page, "tr.cells[1].textContent.split('/')[0]")) == {"proj"} and len(visible(page, "1")) == 8
    choose(page, "tp", "tp8")
    choose(page, "target", "sm90")
    assert visible(page, "tr.cells[1].textContent") == ["proj/tp8/w2", "proj/tp8/w8"]
    choose(page, "width", "w8")
    assert visible(page, "tr.cells[0].textContent") == ["newly failing"]
    # The detail of the failing build shows the compiler's text as text.
    page.evaluate("document.querySelector('#rows tbody tr.row').click()")
    assert page.evaluate("document.querySelector('tr.detail pre.error').textContent") == MALICIOUS
    assert "lint findings: not linted" in page.evaluate("document.querySelector('tr.detail').textContent")
    assert page.evaluate("document.images.length") == 0
    page.screenshot(tmp_path / "report-detail.png")
    # A summary line shows its builds.
    for label in ("kind", "tp", "target", "width"):
        choose(page, label, "")
    page.evaluate("document.querySelectorAll('#summary li')[1].click()")
    assert visible(page, "tr.dataset.ref") == ["gfx950:attn/tp8/w8/e4m3"]
    page.evaluate("document.getElementById('focus-clear').click()")
    assert len(visible(page, "1")) == 40
    page.evaluate("window.scrollTo(0, 0)")
    shot = page.screenshot(tmp_path / "report.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert page.errors() == []


def test_thousands_of_rows(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    # 5,000 builds: real rows repeated at 125 tp values, a tenth of them with more VGPRs.
    rows = []
    for i in range(125):
        for r in layer.rows:
            tp = r.axes["tp"] + 100 * i
            rows.append(replace(r, key=r.key.replace(f"/tp{r.axes['tp']}/", f"/tp{tp}/"), axes={**r.axes, "tp": tp}))
    base = replace(layer, rows=tuple(rows))
    head = replace(layer, rows=tuple(
        replace(r, resources={**r.resources, "vgpr": r.resources["vgpr"] + 8})
        if n % 10 == 0 and "vgpr" in r.resources else r for n, r in enumerate(rows)))
    comparison = compare(base, head)
    assert len(comparison.rows) == 5000
    text = get_format("html").format(comparison)
    started = time.monotonic()
    page = open_report(browser, tmp_path / "big.html", text)
    assert time.monotonic() - started < 10
    assert page.errors() == []
    assert len(visible(page, "1")) == 100  # one page of rows in the DOM, not 5,000
    assert page.evaluate("document.getElementById('page-info').textContent") == "builds 1–100 of 5000"
    page.evaluate("document.getElementById('next').click()")
    assert page.evaluate("document.getElementById('page-info').textContent") == "builds 101–200 of 5000"
    choose(page, "mark", "worse")
    assert page.evaluate("document.getElementById('page-info').textContent") == (
        f"builds 1–100 of {comparison.counts[next(m for m in comparison.counts if m.value == 'worse')]}"
        " (filtered from 5000)")
    page.screenshot(tmp_path / "big.png")


def test_stack_page(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    second = edited(layer, {("attn/tp4/w2/bf16", "gfx950"): {"vgpr": 64}}, commit="b" * 40, label="bbbbbbbbbb")
    third = edited(second, {("proj/tp4/w2", "sm90"): {"regs": 10}}, commit="c" * 40, label="HEAD (cccccccccc)")
    s = stack([replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)"), second, third],
              ["more VGPRs", "fewer registers"])
    page = open_report(browser, tmp_path / "stack.html", get_format("html").format_stack(s))
    assert page.errors() == []
    steps = page.evaluate("Array.from(document.querySelectorAll('#steps tbody tr')).map(tr => tr.textContent)")
    assert steps == ["bbbbbbbbbbmore VGPRs24/241000unchanged0",
                     "ccccccccccfewer registers24/240100unchanged0"]
    assert page.evaluate("document.getElementById('pick').options.length") == 3
    page.evaluate("document.querySelectorAll('#steps tbody tr')[1].click()")
    assert page.evaluate("document.getElementById('pick').value") == "2"
    assert visible(page, "tr.dataset.ref")[0] == "sm90:proj/tp4/w2"
    page.screenshot(tmp_path / "stack.png")
    assert page.errors() == []
