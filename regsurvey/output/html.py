"""The comparison as one self-contained HTML page (inline CSS and JS, no network).

The page holds the data as JSON and a small script renders the table from it, a page of rows at a
time, so thousands of builds stay fast; it sorts by any column and filters by mark, kind, target and
every axis. Each figure's verdict, change and text, the lint findings' sentences and tones, the
headings and the notices come computed here: the script shows, sorts and filters them and derives none.
Text from kernels and compilers never becomes markup: the JSON is
escaped for a ``<script>`` element (``<``, ``>`` and ``&`` as ``\\u`` escapes) and the script only ever
sets ``textContent``. The template is ``regsurvey/templates/report.html.j2``.

The page leads with the verdict and the summary. A kind on a target where no build changed is named with
its counts, not drawn: neither its grid nor its builds are in the page (the demo suite's diff drew 24 grids of
unchanged kinds before its summary, and its diff where nothing changed was 677 KB of unchanged builds).
"""

from __future__ import annotations

import json
from typing import Any

import jinja2

from ..diff.stage_summary import stage_meaning
from ..diff.summary import summarize
from ..model.comparison import (
    MARK_ORDER,
    REGRESSIONS,
    Comparison,
    FigureDelta,
    LintChange,
    Mark,
    RowComparison,
    Stack,
    SurveyInfo,
)
from ..model.figures import AMD, BY_IMPORTANCE, FIGURE_ORDER, NVIDIA, figure
from ..model.findings import Finding
from ..model.rebuild import RebuildCheck
from ..model.results import Row
from ..model.stages import Stage
from ..model.targets import TARGETS
from ..source_names import site_name
from .compile_text import build_compile_text, compile_time_text, compile_times_heading
from .figure_text import (
    build_text,
    change_text,
    changed_names,
    figure_total_delta,
    finding_text,
    lint_change_text,
    lint_counts_text,
    note_text,
    rebuild_difference,
    rebuild_verdict,
    row_change_text,
    spill_totals_text,
    stage_text,
    total_line,
)
from .no_effect_text import knob_notice
from .where_text import line_where_sentences, where_sentences

PAGE_ROWS = 100


def _side(row: Row) -> dict[str, Any]:
    """What the detail panel says of one side of a build: its status, warps, stages, launch site and object
    (the 16 hex digits it shows), and why it failed; what it lacks is left out."""
    # (a survey made before launch sites were named as every report names a source file: named here)
    side: dict[str, Any] = {"status": row.status, "num_warps": row.num_warps, "num_stages": row.num_stages,
                            "where": site_name(row.where) if row.where else row.where,
                            "object": row.object.sha256[:16] if row.object else None}
    if row.error:
        side.update(error=row.error, error_line=row.error_line)
    if row.messages:
        side["messages"] = list(row.messages)
    return side


def _sides(r: RowComparison) -> list[list[Any]]:
    """The detail panel's sides, each ``[label, side]`` (side None: not in that survey); one side labelled
    ``before and after`` where both say the same (an unchanged build's do)."""
    before = None if r.before is None else _side(r.before)
    after = None if r.after is None else _side(r.after)
    if before is not None and before == after:
        return [["before and after", before]]
    return [["before", before], ["after", after]]


def _finding(f: Finding, state: str) -> dict[str, Any]:
    """One finding of the detail panel: its sentence, the reason under it, and its tone. ``state``:
    ``new``, ``fixed`` or ``""``."""
    load = f" · {f'line {f.line}: ' if f.line is not None else ''}{f.load}" if f.load else ""
    return {"text": f"{state + ' ' if state else ''}{f.severity}: {finding_text(f)} of {f.kernel} loaded and "
                    f"never read{load}",
            "reason": f.reason,
            "tone": "better" if state == "fixed" else "worse" if f.is_error else ""}


def _lint_heading(change: LintChange) -> str:
    head = "not linted on the head" if change.after is None else str(len(change.after)) if change.after else "none"
    return f"lint findings: {head}" + (" (base not linted)" if change.before is None else "")


