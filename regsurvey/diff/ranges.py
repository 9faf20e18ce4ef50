"""A group of builds' figure as the summary says it: a range before and after (``20-24 -> 0``), its companions
beside it where they moved too (``scratch 80-96 -> 0 B``), with the arrow left for each report to draw."""

from __future__ import annotations

from ..model.comparison import FigureDelta, RowComparison
from ..model.figures import BY_IMPORTANCE, figure

# Where a sentence has an arrow (before -> after): SummaryLine keeps the words between, a report draws it.
ARROW_MARK = "\x00"
ARROW_GAP = f" {ARROW_MARK} "
# Shown beside a companion's values in its parent's line.
_COMPANION_NOUN = {"scratch_bytes": "scratch", "spill_load_bytes": "loads", "stack_bytes": "stack",
                   "occupancy_blocks": "", "vgpr_total": "unified"}
_TOLD_WHEN_DIFFERENT = {"vgpr_total"}  # companions told only where they moved otherwise than their figure


def span(values: list[int]) -> tuple[int, int]:
    """The smallest and the largest of ``values``."""
    return min(values), max(values)


def span_text(values: tuple[int, int]) -> str:
    """``20-24``; one value: ``20``."""
    return str(values[0]) if values[0] == values[1] else f"{values[0]}-{values[1]}"


def figure_deltas(rows: list[RowComparison], name: str) -> list[FigureDelta]:
    """Figure ``name`` of each of ``rows`` that has it on both sides."""
    return [f for r in rows if (f := r.figure(name)) is not None and f.before is not None and f.after is not None]


def range_text(deltas: list[FigureDelta], unit: str) -> str:
    """``20-24 <gap> 0 B``: the values before, :data:`ARROW_GAP`, the values after."""
    before = span([d.before for d in deltas if d.before is not None])
    after = span([d.after for d in deltas if d.after is not None])
    return f"{span_text(before)}{ARROW_GAP}{span_text(after)}{unit}"


def range_spread(deltas: list[FigureDelta]) -> int:
    """How wide the ranges before and after are, together."""
    before = span([d.before for d in deltas if d.before is not None])
    after = span([d.after for d in deltas if d.after is not None])
    return (before[1] - before[0]) + (after[1] - after[0])


def values_text(rows: list[RowComparison], name: str) -> tuple[str, str | None]:
    """The range of ``name`` and, for the companions that changed too, theirs (``scratch 0 -> 228 B``)."""
    main_deltas = figure_deltas(rows, name)
    main = range_text(main_deltas, figure(name).unit)
    told = []
    for companion in (f for f in BY_IMPORTANCE if f.companion_of == name):
        deltas = figure_deltas(rows, companion.name)
        # The unified VGPRs of a kernel without AGPRs are its VGPRs: moving exactly as they did, they
        # say nothing more.
        same = (companion.name in _TOLD_WHEN_DIFFERENT
                and [(d.before, d.after) for d in deltas] == [(d.before, d.after) for d in main_deltas])
        if any(d.changed for d in deltas) and not same:
            noun = _COMPANION_NOUN.get(companion.name, companion.noun)
            told.append((f"{noun} " if noun else "") + range_text(deltas, companion.unit))
    return main, (", ".join(told) or None)
