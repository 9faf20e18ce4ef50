"""The HTML report in headless Chromium: loads without a console error, escapes what kernels and
compilers wrote, sorts, filters, pages through thousands of rows, and looks right (screenshots are
saved in the test's tmp dir)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import pytest

from regsurvey.diff.core import compare, stack
from regsurvey.model.comparison import Comparison
from regsurvey.model.rebuild import RebuildCheck, RebuildDifference
from regsurvey.model.results import Row, Survey
from regsurvey.output.formats import get_format
from regsurvey.output.html import comparison_data, script_json, verdict

from ..layer_survey import edited, row
from .chromium import CHROMIUM, Chromium, Page

MALICIOUS = "</script><img src=x onerror=alert(1)><!-- & \u2028"

needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
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


def base_figure(layer: Survey, row_id: str, target: str, name: str) -> int:
    """A figure of the unedited survey's build."""
    return next(r.resources[name] for r in layer.rows if (r.row_id, r.target) == (row_id, target))


def test_script_json_cannot_close_its_element() -> None:
    text = script_json({"e": MALICIOUS})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"e": MALICIOUS}


def test_figures_come_with_verdict_and_text(layer: Survey) -> None:
    # What the page shows of each figure is computed here, by the reports' own rules.
    data = comparison_data(changed(layer), "x")
    rows = {r["ref"]: r for r in data["rows"]}
    base = {(r.row_id, r.target): r.resources for r in layer.rows}
    spilled = rows["gfx950:attn/tp8/w8/e4m3"]["f"]
    assert spilled["vgpr_spill"] == {"before": 0, "after": 12, "delta": 12, "delta_text": "+12", "verdict": "worse",
                                     "text": "0 → 12 (+12)"}
    vgpr = base[("attn/tp8/w8/e4m3", "gfx950")]["vgpr"]
    assert spilled["vgpr"]["text"] == f"{vgpr} → 120 ({120 - vgpr:+d})" and spilled["vgpr"]["verdict"] == "worse"
    occupancy = base[("attn/tp4/w2/bf16", "gfx950")]["occupancy"]
    assert occupancy > 6  # fewer waves per SIMD is worse, though the number went down
    assert rows["gfx950:attn/tp4/w2/bf16"]["f"]["occupancy"] == {
        "before": occupancy, "after": 6, "delta": 6 - occupancy, "delta_text": f"{6 - occupancy:+d}",
        "verdict": "worse", "text": f"{occupancy} → 6 ({6 - occupancy:+d})"}
    regs = base[("attn/tp4/w8/bf16", "sm90")]["regs"]
    assert regs > 40
    assert rows["sm90:attn/tp4/w8/bf16"]["f"]["regs"] == {
        "before": regs, "after": 40, "delta": 40 - regs, "delta_text": f"{40 - regs:+d}", "verdict": "better",
        "text": f"{regs} → 40 ({40 - regs:+d})"}
    # A figure that kept its value is sent as that value: the page's script makes of it what the
    # unchanged figure is ({"before": same, "after": same, "delta": 0, "delta_text": "0", ...}).
    same = base[("attn/tp4/w2/bf16#1", "gfx950")]["vgpr"]
    assert rows["gfx950:attn/tp4/w2/bf16#1"]["f"]["vgpr"] == same
    failed = base[("proj/tp8/w8", "sm90")]["regs"]
    assert rows["sm90:proj/tp8/w8"]["f"]["regs"] == {
        "before": failed, "after": None, "delta": None, "delta_text": "", "verdict": "n/a", "text": f"{failed} → -"}
    assert rows["sm90:proj/tp8/w8"]["kernel_text"] == "scale_rows"
    assert data["heading"] == "base main · aaaaaaaaaaaa  →  head HEAD · bbbbbbbbbbbb  ·  targets gfx950, sm90"
    # A figure that is neither better nor worse (the argument segment) only changed.
    kernarg = base[("proj/tp4/w2", "gfx950")]["kernarg_bytes"]
    neutral = compare(layer, edited(layer, {("proj/tp4/w2", "gfx950"): {"kernarg_bytes": kernarg + 8}}))
    row = next(r for r in comparison_data(neutral, "x")["rows"] if r["ref"] == "gfx950:proj/tp4/w2")
    assert row["mark"] == "changed"
    assert row["f"]["kernarg_bytes"] == {"before": kernarg, "after": kernarg + 8, "delta": 8, "delta_text": "+8",
                                         "verdict": "changed", "text": f"{kernarg} → {kernarg + 8} (+8)"}