def _lint(r: RowComparison) -> dict[str, Any] | None:
    """The detail panel's findings (the head's, new ones flagged, then the fixed ones) and the table's
    lint cell; None when neither side was linted."""
    change: LintChange = r.lint_findings
    if not change.linted:
        return None
    new = {f.identity for f in change.new}
    lint = {"before": None if change.before is None else len(change.before),
            "after": None if change.after is None else len(change.after),
            "heading": _lint_heading(change),
            "findings": [_finding(f, "new" if f.identity in new else "") for f in change.after or ()]
                        + [_finding(f, "fixed") for f in change.fixed],
            "change": lint_change_text(r),
            "score": len(change.new_errors) - len(change.fixed_errors),
            "tone": "worse" if change.new_errors else "better" if change.fixed_errors else ""}
    # A clean build says only its heading: no findings, no change, nothing to sort or colour by.
    return {k: v for k, v in lint.items() if v or k in ("before", "after", "heading")}


def _unchanged_figure(value: int) -> dict[str, Any]:
    """What a figure that kept ``value`` is on the page; the page's script makes the same of a bare number
    (``expandFigure``), the one form it is sent in."""
    return {"before": value, "after": value, "delta": 0, "delta_text": "0", "verdict": "same", "text": str(value)}


def _figure(f: FigureDelta) -> dict[str, Any] | int:
    """One figure of a row as the page shows it: the sides, the change (a number to sort by, and its
    text), the verdict (``worse``, ``better``, ``same``, ``changed`` or ``n/a``) and the cell's text. A
    figure that did not move is sent as its value (most figures of most builds: 70 bytes each)."""
    delta = f.delta
    shown = {"before": f.before, "after": f.after, "delta": delta,
             "delta_text": "" if delta is None else f"{delta:+d}" if delta else "0",
             "verdict": f.verdict, "text": change_text(f, "→")}
    if f.after is not None and shown == _unchanged_figure(f.after):
        return f.after
    return shown


# The tone of a row's change cell, by its mark.
_MARK_TONE = {Mark.WORSE: "worse", Mark.NEWLY_FAILING: "worse", Mark.BETTER: "better", Mark.FIXED: "better",
              Mark.MIXED: "mixed", Mark.CHANGED: "changed"}


def _row(r: RowComparison) -> dict[str, Any]:
    """One build of the table and its detail panel; what a build lacks (a note, lint, the lines holding the
    most registers, annotated sources) is left out."""
    row: dict[str, Any] = {
        "ref": r.ref, "id": r.row_id, "key": r.key, "kind": r.kind, "target": r.target, "kernel": r.kernel or "",
        "mark": r.mark.value, "axes": r.segments, "kernel_text": r.name.text,
        "change": row_change_text(r), "change_tone": _MARK_TONE.get(r.mark, ""),
        "f": {f.name: _figure(f) for f in r.figures}, "sides": _sides(r)}
    optional = {"build": build_text(r), "note": note_text(r, "→"), "lint": _lint(r),
                "compile": build_compile_text(r, "→"),
                "where": list(where_sentences(r.where)), "stage": stage_text(r),
                "stage_text": "" if r.first_difference is None else stage_meaning(r.first_difference, [r.target])}
    if r.hot_before or r.hot_after:
        optional["hot"] = {"before": [h.to_dict() for h in r.hot_before],
                           "after": [h.to_dict() for h in r.hot_after]}
    if r.source_before or r.source_after:
        optional["source"] = {"before": [f.to_dict() for f in r.source_before],
                              "after": [f.to_dict() for f in r.source_after]}
    return row | {k: v for k, v in optional.items() if v}


# The figure a grid where nothing moved is coloured by unless another is picked: the vendor's spills.
DEFAULT_GRID_FIGURE = {AMD: "vgpr_spill", NVIDIA: "spill_store_bytes"}
_TONE_ORDER = ("worse", "mixed", "better", "changed", "same")


