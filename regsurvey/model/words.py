"""How every report counts and compares: a count with its noun in the number it takes (``count(1, "key")``
is ``1 key``, ``count(2, "spill store")`` is ``2 spill stores``), and the arrow between a before and an after.

Here, beside the build names (:mod:`.names`), because the comparison's prose summary (``diff/``) and every
writer (``output/``, the commands) count alike, and ``model/`` is what all of them may import.
"""

from __future__ import annotations

# Between a before and an after, wherever a person reads it: the terminal, Markdown, HTML, SARIF messages.
ARROW = "→"
# In the JSON reports (``--format json``): written ASCII-only (``json.dumps``), where the arrow would be
# ``\u2192``, and read by programs that match their text.
ASCII_ARROW = "->"

# Plurals the rule in :func:`plural` does not make: the axes of a key, and the verbs a count agrees with.
_IRREGULAR = {"axis": "axes", "is": "are", "was": "were", "has": "have", "does": "do"}


def plural(noun: str) -> str:
    """The plural of ``noun``, whose last word takes it: ``spill store`` -> ``spill stores``, ``launch`` ->
    ``launches``, ``entry`` -> ``entries``, ``VGPR`` -> ``VGPRs``, ``is`` -> ``are``."""
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        word = _IRREGULAR[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        word = last[:-1] + "ies"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def agree(n: float, singular: str, plural_form: str | None = None) -> str:
    """``singular`` when ``n`` is one, else its plural (``plural_form``, or :func:`plural`'s): the noun or
    verb that goes with a count (``1 build fails``, ``2 builds fail``: ``agree(n, "fails", "fail")``)."""
    return singular if n == 1 else plural_form or plural(singular)


def count(n: float, singular: str, plural_form: str | None = None) -> str:
    """``n`` and its noun in the number it takes: ``1 key``, ``0 keys``, ``2 launches``, ``0.5 idle minutes``
    (a float as ``%g`` writes it)."""
    number = f"{n:g}" if isinstance(n, float) else str(n)
    return f"{number} {agree(n, singular, plural_form)}"


def singular(noun: str) -> str:
    """The singular of a plural noun of the figure registry (``VGPR spills`` -> ``VGPR spill``, ``spill
    stores`` -> ``spill store``); a noun without a plural ``s`` (``scratch``, ``LDS``) as it is."""
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def count_plural(n: float, plural_noun: str) -> str:
    """``n`` and a noun given in the plural, as the figure registry gives them: ``1 VGPR spill``,
    ``3 VGPR spills``."""
    return count(n, singular(plural_noun), plural_noun)


def listing(items: list[str] | tuple[str, ...]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