def test_each_grid_is_coloured_by_what_moved_most_in_it(layer: Survey) -> None:
    """A grid takes the most important figure that moved among its keys (spills, then occupancy, then
    registers ...); one where nothing moved, its vendor's spills (a real library's retuning can move
    occupancy and registers and no spill: grids of zeros would say nothing)."""
    from regsurvey.output.html import grids

    def default(edits: dict) -> dict[tuple[str, str], str]:
        return {(g["kind"], g["target"]): g["default"] for g in grids(compare(layer, edited(layer, edits)))}

    vgpr = base_figure(layer, "attn/tp4/w8/bf16", "gfx950", "vgpr")
    regs = base_figure(layer, "proj/tp4/w2", "sm90", "regs")
    moved = default({("attn/tp4/w8/bf16", "gfx950"): {"vgpr": vgpr + 8},
                     ("proj/tp4/w2", "sm90"): {"regs": regs + 8, "spill_store_bytes": 16}})
    assert moved == {("attn", "gfx950"): "vgpr", ("attn", "sm90"): "spill_store_bytes",
                     ("proj", "gfx950"): "vgpr_spill", ("proj", "sm90"): "spill_store_bytes"}
    occupancy = base_figure(layer, "attn/tp4/w8/bf16", "gfx950", "occupancy")
    assert default({("attn/tp4/w8/bf16", "gfx950"): {"vgpr": vgpr + 8, "occupancy": occupancy - 1}})[
        ("attn", "gfx950")] == "occupancy"


# vLLM's MoE on gfx942, in small: one build spills SGPRs, six others fall to one wave per SIMD.
WORSE_OCCUPANCY = ("attn/tp4/w2/bf16", "attn/tp4/w2/e4m3", "attn/tp4/w8/bf16", "attn/tp4/w8/e4m3",
                   "attn/tp8/w2/bf16", "attn/tp8/w2/e4m3")


def fewer_waves(layer: Survey) -> Comparison:
    """Six attn matmul builds on gfx950 fall from 7 waves to 1, one spills 4 SGPRs (a more important
    figure, moved by fewer builds), one scale build takes a VGPR less; on sm90 one proj build takes more
    registers."""
    edits: dict = {(key, "gfx950"): {"occupancy": 1} for key in WORSE_OCCUPANCY}
    edits[("attn/tp8/w8/e4m3", "gfx950")] = {"sgpr_spill": 4}
    edits[("attn/tp8/w8/bf16#1", "gfx950")] = {"vgpr": base_figure(layer, "attn/tp8/w8/bf16#1", "gfx950", "vgpr") - 1}
    edits[("proj/tp4/w2", "sm90")] = {"regs": base_figure(layer, "proj/tp4/w2", "sm90", "regs") + 8}
    return compare(replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)"),
                   edited(layer, edits, commit="b" * 40, label="HEAD (bbbbbbbbbb)"))


def test_a_grid_is_coloured_by_what_made_most_builds_worse(layer: Survey) -> None:
    """Not by the most important figure that moved: one build's SGPR spills would hide six builds' fall
    to one wave per SIMD behind zeros."""
    from regsurvey.output.html import grids

    attn = next(g for g in grids(fewer_waves(layer)) if (g["kind"], g["target"]) == ("attn", "gfx950"))
    assert attn["default"] == "occupancy"
    cells = {c["key"]: c for row in attn["cells"] for c in row if c is not None}
    assert {k: c["verdict"] for k, c in cells.items()} == {
        **dict.fromkeys(WORSE_OCCUPANCY, "worse"), "attn/tp8/w8/e4m3": "worse", "attn/tp8/w8/bf16": "better"}
    assert cells["attn/tp4/w2/bf16"]["title"] == "attn/tp4/w2/bf16: 2 builds: 1 worse, 1 unchanged"