def _cell(builds: list[RowComparison], name: str) -> dict[str, Any] | None:
    """One key's cell for figure ``name``: its builds' tone (``mixed`` where some got worse and others
    better), and the text of the build that moved most (``0 → 12``; unchanged: its value)."""
    deltas = [(r, f) for r in builds if (f := r.figure(name)) is not None]
    if not deltas:
        return None
    verdicts = {f.verdict for _, f in deltas}
    tone = "mixed" if {"worse", "better"} <= verdicts else next((t for t in _TONE_ORDER if t in verdicts), "")
    shown = max(deltas, key=lambda rf: abs(rf[1].delta or 0))[1]
    text = change_text(shown, "→") if shown.before is None or shown.after is None or not shown.changed else \
        f"{shown.before} → {shown.after}"
    return {"text": text, "tone": tone}


def _key_verdict(builds: list[RowComparison]) -> tuple[str, str]:
    """A key's verdict over its builds, whatever figure its cell shows: ``worse`` (a build got worse or
    fails now), ``better``, ``mixed`` (both, or a build mixed), ``changed`` or ``""``; and the words a cell's
    tooltip says of it (``2 builds: 1 worse, 1 mixed``; one build: its mark)."""
    tones = [_MARK_TONE.get(r.mark, "") for r in builds]
    moved = {t for t in tones if t}
    verdict = ("mixed" if "mixed" in moved or {"worse", "better"} <= moved
               else next((t for t in ("worse", "better", "changed") if t in moved), ""))
    counts = {m.value: n for m in MARK_ORDER if (n := sum(1 for r in builds if r.mark is m))}
    if len(builds) == 1:
        return verdict, builds[0].mark.value
    return verdict, f"{len(builds)} builds: " + ", ".join(f"{n} {mark}" for mark, n in counts.items())


def _default_figure(cells: dict[tuple[str, str], dict[str, Any]], builds: list[RowComparison], vendor: str) -> str:
    """What a grid is coloured by unless another is picked: the figure that made most of its builds worse
    (the more important one on a tie: spills, then occupancy, then registers ...); where none got worse, its
    most important figure that moved; where nothing moved, the vendor's spills. A grid coloured by the most
    important figure that moved hid six of ten worse builds (occupancy 6 → 1) behind one SGPR spill."""
    worse: dict[str, int] = {}
    for r in builds:
        for f in r.figures:
            if f.verdict == "worse":
                worse[f.name] = worse.get(f.name, 0) + 1
    if worse:
        most = max(worse.values())
        return next(f.name for f in BY_IMPORTANCE if worse.get(f.name) == most)
    moved = {n for cell in cells.values() for n, c in cell["f"].items() if c["tone"] not in ("same", "")}
    return next((f.name for f in BY_IMPORTANCE if f.name in moved), DEFAULT_GRID_FIGURE.get(vendor, ""))


