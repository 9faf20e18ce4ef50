"""The comparison as one self-contained HTML page (inline CSS and JS, no network).

The page holds the data as JSON and a small script renders the table from it, a page of rows at a
time, so thousands of builds stay fast; it sorts by any column and filters by mark, kind, target and
every axis. Each figure's verdict, change and text, the lint findings' sentences and tones, the
headings and the notices come computed here: the script shows, sorts and filters them and derives none.
Text from kernels and compilers never becomes markup: the JSON is
escaped for a ``<script>`` element (``<``, ``>`` and ``&`` as ``\\u`` escapes) and the script only ever
sets ``textContent``. The template is ``regsurvey/templates/report.html.j2``.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2

from ..diff.summary import summarize
from ..model.comparison import (
    MARK_ORDER,
    Comparison,
    FigureDelta,
    LintChange,
    RowComparison,
    Stack,
    SurveyInfo,
)
from ..model.figures import BY_IMPORTANCE, FIGURE_ORDER, figure
from ..model.findings import Finding
from ..model.rebuild import RebuildCheck
from .figure_text import (
    change_text,
    changed_names,
    figure_total_delta,
    finding_text,
    lint_change_text,
    lint_counts_text,
    note_text,
    rebuild_difference,
    rebuild_verdict,
    spill_totals_text,
    total_line,
)

PAGE_ROWS = 100


def _side(row: Any) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"status": row.status, "error": row.error, "error_line": row.error_line,
            "sha256": row.object.sha256 if row.object else None,
            "triton_hash": row.triton_hash, "num_warps": row.num_warps, "num_stages": row.num_stages,
            "where": row.where, "compile_s": row.compile_s, "messages": list(row.messages)}


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
    return {"before": None if change.before is None else len(change.before),
            "after": None if change.after is None else len(change.after),
            "heading": _lint_heading(change),
            "findings": [_finding(f, "new" if f.identity in new else "") for f in change.after or ()]
                        + [_finding(f, "fixed") for f in change.fixed],
            "change": lint_change_text(r),
            "score": len(change.new_errors) - len(change.fixed_errors),
            "tone": "worse" if change.new_errors else "better" if change.fixed_errors else ""}


def _figure(f: FigureDelta) -> dict[str, Any]:
    """One figure of a row as the page shows it: the sides, the change (a number to sort by, and its
    text), the verdict (``worse``, ``better``, ``same``, ``changed`` or ``n/a``) and the cell's text."""
    delta = f.delta
    return {"before": f.before, "after": f.after, "delta": delta,
            "delta_text": "" if delta is None else f"{delta:+d}" if delta else "0",
            "verdict": f.verdict, "text": change_text(f, "→")}


def _row(r: RowComparison) -> dict[str, Any]:
    return {"ref": r.ref, "id": r.row_id, "key": r.key, "kind": r.kind, "target": r.target,
            "kernel": r.kernel or "", "config": r.config, "mark": r.mark.value, "axes": r.segments,
            "kernel_text": (r.kernel or "") + (f" cfg{r.config}" if r.config is not None else ""),
            "f": {f.name: _figure(f) for f in r.figures}, "note": note_text(r, "→") or None,
            "lint": _lint(r), "before": _side(r.before), "after": _side(r.after), "where": list(r.where),
            "hot": {"before": [h.to_dict() for h in r.hot_before], "after": [h.to_dict() for h in r.hot_after]},
            "source": {"before": [f.to_dict() for f in r.source_before],
                       "after": [f.to_dict() for f in r.source_after]}}


def _side_text(word: str, side: SurveyInfo) -> str:
    return f"{word} {side.short}" + (f" · {side.commit[:12]}" if side.commit else "")


def _rebuild(check: RebuildCheck | None) -> dict[str, Any] | None:
    """The rebuild check's notice: its verdict, then a line per build that differed."""
    if check is None:
        return None
    return {"text": f"rebuild check of {check.label}: {rebuild_verdict(check)} from a cold Triton cache",
            "differences": [rebuild_difference(d) for d in check.differences]}


def comparison_data(comparison: Comparison, name: str) -> dict[str, Any]:
    """What the page's script needs of one comparison (plain JSON data)."""
    axes: dict[str, None] = {}
    for r in comparison.rows:
        axes.update(dict.fromkeys(r.segments))
    present: dict[str, None] = {}
    for r in comparison.rows:
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
        "counts": {m.value: n for m, n in comparison.counts.items()},
        "total": total_line(comparison),
        "spills": spill_totals_text(comparison),
        "toolchain_changes": [c.describe("→") for c in comparison.toolchain_changes],
        "summary": [{"text": line.render("→"), "tone": line.tone, "rows": list(line.rows), "where": list(line.where)}
                    for line in summarize(comparison).lines],
        "axes": list(axes),
        "figures": sorted(present, key=lambda n: order.get(n, len(order))),
        "changed": changed_names(comparison.rows),
        "lint_changed": any(r.lint_findings.changed for r in comparison.rows),
        "rows": [_row(r) for r in comparison.rows],
        "rebuild": _rebuild(comparison.rebuild),
    }


def _page_data(title: str, comparisons: list[dict[str, Any]], steps: list[dict[str, Any]] | None,
               note: str | None) -> dict[str, Any]:
    # Every figure the rows have, a newer survey's unknown ones too (neutral: figures.figure).
    names = dict.fromkeys([*(f.name for f in BY_IMPORTANCE), *(n for c in comparisons for n in c["figures"])])
    return {
        "title": title,
        "note": note,
        "marks": [m.value for m in MARK_ORDER],
        "figures": {f.name: {"label": f.label, "noun": f.noun, "unit": f.unit.strip(), "vendor": f.vendor,
                             "heading": f.noun + (f" ({f.unit.strip()})" if f.unit.strip() else "")}
                    for f in map(figure, names)},
        "page_rows": PAGE_ROWS,
        "comparisons": comparisons,
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


__all__ = ["HtmlFormat", "comparison_data", "render_page", "script_json"]
