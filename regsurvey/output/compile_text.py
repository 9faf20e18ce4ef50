"""How every report says a build's compile time changed (``RowComparison.compile_time``): the seconds on each
side, how many times as long, and the stage that grew most, so the table, Markdown, HTML and the gate read
alike. Compile time is told apart from the figures: it never marks a build worse or better."""

from __future__ import annotations

import math

from ..model.comparison import Comparison, RowComparison
from ..model.compile_time import NOTABLE_FACTOR, NOTABLE_S, CompileTime
from ..model.words import ARROW, count


def seconds_text(seconds: float) -> str:
    """``0.42 s``, ``12.3 s``, ``512 s``: as many digits as a compile time's noise leaves meaningful."""
    if seconds < 10:
        return f"{seconds:.2f} s"
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"


def ratio_text(change: CompileTime) -> str:
    """``10.7x slower``, ``2.5x faster``, ``from nothing measurable``."""
    if not math.isfinite(change.ratio):
        return "from nothing measurable"
    if change.ratio >= 1:
        return f"{change.ratio:.1f}x slower"
    return f"{1 / change.ratio:.1f}x faster" if change.ratio > 0 else "to nothing measurable"


def _side(seconds: float, reused: bool) -> str:
    # A reused side's seconds are its build's, measured when an earlier survey compiled it.
    return seconds_text(seconds) + (" (an earlier compile's)" if reused else "")


def grew_most_text(change: CompileTime, arrow: str = ARROW) -> str:
    """``most in ptxas 2.10 s → 28.0 s`` (empty where no stage grew)."""
    grown = change.grew_most
    if grown is None:
        return ""
    return f"most in {grown.stage} {seconds_text(grown.before)} {arrow} {seconds_text(grown.after)}"


def compile_time_text(change: CompileTime, arrow: str = ARROW, named: bool = True) -> str:
    """``compile time 2.90 s → 31.0 s (10.7x slower; most in ptxas 2.10 s → 28.0 s)`` (``named`` False: without
    its first two words, under a heading that says them)."""
    slower = change.after > change.before
    detail = "; ".join(t for t in (ratio_text(change), grew_most_text(change, arrow) if slower else "") if t)
    return (("compile time " if named else "") + f"{_side(change.before, change.reused_before)} {arrow} "
            f"{_side(change.after, change.reused_after)} ({detail})")


def build_compile_text(r: RowComparison, arrow: str = ARROW) -> str:
    """A build's compile-time change where it moved notably (else empty): :func:`compile_time_text`."""
    if r.compile_time is None or not r.compile_time.notable:
        return ""
    return compile_time_text(r.compile_time, arrow)


def compile_times_heading(comparison: Comparison) -> str:
    """``compile time moved notably in 3 builds (2 slower, 1 faster; at least twice or half as long, by a second
    or more)``; empty where it moved in none."""
    moved = comparison.compile_time_changes
    if not moved:
        return ""
    slower = sum(1 for r in moved if r.compile_time is not None and r.compile_time.after > r.compile_time.before)
    parts = [f"{slower} slower" if slower else "", f"{len(moved) - slower} faster" if len(moved) > slower else ""]
    return (f"compile time moved notably in {count(len(moved), 'build')} ({', '.join(p for p in parts if p)}; "
            f"at least {NOTABLE_FACTOR:g}x or 1/{NOTABLE_FACTOR:g} as long, by {NOTABLE_S:g} s or more)")


__all__ = ["build_compile_text", "compile_time_text", "compile_times_heading", "grew_most_text", "ratio_text",
           "seconds_text"]
