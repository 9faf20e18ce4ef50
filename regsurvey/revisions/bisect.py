"""``regsurvey bisect``: the first commit of a range whose builds show a figure's change, by binary search
over first-parent commits, as ``git bisect`` runs it: GOOD is taken as good and BAD as bad; a commit
whose matching builds cannot be judged (none builds, or none matches) is skipped, like ``git bisect
skip``, and the search goes on beside it.

A commit is *bad* when a matching build's figure differs from GOOD's value for the same build (or,
with ``above``, exceeds it). Each commit's survey comes from :func:`regsurvey.revisions.range.selection_survey`:
a stored survey of every key narrowed, else a survey of the matching keys only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..model.results import Survey
from ..model.words import ARROW, agree, count

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass(frozen=True)
class Verdict:
    """What one commit's matching builds say."""

    verdict: str  # GOOD, BAD or SKIP
    values: dict[str, int] = field(default_factory=dict)  # build ref ("target:row id") -> the figure
    why: str = ""  # for SKIP: why it cannot be judged; for BAD: the builds that show it


@dataclass(frozen=True)
class Search:
    """The outcome of :func:`search` over commits 0..n-1 (the last is BAD): ``first`` the index of the
    first bad commit, or None when skipped commits leave it open among ``candidates``; ``probes`` the
    indices judged, in order."""

    first: int | None
    candidates: tuple[int, ...]
    probes: tuple[int, ...]


def search(n: int, judge: Callable[[int], str], bad_is_bad: bool = False) -> Search:
    """Binary search for the first bad one of ``n`` commits after a good one, the last (``n - 1``) taken
    as bad. ``judge(i)`` is GOOD, BAD or SKIP. The last is judged only when everything before it is
    found good (to confirm it; skipped when ``bad_is_bad``): then its verdict decides, GOOD meaning no
    commit of the range shows the change (``first`` None, no candidates)."""
    lo, hi = -1, n - 1  # the last index known good (-1: the range's base), the first known (taken) bad
    skipped: set[int] = set()
    probes: list[int] = []
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in skipped]
        if not open_:
            break
        middle = (lo + hi) / 2
        probe = min(open_, key=lambda i: (abs(i - middle), i))
        probes.append(probe)
        verdict = judge(probe)
        if verdict == GOOD:
            lo = probe
        elif verdict == BAD:
            hi = probe
        else:
            skipped.add(probe)
    if hi == n - 1 and not bad_is_bad:
        # No commit before BAD was found bad: BAD itself is judged, to confirm it.
        probes.append(hi)
        verdict = judge(hi)
        if verdict == GOOD:
            return Search(None, (), tuple(probes))
        if verdict == SKIP:
            skipped.add(hi)
    candidates = tuple(range(lo + 1, hi + 1))
    if len(candidates) == 1 and hi not in skipped:
        return Search(hi, candidates, tuple(probes))
    return Search(None, candidates, tuple(probes))


def judge_survey(survey: Survey, figure: str, reference: dict[str, int] | None, above: int | None,
                 arrow: str = ARROW) -> Verdict:
    """A commit's verdict from its survey (narrowed to the matching builds) against GOOD's values
    (``reference``), or against ``above``; with neither, GOOD's own (its values are the reference).
    ``arrow``: how its ``why`` draws a value's move (the JSON's is ASCII)."""
    rows = list(survey.rows)
    if not rows:
        return Verdict(SKIP, why="no build matches")
    failed = [r for r in rows if r.failed]
    if failed:
        return Verdict(SKIP, why=f"{len(failed)} of {count(len(rows), 'matching build')} "
                                 f"{agree(len(failed), 'fails', 'fail')} (first: {failed[0].row_id} on "
                                 f"{failed[0].target})")
    values = {f"{r.target}:{r.row_id}": int(r.resources[figure]) for r in rows
              if r.ok and isinstance(r.resources.get(figure), int)}
    if not values:
        return Verdict(SKIP, why=f"no matching build has {figure}")
    if above is not None:
        over = sorted(ref for ref, v in values.items() if v > above)
        return Verdict(BAD if over else GOOD, values, _listed([f"{ref} {values[ref]}" for ref in over]))
    if reference is None:  # GOOD itself: its values are the reference
        return Verdict(GOOD, values)
    moved = sorted(ref for ref in values if ref in reference and values[ref] != reference[ref])
    if not any(ref in reference for ref in values):
        return Verdict(SKIP, values, why="no matching build is also in GOOD's survey")
    return Verdict(BAD if moved else GOOD, values,
                   _listed([f"{ref} {reference[ref]} {arrow} {values[ref]}" for ref in moved]))


SHOWN = 3  # builds named in a verdict; the rest are counted


def _listed(items: list[str]) -> str:
    more = f" and {count(len(items) - SHOWN, 'more build')}" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more