@needs_chromium
def test_every_cell_shows_its_keys_verdict_whatever_figure_colours_it(browser: Chromium, layer: Survey,
                                                                     tmp_path: Path) -> None:
    page = open_report(browser, tmp_path / "verdicts.html", get_format("html").format(fewer_waves(layer)))
    assert page.errors() == []
    grid = "#grids table.keys[data-kind=attn][data-target=gfx950]"

    def cells() -> dict[str, list[str]]:
        return page.evaluate(f"Object.fromEntries(Array.from(document.querySelectorAll('{grid} td.cell')).map(td =>"
                             " [td.dataset.key, [td.textContent, td.className, td.dataset.verdict]]))")

    # By default coloured by the occupancy that six builds lost.
    assert page.evaluate(f"document.querySelector('{grid}').previousSibling.textContent").startswith("occupancy")
    assert cells()["attn/tp4/w2/bf16"] == ["7 → 1", "cell worse v-worse", "worse"]
    # Coloured by SGPR spills, the six still say they got worse, the one better build better.
    page.evaluate("(() => { const s = document.getElementById('grid-figure'); s.value = 'sgpr_spill';"
                  " s.dispatchEvent(new Event('change')); })()")
    shown = cells()
    assert {k: v for k, v in shown.items() if k in WORSE_OCCUPANCY} == dict.fromkeys(
        WORSE_OCCUPANCY, ["0", "cell same v-worse", "worse"])
    assert shown["attn/tp8/w8/e4m3"] == ["0 → 4", "cell worse v-worse", "worse"]
    assert shown["attn/tp8/w8/bf16"] == ["0", "cell same v-better", "better"]
    # An sm90 grid has no SGPR spills to show: its worse key is marked all the same.
    assert page.evaluate("Array.from(document.querySelectorAll('#grids table.keys[data-kind=proj][data-target=sm90] "
                         "td')).map(td => [td.className, td.title])") == [
        ["v-worse", "proj/tp4/w2: worse"], ["", "proj/tp4/w8: unchanged"], ["", "proj/tp8/w2: unchanged"],
        ["", "proj/tp8/w8: unchanged"]]
    # Drawn: a worse key's marker is the worse colour, an unchanged key has none.
    marker = page.evaluate(f"getComputedStyle(document.querySelector('{grid} td[data-key=\"attn/tp4/w2/bf16\"]'),"
                           " '::after').content")
    assert marker == '"\u25b2"'  # ▲
    page.screenshot(tmp_path / "verdicts.png")
    assert page.errors() == []


def test_page_data_names_every_figure_and_tells_the_rebuild_check(layer: Survey) -> None:
    comparison = changed(layer)
    difference = RebuildDifference("gfx950", "attn/tp4/w2/bf16", "attn/tp4/w2/bf16", None, "a" * 64, "b" * 64,
                                   ".text", "12 bytes differ")
    check = replace(comparison, rebuild=RebuildCheck("HEAD", "b" * 40, 40, (difference,)))
    page = get_format("html").format(check)
    data = json.loads(page.split('<script id="report-data" type="application/json">')[1].split("</script>")[0])
    assert data["comparisons"][0]["rebuild"] == {
        "text": "rebuild check of HEAD: 1 of 40 builds differs from a cold Triton cache",
        "differences": ["attn/tp4/w2/bf16 gfx950 -: .text: 12 bytes differ"]}
    figures = data["figures"]
    assert figures["scratch_bytes"]["heading"] == "scratch (B)" and figures["vgpr"]["heading"] == "VGPRs"
    assert all("worse" not in f for f in figures.values())  # the page is told verdicts, not directions


