"""Where a build's registers are on its source lines, and where they moved between two surveys: the lines
holding the most (:class:`HotLine`), each source file annotated (:class:`AnnotatedFile`), and what moved
(:class:`WhereChange`). ``regsurvey.where`` makes them from each side's pressure
(:mod:`regsurvey.model.pressure`); every report shows them (``output.where_text`` says a change)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .enums import TextEnum


class WhereKind(TextEnum):
    """What moved on a build's source lines between two surveys (:class:`WhereChange`)."""

    PEAK_MOVED = "peak_moved"  # the first register class's peak is on another line
    PEAK_CHANGED = "peak_changed"  # on the same line, with more or fewer registers live
    NEW_SPILLS = "new_spills"  # a line that had no spills has some
    MORE_SPILLS = "more_spills"  # a line's spill stores and reloads, more of them in all
    FEWER_SPILLS = "fewer_spills"  # ... fewer in all (or as many, spread otherwise between the two)
    SPILLS_GONE = "spills_gone"  # a line that had spills has none
    LOOP_SPILLS_UP = "loop_spills_up"  # a loop of the machine code holds more spill instructions in all
    LOOP_SPILLS_DOWN = "loop_spills_down"  # ... fewer in all (or as many, spread otherwise between the two)


PEAK_KINDS = frozenset({WhereKind.PEAK_MOVED, WhereKind.PEAK_CHANGED})
LOOP_KINDS = frozenset({WhereKind.LOOP_SPILLS_UP, WhereKind.LOOP_SPILLS_DOWN})


@dataclass(frozen=True)
class WhereChange:
    """One thing that moved on a build's source lines: its peak (of the build's first register class,
    ``noun``), the spills of one line (SGPR spills, to VGPR lanes, apart: ``sgpr``) or the spill
    instructions a loop of the machine code holds itself (the loop named by its source line, at ``depth``,
    its nested loops' not counted). Lines are named for
    each side's revision ("decode_layer/attention.py:108"), or ``model.pressure.NO_LINE`` where the compiler
    gave the instructions none; a spill's line is the same on both sides. ``output.where_text`` says it."""

    what: WhereKind
    before_line: str  # the base's peak line, or the spills' line
    after_line: str  # the head's peak line, or the spills' line
    noun: str = ""  # the peak's register class in words: "VGPR", "register"
    live_before: int = 0  # the peak's live registers on each side
    live_after: int = 0
    sgpr: bool = False  # the spills are SGPR spills (to VGPR lanes), not the others
    stores_before: int = 0  # the line's spill stores and reloads on each side
    reloads_before: int = 0
    stores_after: int = 0
    reloads_after: int = 0
    depth: int = 0  # the loop's depth (1: outermost), for a loop's spills

    @property
    def is_peak(self) -> bool:
        """Whether it tells of the peak (else of a line's or a loop's spills)."""
        return self.what in PEAK_KINDS

    @property
    def is_loop(self) -> bool:
        """Whether it tells of the spills inside a loop."""
        return self.what in LOOP_KINDS


@dataclass(frozen=True)
class HotLine:
    """A source line of a build and what it holds: the most registers live at its instructions (of the
    build's first register class, ``noun``), its spill stores and reloads, and its text."""

    line: str  # "decode_layer/attention.py:108"
    live: int
    noun: str  # "VGPR" or "register"
    stores: int
    reloads: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AnnotatedFile:
    """A source file of a build, annotated: from its first to its last line with code, each line's text
    and figures (``live``: the most registers live at its instructions, of the build's first class;
    None where the line made no instruction; ``depth``: the deepest loop of the machine code holding one of
    them), with the lines holding the most registers marked ``hot``."""

    name: str  # "decode_layer/attention.py", or the path the object names where the file was not found
    first: int  # the number of the first line
    text: tuple[str, ...]
    live: tuple[int | None, ...]
    stores: tuple[int, ...]
    reloads: tuple[int, ...]
    hot: tuple[int, ...] = ()  # line numbers
    found: bool = True  # whether the text was read at the revision (else the lines are blank)
    depth: tuple[int, ...] = ()  # each line's loop depth in the machine code (0 outside loops; () not known)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "first": self.first, "text": list(self.text), "live": list(self.live),
                "stores": list(self.stores), "reloads": list(self.reloads), "hot": list(self.hot),
                "found": self.found, "depth": list(self.depth) or [0] * len(self.text)}
