"""How every report says a knob did nothing (``model.no_effect``): once per kind, the targets where it held
named together, so the table, Markdown, HTML and the gate read alike::

    l2norm: NB of l2norm_fwd_kernel takes 3 values (1, 2, 4; axis rows), all give the same object on gfx950 and sm90
    decode: axis batch takes 2 values (1, 32), all give the same objects on gfx942
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model.comparison import Comparison
from ..model.no_effect import KnobKind, NoEffect
from ..model.words import count, listing

SHOWN_VALUES = 6  # values named, then "and N more"
SHOWN_KERNELS = 2  # kernels named, else counted
HEADING = "knobs with no effect (values the keys vary that never changed the compiled object)"


@dataclass(frozen=True)
class KnobNote:
    """One knob of one kind told once: the facts of each target where it held."""

    kind: str
    facts: tuple[NoEffect, ...]
    new: bool = False  # in a comparison: the base had it on none of these targets

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets where it held, in the survey's order."""
        return tuple(f.target for f in self.facts)

    @property
    def text(self) -> str:
        """``NB of l2norm_fwd_kernel takes 3 values (1, 2, 4; axis rows), all give the same object on gfx950
        and sm90``."""
        fact = self.facts[0]
        values = [_value_text(v) for v in fact.values[:SHOWN_VALUES]]
        more = len(fact.values) - SHOWN_VALUES
        shown = ", ".join(values) + (f" and {more} more" if more > 0 else "")
        if fact.what is KnobKind.AXIS:
            return (f"axis {fact.knob} takes {count(len(fact.values), 'value')} ({shown}), all give the same "
                    f"objects on {listing(self.targets)}")
        kernels = (listing(list(fact.kernels)) if len(fact.kernels) <= SHOWN_KERNELS
                   else count(len(fact.kernels), "kernel"))
        moved = f"axis {listing(list(fact.axes))}" if fact.axes else "autotune configs"
        return (f"{fact.knob} of {kernels} takes {count(len(fact.values), 'value')} ({shown}; {moved}), all give "
                f"the same object on {listing(self.targets)}")

    @property
    def line(self) -> str:
        """``l2norm: NB of ...``: the kind, then :attr:`text` (``(new)`` after a knob new in a comparison)."""
        return f"{self.kind}: {self.text}" + (" (new)" if self.new else "")


def knob_notes(facts: Iterable[NoEffect], new: Iterable[NoEffect] = ()) -> list[KnobNote]:
    """The facts told once per kind and knob: those alike but for their target (the same values, kernels and
    axes) together, in the order the facts come; ``new``: those of them a comparison's base did not have."""
    grouped: dict[tuple[Any, ...], list[NoEffect]] = {}
    for fact in facts:
        grouped.setdefault((fact.kind, fact.what, fact.knob, fact.values, fact.kernels, fact.axes), []).append(fact)
    fresh = set(new)
    return [KnobNote(same[0].kind, tuple(same), new=any(f in fresh for f in same)) for same in grouped.values()]


def comparison_notes(comparison: Comparison, only_new: bool = False) -> list[KnobNote]:
    """The head's knobs without effect (``only_new``: those its base did not have), new ones marked."""
    new = comparison.no_effect.new
    return knob_notes(new if only_new else comparison.no_effect.head, new)


def knob_notice(comparison: Comparison) -> dict[str, Any] | None:
    """The HTML page's notice of the head's knobs that did nothing: a heading, then a line per kind and knob
    (``(new)`` after one the base did not have, ``new`` true); None where there is none."""
    notes = comparison_notes(comparison)
    if not notes:
        return None
    return {"heading": HEADING, "lines": [{"text": note.line, "new": note.new} for note in notes]}


def knob_lines(notes: list[KnobNote]) -> list[str]:
    """The heading and a line per note, indented; nothing where there is none."""
    return [f"{HEADING}:", *(f"  {note.line}" for note in notes)] if notes else []


def _value_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    return str(value)
