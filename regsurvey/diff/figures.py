"""Which way a figure moved between two surveys (the registry of figures is :mod:`regsurvey.model.figures`)."""

from __future__ import annotations

from ..model.figures import figure


def verdict(name: str, before: int | None, after: int | None) -> str:
    """``worse``, ``better``, ``same``, ``changed`` (a neutral figure) or ``n/a`` (missing on a side)."""
    if before is None or after is None:
        return "n/a"
    if before == after:
        return "same"
    direction = figure(name).worse
    if direction == 0:
        return "changed"
    return "worse" if (after - before) * direction > 0 else "better"
