"""The comparison and the stack as schema-versioned JSON (documented in docs/schemas.md, "The comparison JSON")."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..diff.summary import summarize
from ..model.comparison import Comparison, RowComparison, Stack
from ..model.words import ASCII_ARROW
from .no_effect_text import knob_notes
from .where_text import line_where_sentences, where_sentences


def _header(report: str, data: Comparison | Stack) -> dict[str, Any]:
    return {"schema_version": data.schema_version, "report": report, "base": asdict(data.base),
            "head": asdict(data.head)}


def comparison_dict(comparison: Comparison) -> dict[str, Any]:
    """The comparison as JSON-ready data (the schema is in docs/schemas.md)."""
    return {
        **_header("comparison", comparison),
        "toolchain_changes": [asdict(c) for c in comparison.toolchain_changes],
        "across_toolchains": comparison.across_toolchains,
        "counts": {m.value: n for m, n in comparison.counts.items()},
        "totals": {
            "keys": comparison.keys,
            "builds": len(comparison.rows),
            "spills": [asdict(t) for t in comparison.spill_totals],
            "spilling_builds": dict(zip(("before", "after"), comparison.spilling_builds)),
            "failing_builds": dict(zip(("before", "after"), comparison.failing_builds)),
            "skipped_keys": dict(zip(("before", "after"), comparison.skipped_keys)),
            "lint": lint.to_dict() if (lint := comparison.lint_counts) is not None else None,
        },
        "summary": [{"text": line.render(ASCII_ARROW), "tone": line.tone, "rows": list(line.rows),
                     "where": list(line_where_sentences(line))} for line in summarize(comparison).lines],
        "rows": [_row_dict(r) for r in comparison.rows],
        "skipped": [asdict(k) for k in comparison.skipped],
        "rebuild": comparison.rebuild.to_dict() if comparison.rebuild is not None else None,
        "no_effect": _no_effect(comparison),
    }


def _no_effect(comparison: Comparison) -> list[dict[str, Any]]:
    """The head's knobs that did nothing, each ``new`` where the base did not have it, with its sentence."""
    new = set(comparison.no_effect.new)
    told = {f: note.text for note in knob_notes(comparison.no_effect.head) for f in note.facts}
    return [{**f.to_dict(), "new": f in new, "text": told[f]} for f in comparison.no_effect.head]


def _row_dict(r: RowComparison) -> dict[str, Any]:
    return {
        "target": r.target, "row_id": r.row_id, "key": r.key, "kind": r.kind, "axes": r.axes,
        "segments": r.segments, "kernel": r.kernel, "launch": r.launch, "config": r.config,
        "label": r.name.label(ASCII_ARROW), "build_changes": [c.to_dict() for c in r.build_changes],
        "mark": r.mark.value, "note": r.note, "lint_findings": r.lint_findings.to_dict(),
        "first_difference": r.first_difference.value if r.first_difference is not None else None,
        "where": list(where_sentences(r.where)),
        "hot_lines": {"before": [h.to_dict() for h in r.hot_before], "after": [h.to_dict() for h in r.hot_after]},
        "compile_time": r.compile_time.to_dict() if r.compile_time is not None else None,
        "figures": [{"name": f.name, "before": f.before, "after": f.after, "delta": f.delta,
                     "verdict": f.verdict} for f in r.figures],
        "before": r.before.to_dict() if r.before is not None else None,
        "after": r.after.to_dict() if r.after is not None else None,
    }


def stack_dict(stack: Stack) -> dict[str, Any]:
    """JSON-ready data: each step's comparison and the overall one (docs/schemas.md)."""
    return {
        **_header("stack", stack),
        "steps": [{"commit": s.commit, "subject": s.subject,
                   "builds": dict(zip(("ok", "total"), s.builds)),
                   "keys_built": dict(zip(("ok", "total"), s.keys_built)),
                   "lint_findings": lint.to_dict() if (lint := s.lint_findings) is not None else None,
                   "comparison": comparison_dict(s.comparison)} for s in stack.steps],
        "overall": comparison_dict(stack.overall),
    }


class JsonFormat:
    """``--format json``: everything the comparison holds, both sides' rows included."""

    name = "json"

    def format(self, comparison: Comparison) -> str:
        """The comparison's JSON."""
        return json.dumps(comparison_dict(comparison), indent=1)

    def format_stack(self, stack: Stack) -> str:
        """The stack's JSON: each step's comparison and the overall one."""
        return json.dumps(stack_dict(stack), indent=1)
