"""A history across toolchains (``regsurvey history --toolchains``, issue 35 item 5): one revision's survey
under three toolchains, each point a toolchain named by its Triton, each step judged across the toolchains
(a plain history of the same surveys says "not comparable"), with what differs in the toolchain and the
first differing compiler stage; the page, the Markdown, the JSON and the CSV say which release moved a
figure. The layer's real survey stands in for each toolchain's, its toolchain block naming that Triton and
its figures edited (the real surveys under 3.6 and 3.9: tests/commands/test_history_toolchains.py)."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from html import escape
from typing import Any

import pytest

from regsurvey.diff.core import compare
from regsurvey.diff.history import history, toolchain_history
from regsurvey.model.comparison import Mark
from regsurvey.model.history import WORKING_TREE, History, Point
from regsurvey.model.results import Survey
from regsurvey.model.stages import Stage
from regsurvey.output.formats import render
from regsurvey.output.history import format_html, format_markdown
from regsurvey.revisions.range import toolchain_names

from ..layer_survey import edited, row

AMD = "gfx950"
SHA = "d" * 40
MATMUL = ("attn/tp4/w2/bf16", AMD)  # its first launch: the matmul
TOOLCHAINS = [("triton 3.6.0", "/venvs/t36/bin/python"), ("triton 3.8.0", "/venvs/t38/bin/python"),
              ("triton 3.9.0", None)]


def under(layer: Survey, version: str, edits: dict[tuple[str, str], dict[str, Any]] | None = None) -> Survey:
    """The layer's survey as if made with Triton ``version`` (its toolchain block says so), ``edits`` applied."""
    toolchain = {backend: {**block, "triton": version} for backend, block in layer.toolchain.items()}
    return edited(layer, edits or {}, commit=SHA, toolchain=toolchain)


@pytest.fixture
def surveys(layer: Survey) -> list[Survey]:
    """Triton 3.6.0, then 3.8.0 spilling 12 VGPRs in one attn matmul build, then 3.9.0 the same as 3.8.0."""
    assert row(layer, *MATMUL).resources["vgpr_spill"] == 0
    spills = {MATMUL: {"vgpr_spill": 12}}
    return [under(layer, "3.6.0"), under(layer, "3.8.0", spills), under(layer, "3.9.0", spills)]


def points(h: History, kind: str, target: str, name: str) -> tuple[Point, ...]:
    return next(s.points for s in h.series if (s.kind, s.target, s.figure) == (kind, target, name))


def test_each_point_is_a_toolchain_and_each_step_is_judged_across_them(surveys: list[Survey]) -> None:
    h = toolchain_history("HEAD", surveys, TOOLCHAINS, ("vgpr_spill", "vgpr"))
    assert h.across_toolchains and h.spec == "HEAD" and h.noun == "toolchain"
    assert [(c.toolchain, c.python, c.subject, c.sha) for c in h.commits] == [
        ("triton 3.6.0", "/venvs/t36/bin/python", "/venvs/t36/bin/python", SHA),
        ("triton 3.8.0", "/venvs/t38/bin/python", "/venvs/t38/bin/python", SHA),
        ("triton 3.9.0", None, "this environment", SHA)]
    builds = len(surveys[0].rows)
    assert [c.counts for c in h.commits] == [None, {"worse": 1, "unchanged": builds - 1}, {"unchanged": builds}]
    assert h.commits[1].toolchain_sentences() == ("cuda triton: 3.6.0 → 3.8.0", "hip triton: 3.6.0 → 3.8.0")
    assert h.commits[1].sentences()[0] == "adds VGPR spills to attn (matmul) tp4 w2 bf16 on gfx950 (0 → 12)"
    spills = points(h, "attn", AMD, "vgpr_spill")
    assert [(p.max, p.min, p.moved, p.worse) for p in spills] == [(0, 0, 0, 0), (12, 0, 1, 1), (12, 0, 0, 0)]
    # A history over commits of the same surveys judges nothing: the toolchains differ.
    plain = history("A..B", surveys, ["a", "b", "c"], ("vgpr_spill",))
    assert plain.commits[1].counts == {Mark.NOT_COMPARABLE.value: builds}


def test_the_markdown_says_which_release_moved_a_figure(surveys: list[Survey]) -> None:
    markdown = format_markdown(toolchain_history("HEAD", surveys, TOOLCHAINS, ("vgpr_spill", "vgpr")))
    assert markdown.startswith("### Registers of `HEAD` over 3 toolchains\n\n`HEAD` (`dddddddddd`) under each "
                               "toolchain in turn (triton 3.6.0, triton 3.8.0, triton 3.9.0), each judged against "
                               "the one before it across the toolchains;")
    table = markdown.split("#### attn on gfx950\n\n")[1].split("\n\n")[0].splitlines()
    assert table[0] == "| toolchain | environment | Vspill | VGPR |"
    assert table[2].startswith("| triton 3.6.0 | /venvs/t36/bin/python | 0 |")
    assert table[3].startswith("| triton 3.8.0 | /venvs/t38/bin/python | 12 (0-12); 1 build worse |")
    assert table[4].startswith("| triton 3.9.0 | this environment | 12 (0-12) |")
    assert "Unchanged across the toolchains: proj on gfx950.\n" in markdown
    steps = markdown.split("#### Toolchain by toolchain\n\n")[1]
    assert steps.startswith("- triton 3.6.0 → triton 3.8.0: 1 worse\n  - toolchain differs: cuda triton: 3.6.0 → "
                            "3.8.0\n  - toolchain differs: hip triton: 3.6.0 → 3.8.0\n  - adds VGPR spills to attn")
    assert "- triton 3.8.0 → triton 3.9.0: every build unchanged\n" in steps