def test_the_script_only_shows_sorts_and_filters() -> None:
    template = (files("regsurvey") / "templates" / "report.html.j2").read_text(encoding="utf-8")
    script = template.split("<script>", 1)[1]
    # No verdict from a figure's direction, no change or its sign worked out, no sentence put together
    # with an arrow: Python sends them.
    for recomputed in ("function verdict", "changeText", ".worse", "p[1] - p[0]", "d > 0", "→",
                       "builds identical", "new Set(c.base.targets", '" cfg"'):
        assert recomputed not in script, recomputed


@needs_chromium
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
    # proj on gfx950 did not change: its 4 builds are named, not listed.
    assert len(visible(page, "1")) == 36
    assert page.evaluate("document.getElementById('unlisted').textContent") == (
        "not listed: 4 unchanged builds of the 1 kind × target where nothing changed")
    assert page.evaluate("document.getElementById('meta').textContent") == (
        "base main · aaaaaaaaaaaa  →  head HEAD · bbbbbbbbbbbb  ·  targets gfx950, sm90")
    # The table shows each build's change; every figure's column on demand.
    assert page.evaluate("Array.from(document.querySelectorAll('#rows thead th')).map(th => th.dataset.col)") == [
        "mark", "key", "target", "kernel", "change"]
    page.evaluate("document.getElementById('all-figures').click()")
    # A figure's cell: the change's text, coloured by its verdict (fewer waves per SIMD is worse).
    cells = page.evaluate(
        "(() => { const tr = document.querySelector('#rows tr.row[data-ref=\"gfx950:attn/tp4/w2/bf16\"]');"
        " const cols = Array.from(document.querySelectorAll('#rows thead th')).map(th => th.dataset.col);"
        " return ['f:occupancy', 'f:vgpr_spill'].map(c => [tr.cells[cols.indexOf(c)].textContent,"
        " tr.cells[cols.indexOf(c)].className]); })()")
    occupancy = base_figure(layer, "attn/tp4/w2/bf16", "gfx950", "occupancy")
    assert cells == [[f"{occupancy} → 6 ({6 - occupancy:+d})", "num worse"], ["0", "num"]]
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
    assert set(visible(page, "tr.cells[1].textContent.split('/')[0]")) == {"proj"} and len(visible(page, "1")) == 4
    choose(page, "tp", "tp8")
    choose(page, "target", "sm90")
    assert visible(page, "tr.cells[1].textContent") == ["proj/tp8/w2", "proj/tp8/w8"]
    choose(page, "width", "w8")
    assert visible(page, "tr.cells[0].textContent") == ["newly failing"]
    # The detail of the failing build shows the compiler's text as text.
    page.evaluate("document.querySelector('#rows tbody tr.row').click()")
    assert page.evaluate("document.querySelector('tr.detail pre.error').textContent") == MALICIOUS
    figures = page.evaluate("Array.from(document.querySelectorAll('tr.detail .detail-grid > table tr')).slice(0, 2)"
                            ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    stores = base_figure(layer, "proj/tp8/w8", "sm90", "spill_store_bytes")
    assert figures == [["figure", "before", "after", "Δ"], ["spill stores (B)", str(stores), "-", ""]]
    assert "lint findings: not linted" in page.evaluate("document.querySelector('tr.detail').textContent")
    assert page.evaluate("document.images.length") == 0
    page.screenshot(tmp_path / "report-detail.png")
    # A summary line shows its builds.
    for label in ("kind", "tp", "target", "width"):
        choose(page, label, "")
    page.evaluate("document.querySelectorAll('#summary li')[1].click()")
    assert visible(page, "tr.dataset.ref") == ["gfx950:attn/tp8/w8/e4m3"]
    page.evaluate("document.querySelector('#rows tbody tr.row').click()")
    spills = page.evaluate("Array.from(document.querySelectorAll('tr.detail .detail-grid > table tr'))[1]"
                           ".cells[3].className")
    assert spills == "num worse"
    assert ["VGPR spills", "0", "12", "+12"] in page.evaluate(
        "Array.from(document.querySelectorAll('tr.detail .detail-grid > table tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    page.evaluate("document.getElementById('focus-clear').click()")
    assert len(visible(page, "1")) == 36
    page.evaluate("window.scrollTo(0, 0)")
    shot = page.screenshot(tmp_path / "report.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert page.errors() == []


@needs_chromium
def test_thousands_of_rows(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    # 5,000 builds: real rows repeated at 125 tp values, a seventh of them with more VGPRs (AMD) or registers
    # (NVIDIA): every kind on every target moved, so every build is listed.
    rows = []
    for i in range(125):
        for r in layer.rows:
            tp = r.axes["tp"] + 100 * i
            rows.append(replace(r, key=r.key.replace(f"/tp{r.axes['tp']}/", f"/tp{tp}/"), axes={**r.axes, "tp": tp}))
    base = replace(layer, rows=tuple(rows))
    def more(r: Row) -> Row:
        name = "vgpr" if "vgpr" in r.resources else "regs"
        return replace(r, resources={**r.resources, name: r.resources[name] + 8})

    head = replace(layer, rows=tuple(more(r) if n % 7 == 0 and r.resources else r for n, r in enumerate(rows)))
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


def many_builds(layer: Survey, copies: int) -> Survey:
    """The survey's rows repeated at ``copies`` tp values (40 builds each)."""
    rows = [replace(r, key=r.key.replace(f"/tp{r.axes['tp']}/", f"/tp{r.axes['tp'] + 100 * i}/"),
                    axes={**r.axes, "tp": r.axes["tp"] + 100 * i}) for i in range(copies) for r in layer.rows]
    return replace(layer, rows=tuple(rows))


def test_the_verdict_says_the_outcome_in_a_word(layer: Survey) -> None:
    assert verdict(changed(layer)) == {
        "text": "Regression: 4 of 40 builds changed (2 worse, 1 newly failing, 1 better)", "tone": "worse"}
    regs = base_figure(layer, "proj/tp4/w2", "sm90", "regs")
    assert verdict(compare(layer, edited(layer, {("proj/tp4/w2", "sm90"): {"regs": regs - 8}}))) == {
        "text": "Improvement: 1 of 40 builds changed (1 better)", "tone": "better"}
    assert verdict(compare(layer, layer)) == {
        "text": "Nothing changed: 40 builds of 24 keys on gfx950, sm90, every figure the same", "tone": ""}


def test_kinds_where_nothing_changed_are_named_not_drawn(layer: Survey) -> None:
    """A kind on a target where no build changed sends neither its grid nor its builds: a line names it
    with its counts (a whole suite's diff drew 24 grids of unchanged kinds before its summary)."""
    data = comparison_data(changed(layer), "x")
    assert [(g["kind"], g["target"]) for g in data["grids"]] == [("attn", "gfx950"), ("attn", "sm90"), ("proj", "sm90")]
    assert data["folded"] == {"text": "1 kind × target where no build changed: 4 builds of 4 keys",
                              "kinds": ["proj on gfx950: 4 keys, 4 builds"],
                              "unlisted": "not listed: 4 unchanged builds of the 1 kind × target where nothing changed"}
    assert {(r["kind"], r["target"]) for r in data["rows"]} == {("attn", "gfx950"), ("attn", "sm90"), ("proj", "sm90")}
    assert len(data["rows"]) == 36 and data["counts"]["unchanged"] == 36  # the counts are still of every build
    nothing = comparison_data(compare(layer, layer), "x")
    assert nothing["grids"] == [] and nothing["rows"] == []
    assert nothing["folded"]["text"] == "4 kinds × targets where no build changed: 40 builds of 24 keys"


def test_a_report_where_nothing_changed_is_small(layer: Survey) -> None:
    """The page of a diff where nothing changed holds its fixed part (the style and the script, about 34 KB)
    and a line per kind on a target, whatever the number of builds: under 60 KB for the layer's 40 builds
    (38 KB), and no bigger for 5,000. It used to carry every build and grid: 124 KB for the layer's 40
    builds, 677 KB for the demo suite's 266 (`regsurvey diff HEAD~2 HEAD~1` in the demo repository), 39 KB
    now."""
    small = get_format("html").format(compare(layer, layer)).encode()
    assert len(small) < 60_000
    big = many_builds(layer, 125)
    large = get_format("html").format(compare(big, big)).encode()
    assert len(large) - len(small) < 200  # the counts' digits


@needs_chromium
def test_the_verdict_and_summary_come_before_the_grids(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    page = open_report(browser, tmp_path / "order.html", get_format("html").format(fewer_waves(layer)))
    assert page.errors() == []
    tops = page.evaluate("['#verdict', '#counts', '#summary', '#grids table.keys', '#rows'].map(s =>"
                         " document.querySelector(s).getBoundingClientRect().top)")
    assert tops == sorted(tops)
    assert tops[2] < 400  # the summary on the first screen, at 1400 × 1000
    assert page.evaluate("[document.getElementById('verdict').textContent, document.getElementById('verdict')"
                         ".className]") == ["Regression: 9 of 40 builds changed (8 worse, 1 better)", "worse"]
    # An unchanged build's detail: its figures whole from the value sent, one line for both sides.
    page.evaluate("document.querySelector('#rows tr.row[data-ref=\"gfx950:attn/tp4/w2/bf16#1\"]').click()")
    vgpr = base_figure(layer, "attn/tp4/w2/bf16#1", "gfx950", "vgpr")
    assert ["VGPRs", str(vgpr), str(vgpr), "0"] in page.evaluate(
        "Array.from(document.querySelectorAll('tr.detail .detail-grid > table tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    sides = page.evaluate("Array.from(document.querySelectorAll('tr.detail .mono')).map(d => d.textContent)"
                          ".filter(t => t.includes(' · object '))")
    built = row(layer, "attn/tp4/w2/bf16#1", "gfx950")
    assert built.object is not None
    assert sides == [f"before and after: ok · {built.num_warps} warps · {built.num_stages} stages · {built.where}"
                     f" · object {built.object.sha256[:16]}"]
    page.screenshot(tmp_path / "order.png")


@needs_chromium
def test_a_report_where_nothing_changed(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    page = open_report(browser, tmp_path / "same.html", get_format("html").format(compare(layer, layer)))
    assert page.errors() == []
    assert page.evaluate("document.getElementById('verdict').textContent") == (
        "Nothing changed: 40 builds of 24 keys on gfx950, sm90, every figure the same")
    assert page.evaluate("[document.querySelectorAll('#grids table').length, document.getElementById('listed').hidden,"
                         " document.getElementById('grid-controls').hidden, document.getElementById('folded').open]"
                         ) == [0, True, True, False]
    assert page.evaluate("document.getElementById('unlisted').textContent") == (
        "not listed: 40 unchanged builds of the 4 kinds × targets where nothing changed")
    # Their count is said, and is no button: it would filter to an empty table.
    assert page.evaluate("Array.from(document.querySelectorAll('#counts .badge')).map(b => [b.tagName, b.textContent,"
                         " b.title])") == [["SPAN", "40unchanged", "not listed: in the kinds folded below"]]
    page.screenshot(tmp_path / "same.png")


@needs_chromium
def test_the_commits_table_fits_the_page(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    """A long subject and a commit's spill totals wrap inside the table, and the table scrolls in its own
    box: the page is no wider than the window (a suite's stack was 2,156 px wide at 1,400)."""
    subject = "mla_decode: " + "one 16-head block per program instead of up to 32 heads, " * 4
    second = edited(layer, {("attn/tp8/w8/e4m3", "gfx950"): {"vgpr_spill": 12, "sgpr_spill": 3, "scratch_bytes": 48},
                            ("proj/tp4/w2", "sm90"): {"spill_store_bytes": 16, "spill_load_bytes": 16,
                                                      "stack_bytes": 16}}, commit="b" * 40, label="HEAD")
    s = stack([replace(layer, commit="a" * 40, label="main"), second], [subject])
    page = open_report(browser, tmp_path / "wide.html", get_format("html").format_stack(s))
    assert page.errors() == []
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] == 1400
    box = page.evaluate("(() => { const t = document.getElementById('steps'), b = t.parentElement,"
                        " subject = t.querySelector('td.subject');"
                        " return [getComputedStyle(b).overflowX,"
                        " t.getBoundingClientRect().right <= b.getBoundingClientRect().right,"
                        " getComputedStyle(subject).whiteSpace, subject.getBoundingClientRect().height > 30]; })()")
    assert box == ["auto", True, "normal", True]  # the subject took several lines
    page.screenshot(tmp_path / "wide.png")


@needs_chromium
def test_stack_page(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    second = edited(layer, {("attn/tp4/w2/bf16", "gfx950"): {"vgpr": 64}}, commit="b" * 40, label="bbbbbbbbbb")
    third = edited(second, {("proj/tp4/w2", "sm90"): {"regs": 10}}, commit="c" * 40, label="HEAD (cccccccccc)")
    s = stack([replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)"), second, third],
              ["more VGPRs", "fewer registers"])
    page = open_report(browser, tmp_path / "stack.html", get_format("html").format_stack(s))
    assert page.errors() == []
    steps = page.evaluate("Array.from(document.querySelectorAll('#steps tbody tr')).map(tr => tr.textContent)")
    assert steps == ["bbbbbbbbbbmore VGPRs24/2410000unchanged0",  # worse, mixed, better, newly failing, fixed
                     "ccccccccccfewer registers24/2400100unchanged0"]
    assert page.evaluate("document.getElementById('pick').options.length") == 3
    page.evaluate("document.querySelectorAll('#steps tbody tr')[1].click()")
    assert page.evaluate("document.getElementById('pick').value") == "2"
    assert visible(page, "tr.dataset.ref")[0] == "sm90:proj/tp4/w2"
    page.screenshot(tmp_path / "stack.png")
    assert page.errors() == []


@needs_chromium
def test_keys_by_axes_and_the_change_column(browser: Chromium, layer: Survey, tmp_path: Path) -> None:
    spilled = row(layer, "attn/tp8/w8/e4m3", "gfx950")
    mixed = row(layer, "attn/tp4/w8/bf16", "gfx950")
    base = replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)")
    head = edited(layer, {
        ("attn/tp8/w8/e4m3", "gfx950"): {"vgpr": 120, "vgpr_spill": 12, "scratch_bytes": 48},
        ("attn/tp4/w8/bf16", "gfx950"): {"vgpr": mixed.resources["vgpr"] - 8,
                                         "occupancy": mixed.resources["occupancy"] - 1},
        ("proj/tp4/w2", "sm90"): {"spill_store_bytes": 16},
    }, commit="b" * 40, label="HEAD (bbbbbbbbbb)")
    head = replace(head, rows=tuple(replace(r, num_warps=8) if (r.row_id, r.target) == ("attn/tp8/w8/e4m3", "gfx950")
                                    else r for r in head.rows))
    page = open_report(browser, tmp_path / "grids.html", get_format("html").format(compare(base, head)))
    assert page.errors() == []
    assert page.evaluate("document.images.length + document.querySelectorAll('[src], link[href^=http]').length") == 0
    assert page.evaluate("document.getElementById('counts').textContent") == "2worse1mixed37unchanged"
    # Some unchanged builds are listed (those of kinds where another changed): each count is a button.
    buttons = page.evaluate("Array.from(document.querySelectorAll('#counts .badge')).map(b => b.tagName)")
    assert buttons == ["BUTTON"] * 3
    # A grid per kind and target where a key moved: attn's tp × width down, cache across; coloured by the
    # spills. The two where nothing moved are named in a fold, closed, with their counts.
    grids = page.evaluate("Array.from(document.querySelectorAll('#grids .kgrid')).map(g => [g.querySelector('h3')"
                          ".textContent, g.querySelector('.axes').textContent])")
    assert grids == [["attn on gfx950", "VGPR spills · rows tp × width · columns cache"],
                     ["proj on sm90", "spill stores (B) · rows tp · columns width"]]
    assert page.evaluate("[document.getElementById('folded').open, document.getElementById('folded-text').textContent,"
                         " Array.from(document.querySelectorAll('#folded li')).map(li => li.textContent)]") == [
        False, "2 kinds × targets where no build changed: 20 builds of 12 keys",
        ["attn on sm90: 8 keys, 16 builds", "proj on gfx950: 4 keys, 4 builds"]]
    attn = ("Array.from(document.querySelectorAll('#grids table.keys[data-kind=attn][data-target=gfx950] tr'))"
            ".map(tr => Array.from(tr.cells).map(td => td.textContent + (td.classList.contains('cell') ? "
            "'|' + td.className.split(' ')[1] : '')))")
    assert page.evaluate(attn) == [["", "bf16", "e4m3"], ["tp4 w2", "0|same", "0|same"],
                                   ["tp4 w8", "0|same", "0|same"], ["tp8 w2", "0|same", "0|same"],
                                   ["tp8 w8", "0|same", "0 → 12|worse"]]
    proj = page.evaluate("document.querySelector('#grids table.keys[data-kind=proj][data-target=sm90] "
                         "td[data-key=\"proj/tp4/w2\"]').className")
    assert proj == "cell worse v-worse"
    # Another figure: the mixed build's occupancy fell, its VGPRs fell.
    page.evaluate("(() => { const s = document.getElementById('grid-figure'); s.value = 'occupancy';"
                  " s.dispatchEvent(new Event('change')); })()")
    waves = mixed.resources["occupancy"]
    cell = page.evaluate("(() => { const td = document.querySelector('#grids table.keys[data-target=gfx950] "
                         "td[data-key=\"attn/tp4/w8/bf16\"]'); return [td.textContent, td.className]; })()")
    assert cell == [f"{waves} → {waves - 1}", "cell worse v-mixed"]  # the key: VGPRs fell too
    # The table's change column: only what moved, and what the build was made with.
    spill_row = visible(page, "[tr.dataset.ref, tr.cells[0].textContent, tr.cells[4].textContent]")
    vgpr = spilled.resources["vgpr"]
    assert spill_row[0] == ["gfx950:attn/tp8/w8/e4m3", "worse",
                            f"Vspill 0 → 12 (+12), scratch 0 → 48 (+48), VGPR {vgpr} → 120 ({120 - vgpr:+d}); "
                            f"built with num_warps 4 → 8; waves/SIMD unchanged at {spilled.resources['occupancy']}"]
    assert [r[1] for r in spill_row[:3]] == ["worse", "worse", "mixed"]
    assert spill_row[2][2] == (f"waves {waves} → {waves - 1} (-1), VGPR {mixed.resources['vgpr']} → "
                               f"{mixed.resources['vgpr'] - 8} (-8)")
    # Clicking a cell shows its key's builds (both launches).
    page.evaluate("document.querySelector('#grids td[data-key=\"attn/tp8/w8/e4m3\"]').click()")
    assert visible(page, "tr.dataset.ref") == ["gfx950:attn/tp8/w8/e4m3", "gfx950:attn/tp8/w8/e4m3#1"]
    assert page.evaluate("document.getElementById('focus-text').textContent") == (
        "showing the builds of: attn/tp8/w8/e4m3 on gfx950")
    assert page.evaluate("document.querySelector('#grids td.active').dataset.key") == "attn/tp8/w8/e4m3"
    page.screenshot(tmp_path / "grids.png")
    # All figures on demand.
    page.evaluate("document.getElementById('all-figures').click()")
    cols = page.evaluate("Array.from(document.querySelectorAll('#rows thead th')).map(th => th.dataset.col)")
    assert cols[:5] == ["mark", "key", "target", "kernel", "change"]
    assert {"f:vgpr", "f:occupancy", "f:regs"} <= set(cols)
    page.evaluate("document.getElementById('focus-clear').click()")
    assert len(visible(page, "1")) == 20
    page.evaluate("window.scrollTo(0, 0)")
    shot = page.screenshot(tmp_path / "grids-all.png")
    assert shot.stat().st_size > 20_000
    assert page.errors() == []
