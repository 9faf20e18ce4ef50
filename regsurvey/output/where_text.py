"""Where a build's registers moved, in words: each :class:`~regsurvey.model.comparison.WhereChange` (made by
``regsurvey.where``) as one sentence, the same for every report (the tables, Markdown, HTML, the JSON's
``where`` lists): "the VGPR peak moved from attention.py:188 to attention.py:203 (+24 live VGPRs)", "new
spills at attention.py:203 (4 stores, 0 reloads)", "adds 24 spill reloads inside the loop at attention.py:110"."""

from __future__ import annotations

from collections.abc import Iterable

from ..diff.summary import SummaryLine
from ..model.pressure import NO_LINE
from ..model.where import WhereChange, WhereKind
from ..model.words import count


def where_sentence(change: WhereChange) -> str:
    """``change`` in words."""
    noun, line = change.noun, change.after_line
    if change.what is WhereKind.PEAK_MOVED:
        delta = change.live_after - change.live_before
        more = f" ({delta:+d} live {noun}s)" if delta else ""
        return f"the {noun} peak moved from {change.before_line} to {line}{more}"
    if change.what is WhereKind.PEAK_CHANGED:
        rose = "rose" if change.live_after > change.live_before else "fell"
        return f"the {noun} peak at {line} {rose} from {change.live_before} to {change.live_after} live {noun}s"
    if change.is_loop:
        return _loop_sentence(change)
    spills = "SGPR spills" if change.sgpr else "spills"
    if change.what is WhereKind.NEW_SPILLS:
        return f"new {spills} {_at(line)} ({_counts(change.stores_after, change.reloads_after)})"
    if change.what is WhereKind.SPILLS_GONE:
        return f"no {spills} left {_at(line)} (were {_counts(change.stores_before, change.reloads_before)})"
    more = "more" if change.what is WhereKind.MORE_SPILLS else "fewer"
    return (f"{more} {spills} {_at(line)} ({change.stores_before} to {count(change.stores_after, 'store')}, "
            f"{change.reloads_before} to {count(change.reloads_after, 'reload')})")


def _loop_sentence(change: WhereChange) -> str:
    """``adds 24 spill reloads inside the loop at attention.py:110``, ``removes 8 spill stores and 8 reloads
    inside the loop at attention.py:112 (depth 2)``, ``adds 4 spill stores and removes 2 reloads ...``."""
    stores, reloads = change.stores_after - change.stores_before, change.reloads_after - change.reloads_before
    moves = [(n, noun) for n, noun in ((stores, "store"), (reloads, "reload")) if n]
    words = []
    for k, (n, noun) in enumerate(moves):
        verb = "adds" if n > 0 else "removes"
        said = count(abs(n), f"spill {noun}" if k == 0 else noun)
        words.append(said if k and (n > 0) == (moves[0][0] > 0) else f"{verb} {said}")
    where = "inside a loop where the compiler gave no source line" if change.after_line == NO_LINE else (
        f"inside the loop at {change.after_line}")
    return " and ".join(words) + f" {where}" + (f" (depth {change.depth})" if change.depth > 1 else "")


def where_sentences(changes: Iterable[WhereChange]) -> tuple[str, ...]:
    """Each of ``changes`` in words, in their order (a build's ``RowComparison.where``)."""
    return tuple(where_sentence(c) for c in changes)


def line_where_sentences(line: SummaryLine) -> tuple[str, ...]:
    """A summary line's ``where`` in words, each with how many of the line's builds it is true of when that
    is not all of them: "new spills at attention.py:203 (4 stores, 0 reloads) (2 of 3 builds)"."""
    builds = len(line.rows)
    return tuple(where_sentence(w.change) + (f" ({w.builds} of {builds} builds)" if w.builds < builds else "")
                 for w in line.where)


def _at(line: str) -> str:
    return "where the compiler gave no source line" if line == NO_LINE else f"at {line}"


def _counts(stores: int, reloads: int) -> str:
    return f"{count(stores, 'store')}, {count(reloads, 'reload')}"
