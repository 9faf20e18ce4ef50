"""What a summary line says of where its builds' registers moved (diff.shared_where): of the builds'
``where`` changes, those about the line's figure (the peak of its register class, its kind of spills),
each told once however many builds have it, most builds first; on the real layer survey."""

from __future__ import annotations

from dataclasses import replace

from regsurvey.diff import compare, summarize
from regsurvey.diff.shared_where import MAX_WHERE, SharedWhere
from regsurvey.model.results import Survey
from regsurvey.model.where import WhereChange, WhereKind

from ..layer_survey import edited, row

AMD = "gfx950"
A, B, C = "attn.py:10", "attn.py:20", "attn.py:30"


def test_a_line_tells_the_changes_of_its_figure_once_most_builds_first(layer: Survey) -> None:
    builds = ["attn/tp8/w8/bf16", "attn/tp8/w8/e4m3"]
    base = edited(layer, {(b, AMD): {"vgpr": row(layer, b, AMD).resources["vgpr"] - 8} for b in builds})
    comparison = compare(base, layer)
    # Both peaks moved from A to B with 8 more live VGPRs (from other counts: told as one); one build's
    # spills changed too, and its SGPR spills, which a VGPR line does not tell.
    where = {
        builds[0]: (WhereChange(WhereKind.PEAK_MOVED, A, B, noun="VGPR", live_before=100, live_after=108),
                    WhereChange(WhereKind.NEW_SPILLS, C, C, stores_after=2)),
        builds[1]: (WhereChange(WhereKind.PEAK_MOVED, A, B, noun="VGPR", live_before=90, live_after=98),
                    WhereChange(WhereKind.NEW_SPILLS, C, C, sgpr=True, stores_after=1)),
    }
    comparison = replace(comparison, rows=tuple(replace(r, where=where.get(r.row_id, ())) if r.target == AMD
                                                else r for r in comparison.rows))
    (line,) = [line for line in summarize(comparison).lines if line.where]
    assert line.text.startswith("raises VGPRs of attn") and len(line.rows) == 2
    assert line.where == (SharedWhere(where[builds[0]][0], 2),)


def test_at_most_a_few_changes_a_line(layer: Survey) -> None:
    b = "attn/tp8/w8/bf16"
    base = edited(layer, {(b, AMD): {"vgpr_spill": 0, "scratch_bytes": 0}})
    head = edited(layer, {(b, AMD): {"vgpr_spill": 8, "scratch_bytes": 32}})
    new = tuple(WhereChange(WhereKind.NEW_SPILLS, f"attn.py:{n}", f"attn.py:{n}", stores_after=1) for n in range(6))
    comparison = compare(base, head)
    comparison = replace(comparison, rows=tuple(replace(r, where=new) if (r.row_id, r.target) == (b, AMD) else r
                                                for r in comparison.rows))
    (line,) = [line for line in summarize(comparison).lines if line.where]
    assert line.where == tuple(SharedWhere(w, 1) for w in new[:MAX_WHERE])
