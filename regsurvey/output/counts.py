"""A count and its noun, in agreement: ``1 key``, ``2 keys``, ``1 spill store``, ``0 builds``."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` (singular) in agreement; ``plural`` where adding an ``s`` is wrong."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def singular(noun: str) -> str:
    """The singular of a plural noun of the figure registry (``VGPR spills`` -> ``VGPR spill``, ``spill
    stores`` -> ``spill store``); a noun without a plural ``s`` (``scratch``, ``LDS``) as it is."""
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def counted_plural(n: int, plural: str) -> str:
    """``n`` and a noun given in the plural (as the figure registry gives them): ``1 VGPR spill``,
    ``3 VGPR spills``."""
    return f"{n} {singular(plural) if n == 1 else plural}"