def grids(comparison: Comparison) -> list[dict[str, Any]]:
    """Per kind and target, its keys laid out by its axes: the first half of the axes down, the rest
    across (``cells``: a list per label of ``rows``, a cell or None per label of ``cols``). Each cell
    holds per figure the change's tone and ``before → after`` (see :func:`_cell`), its key's verdict over
    every figure (``verdict``, marked on the cell whatever figure colours it, and ``title``), the builds it
    holds, and the words the table's notice shows when it is clicked. ``moved``: whether any of its builds
    changed (the page draws only those); ``keys`` and ``builds``: how many it holds."""
    by_grid: dict[tuple[str, str], dict[str, list[RowComparison]]] = {}
    for r in comparison.rows:
        by_grid.setdefault((r.kind, r.target), {}).setdefault(r.key, []).append(r)
    out = []
    for (kind, target), keys in by_grid.items():
        first = next(iter(keys.values()))[0]
        axes = list(first.segments)
        down, across = axes[:(len(axes) + 1) // 2], axes[(len(axes) + 1) // 2:]
        row_labels: dict[str, None] = {}
        col_labels: dict[str, None] = {}
        cells: dict[tuple[str, str], dict[str, Any]] = {}
        names: dict[str, None] = {}
        for key, builds in keys.items():
            segments = builds[0].segments
            row_label = " ".join(segments.get(a, "") for a in down) or kind
            col_label = " ".join(segments.get(a, "") for a in across) or "-"
            row_labels[row_label] = None
            col_labels[col_label] = None
            for b in builds:
                names.update(dict.fromkeys(f.name for f in b.figures))
            figures = {n: c for n in names if (c := _cell(builds, n)) is not None}
            verdict, title = _key_verdict(builds)
            cells[(row_label, col_label)] = {
                "key": key, "rows": [b.ref for b in builds], "focus": f"{key} on {target}", "f": figures,
                "verdict": verdict, "title": f"{key}: {title}"}
        known = TARGETS.get(target)
        vendor = (AMD if known.is_amd else NVIDIA) if known is not None else None
        default = _default_figure(cells, [b for builds in keys.values() for b in builds], vendor or "")
        ordered: list[str] = sorted(names, key=lambda n: FIGURE_ORDER.get(n, len(FIGURE_ORDER)))
        out.append({"kind": kind, "target": target, "title": f"{kind} on {target}",
                    "moved": any(b.mark is not Mark.UNCHANGED for builds in keys.values() for b in builds),
                    "keys": len(keys), "builds": sum(len(builds) for builds in keys.values()),
                    "axes": " · ".join(t for t in (f"rows {' × '.join(down)}" if down else "",
                                                    f"columns {' × '.join(across)}" if across else "") if t)
                            or "one key",
                    "rows": list(row_labels), "cols": list(col_labels),
                    "cells": [[cells.get((r, c)) for c in col_labels] for r in row_labels],
                    "default": default if default in names else next(iter(ordered), ""), "figures": ordered})
    return out


def _side_text(word: str, side: SurveyInfo) -> str:
    return f"{word} {side.short}" + (f" · {side.commit[:12]}" if side.commit else "")


def _rebuild(check: RebuildCheck | None) -> dict[str, Any] | None:
    """The rebuild check's notice: its verdict, then a line per build that differed."""
    if check is None:
        return None
    return {"text": f"rebuild check of {check.label}: {rebuild_verdict(check)} from a cold Triton cache",
            "differences": [rebuild_difference(d) for d in check.differences]}


# Builds the compile-time notice names; the builds table's rows say the rest.
_COMPILE_LINES = 20


def _compile_times(comparison: Comparison) -> dict[str, Any] | None:
    """The notice of the builds whose compile time moved notably: a heading, then a line each (``worse``
    toned where it is a pathological slowdown), the most slowed first; None where none moved."""
    moved = comparison.compile_time_changes
    if not moved:
        return None
    lines = [{"text": f"{r.key} {r.target} {r.name.text or '-'}: {compile_time_text(r.compile_time, '→')}",
              "tone": "worse" if r.compile_time.slowdown() else ""}
             for r in moved[:_COMPILE_LINES] if r.compile_time is not None]
    if len(moved) > _COMPILE_LINES:
        lines.append({"text": f"{len(moved) - _COMPILE_LINES} more", "tone": ""})
    return {"heading": compile_times_heading(comparison), "lines": lines}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict(comparison: Comparison) -> dict[str, str]:
    """The page's first line: the comparison's outcome in a word, and how many builds changed; ``tone``
    colours it (``worse`` for any regression, ``better``, ``changed`` or ``""`` when nothing changed)."""
    builds = len(comparison.rows)
    moved = {m: n for m, n in comparison.counts.items() if n and m is not Mark.UNCHANGED}
    if not moved:
        return {"text": f"Nothing changed: {_plural(builds, 'build')} of {_plural(comparison.keys, 'key')} on "
                        f"{', '.join(comparison.targets) or 'no target'}, every figure the same", "tone": ""}
    if REGRESSIONS & moved.keys():
        word, tone = "Regression", "worse"
    elif {Mark.BETTER, Mark.FIXED} & moved.keys():
        word, tone = "Improvement", "better"
    elif set(moved) == {Mark.NOT_COMPARABLE}:
        word, tone = "Not comparable", "changed"
    else:
        word, tone = "Changed", "changed"
    return {"text": f"{word}: {sum(moved.values())} of {_plural(builds, 'build')} changed ("
                    + ", ".join(f"{n} {m.value}" for m, n in moved.items()) + ")", "tone": tone}


def _folded(unmoved: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The kinds on targets where no build changed, named with their counts instead of drawn: the heading
    of their fold, a line each, and what the builds table says of their builds it leaves out."""
    if not unmoved:
        return None
    keys, builds = sum(g["keys"] for g in unmoved), sum(g["builds"] for g in unmoved)
    pairs = "1 kind × target" if len(unmoved) == 1 else f"{len(unmoved)} kinds × targets"
    return {"text": f"{pairs} where no build changed: {_plural(builds, 'build')} of {_plural(keys, 'key')}",
            "kinds": [f"{g['title']}: {_plural(g['keys'], 'key')}, {_plural(g['builds'], 'build')}"
                      for g in unmoved],
            "unlisted": f"not listed: {_plural(builds, 'unchanged build')} of the {pairs} where nothing changed"}


def comparison_data(comparison: Comparison, name: str) -> dict[str, Any]:
    """What the page's script needs of one comparison (plain JSON data). The builds and grids of kinds on
    targets where no build changed are left out (``folded`` names them)."""
    every = grids(comparison)
    shown = {(g["kind"], g["target"]) for g in every if g["moved"]}
    rows = [r for r in comparison.rows if (r.kind, r.target) in shown]
    listed = {r.ref for r in rows}
    axes: dict[str, None] = {}
    for r in rows:
        axes.update(dict.fromkeys(r.segments))
    present: dict[str, None] = {}
    for r in rows:
        present.update(dict.fromkeys(f.name for f in r.figures))
    order = FIGURE_ORDER
    return {
        "name": name,
        "base": {"label": comparison.base.label, "short": comparison.base.short, "commit": comparison.base.commit,
                 "targets": comparison.base.targets, "toolchain": comparison.base.toolchain},
        "head": {"label": comparison.head.label, "short": comparison.head.short, "commit": comparison.head.commit,
                 "targets": comparison.head.targets, "toolchain": comparison.head.toolchain},
        "heading": f"{_side_text('base', comparison.base)}  →  {_side_text('head', comparison.head)}"
                   f"  ·  targets {', '.join(comparison.targets)}",
        "verdict": verdict(comparison),
        "counts": {m.value: n for m, n in comparison.counts.items()},
        "total": total_line(comparison),
        "spills": spill_totals_text(comparison),
        "toolchain_changes": [c.describe("→") for c in comparison.toolchain_changes],
        # A line's builds that the page lists (the unchanged line names every unchanged build).
        "summary": [{"text": line.render("→"), "tone": line.tone, "rows": [ref for ref in line.rows if ref in listed],
                     "where": list(line_where_sentences(line))} for line in summarize(comparison).lines],
        "axes": list(axes),
        "figures": sorted(present, key=lambda n: order.get(n, len(order))),
        "changed": changed_names(comparison.rows),
        "lint_changed": any(r.lint_findings.changed for r in comparison.rows),
        # The first compiler stage that differs: a column where the store told it for any build listed.
        "stages": any(r.first_difference is not None for r in rows),
        "rows": [_row(r) for r in rows],
        "grids": [g for g in every if g["moved"]],
        "folded": _folded([g for g in every if not g["moved"]]),
        "rebuild": _rebuild(comparison.rebuild),
        "compile_times": _compile_times(comparison),
        "knobs": knob_notice(comparison),
    }


def _compact_sources(comparisons: list[dict[str, Any]]) -> list[list[str]]:
    """The annotated sources as the page keeps them, which the page's script puts back:

    - each text once: a file at one revision is the same text in every build that names it (and in every
      comparison of a stack); each file's ``text`` becomes its index in the returned list. On a real
      library this is most of the page: conch's 144 builds embedded 1.26 MB of source text, 111 KB of it
      distinct;
    - each file's per-line figures (``live``, ``stores``, ``reloads``, the loop ``depth``) as ``lines``, one
      ``[offset, live, stores, reloads, depth]`` for each line that has any: most lines made no instruction
      (conch: 17% did, 1% spilled), so the three full arrays were 180 KB of its 795 KB.

    The dicts are rewritten in place (the caller builds them for this page alone)."""
    pool: list[list[str]] = []
    index: dict[tuple[str, ...], int] = {}
    for c in comparisons:
        for row in c["rows"]:
            for files in row.get("source", {}).values():
                for f in files:
                    lines = tuple(f["text"])
                    if lines not in index:
                        index[lines] = len(pool)
                        pool.append(list(lines))
                    f["text"] = index[lines]
                    live, stores, reloads = f.pop("live"), f.pop("stores"), f.pop("reloads")
                    depth = f.pop("depth", None) or [0] * len(live)
                    f["lines"] = [[i, v, s, r, d] for i, (v, s, r, d) in enumerate(zip(live, stores, reloads, depth))
                                  if v is not None or s or r]
    return pool


def _pool_rows(comparisons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The builds of every comparison, each distinct one once; a comparison's ``rows`` become indices into
    the returned list, which the page's script puts back. A stack's whole range and the commit that made
    its changes hold the same builds: the demo's stack sent its 96 changed builds twice (190 KB each).
    The dicts are rewritten in place (the caller builds them for this page alone)."""
    pool: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for c in comparisons:
        refs = []
        for row in c["rows"]:
            text = json.dumps(row, sort_keys=True)
            if text not in index:
                index[text] = len(pool)
                pool.append(row)
            refs.append(index[text])
        c["rows"] = refs
    return pool


def _page_data(title: str, comparisons: list[dict[str, Any]], steps: list[dict[str, Any]] | None,
               note: str | None) -> dict[str, Any]:
    # Every figure the rows have, a newer survey's unknown ones too (neutral: figures.figure).
    names = dict.fromkeys([*(f.name for f in BY_IMPORTANCE), *(n for c in comparisons for n in c["figures"])])
    texts = _compact_sources(comparisons)
    rows = _pool_rows(comparisons)
    return {
        "title": title,
        "note": note,
        "marks": [m.value for m in MARK_ORDER],
        "stage_order": [stage.label for stage in Stage],  # the compiler's order: the stage column sorts by it
        "figures": {f.name: {"label": f.label, "noun": f.noun, "unit": f.unit.strip(), "vendor": f.vendor,
                             "heading": f.noun + (f" ({f.unit.strip()})" if f.unit.strip() else "")}
                    for f in map(figure, names)},
        "page_rows": PAGE_ROWS,
        "comparisons": comparisons,
        "rows": rows,
        "texts": texts,
        "steps": steps,
    }


def script_json(data: Any) -> str:
    """JSON that can sit inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` left
    (so no ``</script>`` or ``<!--`` can end or confuse the element); ASCII only."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: dict[str, Any]) -> str:
    """The page for ``data`` (from :func:`comparison_data`), through the jinja2 template."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("regsurvey", "templates"),
                             autoescape=True, keep_trailing_newline=True)
    return env.get_template("report.html.j2").render(title=data["title"], data_json=script_json(data))


class HtmlFormat:
    """``--format html``: the interactive report (written to ``reports/<base>..<head>.html`` by default)."""

    name = "html"

    def __init__(self, note: str | None = None):
        self.note = note  # a line under the title, e.g. what the demo's change is

    def format(self, comparison: Comparison) -> str:
        """One comparison's page."""
        title = f"Registers: {comparison.base.short} → {comparison.head.short}"
        name = f"{comparison.head.short} against {comparison.base.short}"
        return render_page(_page_data(title, [comparison_data(comparison, name)], None, self.note))

    def format_stack(self, stack: Stack) -> str:
        """The range's page: a row per commit, and a selector over every comparison (the whole range
        first, then each commit against its parent)."""
        title = f"Registers, commit by commit: {stack.base.short}..{stack.head.short}"
        comparisons = [comparison_data(stack.overall, f"{stack.head.short} against {stack.base.short} (whole range)")]
        steps = []
        for i, step in enumerate(stack.steps, start=1):
            comparisons.append(comparison_data(step.comparison, f"{step.commit[:10]} {step.subject}"))
            ok, total = step.keys_built
            counts = step.comparison.counts
            steps.append({"commit": step.commit, "subject": step.subject, "keys_ok": ok, "keys": total,
                          "counts": {m.value: n for m, n in counts.items()},
                          "spills": figure_total_delta(step.comparison),
                          "lint": lint_counts_text(step.lint_findings, not_linted="not linted"),
                          "comparison": i})
        return render_page(_page_data(title, comparisons, steps, self.note))


__all__ = ["HtmlFormat", "comparison_data", "grids", "render_page", "script_json", "verdict"]
