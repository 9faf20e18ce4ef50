"""``regsurvey history``'s series and reports on a real survey whose figures are edited per commit: a kind is
unchanged only when none of its builds changed, every requested figure keeps its column, and a sampled
history says which commits a change may lie in (issue #30, item 13)."""

from __future__ import annotations

import re
from dataclasses import replace

from regsurvey.diff.history import history
from regsurvey.model.history import History, Point
from regsurvey.model.results import Survey
from regsurvey.output.history import format_html, format_markdown

from ..layer_survey import edited, row

AMD = "gfx950"
SHAS = ("a" * 40, "b" * 40, "c" * 40)


def faster_matmul(layer: Survey) -> History:
    """Three commits: the base, one raising one attn matmul build's occupancy (7 of them at 7 waves, 8 scale
    builds at 8: the kind's largest and smallest stay 8 and 7), then a commit that changes nothing."""
    matmul = row(layer, "attn/tp4/w2/bf16", AMD)
    assert matmul.resources["occupancy"] == 7  # the toy matmul's: 8 would be the scale builds'
    base = replace(layer, commit=SHAS[0])
    faster = edited(layer, {("attn/tp4/w2/bf16", AMD): {"occupancy": 8}}, commit=SHAS[1])
    same = replace(faster, commit=SHAS[2])
    return history("HEAD~2..HEAD", [base, faster, same], ["base", "attn: a faster matmul", "notes"],
                   ("occupancy", "vgpr"))


def series(h: History, kind: str, target: str, name: str) -> tuple[Point, ...]:
    return next(s.points for s in h.series if (s.kind, s.target, s.figure) == (kind, target, name))


def test_a_build_that_moves_inside_the_spread_changes_its_kind(layer: Survey) -> None:
    h = faster_matmul(layer)
    waves = series(h, "attn", AMD, "occupancy")
    # The largest and smallest over the kind's 16 gfx950 builds do not move; one build does, for the better.
    assert [(p.max, p.min, p.built) for p in waves] == [(8, 7, 16)] * 3
    assert [(p.moved, p.worse, p.better) for p in waves] == [(0, 0, 0), (1, 0, 1), (0, 0, 0)]
    assert next(s for s in h.series if (s.kind, s.target, s.figure) == ("attn", AMD, "occupancy")).changed
    assert not next(s for s in h.series if (s.kind, s.target, s.figure) == ("proj", AMD, "occupancy")).changed
    markdown = format_markdown(h)
    # Not "unchanged", and the commit that raised it is the table's row that says so.
    assert "Unchanged along the range: proj on gfx950.\n" in markdown
    assert "#### attn on gfx950" in markdown
    assert f"| `{SHAS[1][:10]}` | attn: a faster matmul | 8 (7-8); 1 build better | 38 (3-38) |" in markdown
    # The page draws attn on gfx950 under what moved, its occupancy point at that commit coloured better.
    page = format_html(h)
    moved, _, still = page.partition("Unchanged along the range")
    assert "data-kind='attn' data-target='gfx950'" in moved and "data-kind='attn' data-target='gfx950'" not in still
    assert re.findall(r"<a href='#c-(\w+)'><circle class=(\w+)", page) == [(SHAS[1], "better")]
    assert "1 build better" in page


def test_every_requested_figure_keeps_its_column(layer: Survey) -> None:
    """``--figure occupancy,vgpr``: the table of a kind that changed has both columns, the one that did not
    move too (it used to be dropped, as if it had not been asked for)."""
    markdown = format_markdown(faster_matmul(layer))
    table = markdown.split("#### attn on gfx950\n\n")[1]
    assert table.startswith("| commit | subject | waves | VGPR |\n|---|---|---:|---:|\n")


def test_the_heading_quotes_the_range_as_code(layer: Survey) -> None:
    """A code span shows what it holds: no backslash escapes inside (``HEAD\\~2`` before)."""
    assert format_markdown(faster_matmul(layer)).startswith("### Registers over `HEAD~2..HEAD`\n")