def test_the_page_names_each_toolchain_and_the_release_that_moved_a_chart(surveys: list[Survey]) -> None:
    page = format_html(toolchain_history(WORKING_TREE, surveys, TOOLCHAINS, ("vgpr_spill", "vgpr")))
    assert "<title>Registers of working tree over 3 toolchains</title>" in page
    assert "<div id=verdict class='verdict worse'>1 of 2 toolchains changed builds</div>" in page
    assert ("<li><a href='#t-1'><span class=mono>triton 3.8.0</span> (/venvs/t38/bin/python)</a>: <span "
            "class='worse'>1 worse</span></li>") in page
    # The spills' chart: its point at 3.8.0 red, linking to that step's row; each point's Triton under the axis.
    assert re.findall(r"<a href='#t-(\d+)'><circle class=(\w+)", page) == [("1", "worse")]
    assert "<div class='muted moved-at'>moved at triton 3.8.0 (1 build worse)</div>" in page
    assert [re.findall(r"text-anchor=middle>([\d.]+)</text>", svg) for svg in page.split("<svg")[1:]][0] == [
        "3.6.0", "3.8.0", "3.9.0"]
    step = page.split("<tr id='t-1'>")[1].split("</tr>")[0]
    assert "<li>toolchain differs: hip triton: 3.6.0 → 3.8.0</li>" in step
    assert "regsurvey upgrade --from /venvs/t36/bin/python --to /venvs/t38/bin/python</div>" in step  # the tree
    assert "<tr id='t-2' class=quiet>" in page and "Unchanged across the toolchains (1)" in page
    # A revision given is in the command; this environment's toolchain is 'current' there.
    shuffled = toolchain_history("v1.0", [surveys[0], surveys[2], surveys[1]], [TOOLCHAINS[i] for i in (0, 2, 1)])
    assert "regsurvey upgrade --from /venvs/t36/bin/python --to current v1.0</div>" in format_html(shuffled)


def test_each_steps_first_differing_stages_are_kept_apart_from_its_summary(surveys: list[Survey]) -> None:
    """The stage sentences (diff.stage_summary) of each step's comparison, as first_stage.first_differences
    leaves them: a list of their own, which no report cuts with the summary's first lines."""
    steps = [compare(before, after, across_toolchains=True) for before, after in zip(surveys, surveys[1:])]
    staged = [replace(steps[0], rows=tuple(
        replace(r, first_difference=Stage.AMDGCN if (r.row_id, r.target) == MATMUL else Stage.IDENTICAL)
        for r in steps[0].rows)), steps[1]]
    h = toolchain_history("HEAD", surveys, TOOLCHAINS, ("vgpr_spill",), staged)
    assert h.commits[1].stages == ("1 build: LLVM's backend changed (identical LLIR, different AMDGCN: VGPR spills "
                                   "+12)",)
    assert not any("LLVM's backend" in line for line in h.commits[1].sentences())
    assert h.commits[2].stages == ()
    assert f"  - {h.commits[1].stages[0]}\n" in format_markdown(h)
    assert f"<li>{escape(h.commits[1].stages[0])}</li>" in format_html(h)
    assert h.to_dict()["commits"][1]["stages"] == list(h.commits[1].stages)


def test_the_json_and_the_csv_name_each_toolchain(surveys: list[Survey]) -> None:
    h = toolchain_history("HEAD", surveys, TOOLCHAINS, ("vgpr_spill", "vgpr"))
    data = json.loads(render(h, "json"))
    assert (data["spec"], data["across_toolchains"]) == ("HEAD", True)
    assert [(c["toolchain"], c["python"]) for c in data["commits"]] == TOOLCHAINS
    assert data["commits"][1]["toolchain_changes"] == ["cuda triton: 3.6.0 -> 3.8.0", "hip triton: 3.6.0 -> 3.8.0"]
    rows = list(csv.DictReader(io.StringIO(render(h, "csv"))))
    assert list(rows[0])[:5] == ["toolchain", "python", "commit", "kind", "target"]
    spills = [(r["toolchain"], r["python"], r["vgpr_spill_max"]) for r in rows
              if (r["kind"], r["target"]) == ("attn", AMD)]
    assert spills == [("triton 3.6.0", "/venvs/t36/bin/python", "0"), ("triton 3.8.0", "/venvs/t38/bin/python", "12"),
                      ("triton 3.9.0", "", "12")]
    # A history over commits keeps its JSON and its columns.
    plain = history("A..B", surveys, ["a", "b", "c"], ("vgpr",))
    assert plain.to_dict()["across_toolchains"] is False and "toolchain" not in plain.to_dict()["commits"][0]
    assert render(plain, "csv").startswith("commit,subject,span,kind,target,vgpr_max,vgpr_min\n")


def test_two_environments_of_one_triton_are_told_apart_by_where_each_is(surveys: list[Survey]) -> None:
    first, _, last = surveys
    assert toolchain_names([first, first, last], ["/a/bin/python", "/b/bin/python", None]) == [
        "triton 3.6.0 at /a/bin/python", "triton 3.6.0 at /b/bin/python", "triton 3.9.0"]
    assert toolchain_names([first, last], ["/a/bin/python", None]) == ["triton 3.6.0", "triton 3.9.0"]
