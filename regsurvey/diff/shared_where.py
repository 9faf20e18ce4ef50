"""What a summary line says of where its builds' registers moved: of their ``RowComparison.where`` changes,
those about the line's figure, each told once, most builds first."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from ..model.comparison import RowComparison
from ..model.figures import LOOP_SPILL_OPS, SPILL_FIGURES
from ..model.where import WhereChange, WhereKind

MAX_WHERE = 4  # changes told per summary line
# The register figures whose peak regsurvey.where.where_changes tells (the first class's), by its noun.
_PEAK_NOUN = {"vgpr": "VGPR", "vgpr_total": "VGPR", "regs": "register"}


@dataclass(frozen=True)
class SharedWhere:
    """A change on the source lines that ``builds`` of a summary line's builds have: one build's, the
    others' telling the same (``output.where_text`` says it)."""

    change: WhereChange
    builds: int


def shared_where(rows: list[RowComparison], name: str) -> tuple[SharedWhere, ...]:
    """The builds' ``where`` changes about figure ``name`` (spills for a spill figure, SGPR spills for
    ``sgpr_spill``; the loops' spills for ``loop_spill_ops``; the peak for a register count), each told once,
    most builds first."""
    if name == LOOP_SPILL_OPS:
        told = [w for r in rows for w in r.where if w.is_loop]
    elif name in SPILL_FIGURES:
        sgpr = name == "sgpr_spill"
        told = [w for r in rows for w in r.where if not w.is_peak and not w.is_loop and w.sgpr == sgpr]
    else:
        noun = _PEAK_NOUN.get(name)
        told = [w for r in rows for w in r.where if w.is_peak and noun is not None and w.noun == noun]
    first: dict[WhereChange, WhereChange] = {}
    counts: Counter[WhereChange] = Counter()
    for change in told:
        alike = _alike(change)
        first.setdefault(alike, change)
        counts[alike] += 1
    return tuple(SharedWhere(first[c], counts[c]) for c in sorted(counts, key=lambda c: -counts[c])[:MAX_WHERE])


def _alike(change: WhereChange) -> WhereChange:
    """What tells ``change`` apart from another build's: a moved peak its lines and how many more registers
    are live (not how many there are), any other change all it holds."""
    if change.what is WhereKind.PEAK_MOVED:
        return replace(change, live_before=0, live_after=change.live_after - change.live_before)
    return change