def test_a_sampled_history_says_which_commits_a_change_may_lie_in(layer: Survey) -> None:
    """Under ``--every 3`` a point's diff covers the commits after the point before, up to it: a change is
    placed between the two, not pinned on the sampled commit."""
    h = faster_matmul(layer)
    sampled = history(h.spec, [replace(layer, commit=SHAS[0]),
                               edited(layer, {("attn/tp4/w2/bf16", AMD): {"occupancy": 8}}, commit=SHAS[1]),
                               edited(layer, {("attn/tp4/w2/bf16", AMD): {"occupancy": 8}}, commit=SHAS[2])],
                      ["base", "attn: a faster matmul", "notes"], ("occupancy",), every=3, spans=[0, 3, 3])
    assert [c.span for c in sampled.commits] == [0, 3, 3]
    markdown = format_markdown(sampled)
    between = f"between `{SHAS[0][:10]}` and `{SHAS[1][:10]}` (3 commits)"
    assert f"| {between} | attn: a faster matmul | 8 (7-8); 1 build better |" in markdown
    assert f"- {between} attn: a faster matmul: 1 better\n" in markdown
    assert f"- between `{SHAS[1][:10]}` and `{SHAS[2][:10]}` (3 commits) notes: every build unchanged" in markdown
    page = format_html(sampled)
    assert f"between {SHAS[0][:10]} and {SHAS[1][:10]} (3 commits)" in page
    # One commit in one: the commit itself, as before.
    assert f"- `{SHAS[1][:10]}` attn: a faster matmul: 1 better\n" in format_markdown(h)


def test_the_page_leads_with_its_verdict_and_the_commits_that_changed_builds(layer: Survey) -> None:
    """The verdict, then the commits that changed builds (each linking to its row), before any chart; a
    kind on a target that did not move is a line of its values, folded, not charts of flat lines."""
    page = format_html(faster_matmul(layer))
    assert page.index("<div id=verdict class='verdict better'>1 of 2 commits changed builds</div>") \
        < page.index(f"<ul class=summary><li><a href='#c-{SHAS[1]}'><span class=mono>{SHAS[1][:10]}</span> attn: a "
                     "faster matmul</a>: <span class='better'>1 better</span></li></ul>") < page.index("<svg")
    still = page.split("<details class=still>")[1].split("</details>")[0]
    vgpr = [r.resources["vgpr"] for r in layer.rows if (r.kind, r.target) == ("proj", AMD)]
    waves = [r.resources["occupancy"] for r in layer.rows if (r.kind, r.target) == ("proj", AMD)]
    assert "<svg" not in still
    assert ("<tr><td class=mono>proj on gfx950</td><td>occupancy " + (
        f"{max(waves)}" if min(waves) == max(waves) else f"{max(waves)} ({min(waves)}-{max(waves)})")
        + f" waves/SIMD · VGPRs {max(vgpr)}" + ("" if min(vgpr) == max(vgpr) else f" ({min(vgpr)}-{max(vgpr)})")
        + "</td></tr>") in still


def test_a_history_where_nothing_changed_is_small(layer: Survey) -> None:
    """Its page: the style (2 KB), the verdict, a line per kind on a target and a row per commit: under 5 KB
    for the layer's 4 kinds × targets over 3 commits (3.0 KB), which drew 8 charts of flat lines (10.7 KB).
    (The demo suite's 24 kinds × targets over 6 commits, `regsurvey history HEAD~6..HEAD~1`: 85 KB, now
    5.5 KB.)"""
    h = history("HEAD~2..HEAD", [replace(layer, commit=sha) for sha in SHAS], ["base", "notes", "more notes"])
    page = format_html(h)
    assert "Nothing changed: every build the same at each of the 3 commits" in page
    assert "<svg" not in page and "<ul class=summary>" not in page
    assert len(page.encode()) < 5_000
