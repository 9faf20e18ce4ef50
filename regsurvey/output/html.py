"""The comparison as one self-contained HTML page (inline CSS and JS, no network).

The page holds the data as JSON and a small script renders the table from it, a page of rows at a
time, so thousands of builds stay fast; it sorts by any column and filters by mark, kind, target and
every axis. Text from kernels and compilers never becomes markup: the JSON is escaped for a
``<script>`` element (``<``, ``>`` and ``&`` as ``\\u`` escapes) and the script only ever sets
``textContent``. The template is ``regsurvey/templates/report.html.j2``.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2

from ..diff.summary import summarize
from ..model.comparison import (
    MARK_ORDER,
    Comparison,
    LintChange,
    RowComparison,
    Stack,
    argument_label,
    finding_identity,
)
from ..model.figures import BY_IMPORTANCE, FIGURE_ORDER
from .figure_text import (
    changed_names,
    figure_total_delta,
    lint_change_text,
    lint_counts_text,
    note_text,
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


def _finding(f: dict[str, Any], new: bool) -> dict[str, Any]:
    load = f.get("load") or {}
    return {"arg": argument_label(f), "index": f.get("arg_index"), "offset": f.get("arg_offset"),
            "severity": f.get("severity"), "kernel": f.get("kernel"), "load": load.get("instruction"),
            "line": load.get("line"), "reason": f.get("reason"), "new": new}


def _lint(r: RowComparison) -> dict[str, Any] | None:
    """The detail panel's findings (the head's, new ones flagged, then the fixed ones) and the table's
    lint cell; None when neither side was linted."""
    change: LintChange = r.lint_findings
    if not change.linted:
        return None
    new = {finding_identity(f) for f in change.new}
    return {"before": None if change.before is None else len(change.before),
            "after": None if change.after is None else len(change.after),
            "findings": [_finding(f, finding_identity(f) in new) for f in change.after or ()],
            "fixed": [_finding(f, False) for f in change.fixed],
            "change": lint_change_text(r),
            "score": len(change.new_errors) - len(change.fixed_errors),
            "tone": "worse" if change.new_errors else "better" if change.fixed_errors else ""}


def _row(r: RowComparison) -> dict[str, Any]:
    return {"ref": r.ref, "id": r.row_id, "key": r.key, "kind": r.kind, "target": r.target,
            "kernel": r.kernel or "", "config": r.config, "mark": r.mark.value, "axes": r.segments,
            "f": {f.name: [f.before, f.after] for f in r.figures}, "note": note_text(r, "→") or None,
            "lint": _lint(r), "before": _side(r.before), "after": _side(r.after)}


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
        "counts": {m.value: n for m, n in comparison.counts.items()},
        "total": total_line(comparison),
        "spills": spill_totals_text(comparison),
        "toolchain_changes": [c.describe("→") for c in comparison.toolchain_changes],
        "summary": [{"text": line.render("→"), "tone": line.tone, "rows": list(line.rows)}
                    for line in summarize(comparison).lines],
        "axes": list(axes),
        "figures": sorted(present, key=lambda n: order.get(n, len(order))),
        "changed": changed_names(comparison.rows),
        "lint_changed": any(r.lint_findings.changed for r in comparison.rows),
        "rows": [_row(r) for r in comparison.rows],
        "rebuild": comparison.rebuild.to_dict() if comparison.rebuild is not None else None,
    }


def _page_data(title: str, comparisons: list[dict[str, Any]], steps: list[dict[str, Any]] | None,
               note: str | None) -> dict[str, Any]:
    return {
        "title": title,
        "note": note,
        "marks": [m.value for m in MARK_ORDER],
        "figures": {f.name: {"label": f.label, "noun": f.noun, "unit": f.unit.strip(), "worse": f.worse,
                             "vendor": f.vendor} for f in BY_IMPORTANCE},
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
