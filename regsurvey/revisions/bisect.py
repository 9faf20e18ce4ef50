"""``regsurvey bisect``: the first commit of a range whose builds show a figure's change, by binary search
over first-parent commits, as ``git bisect`` runs it: GOOD is taken as good and BAD as bad; a commit
whose matching builds cannot be judged (none builds, or none matches) is skipped, like ``git bisect
skip``, and the search goes on beside it.

A commit is *bad* when a matching build's figure differs from GOOD's value for the same build (or,
with ``above``, exceeds it). Each commit's survey comes from :func:`regsurvey.revisions.range.selection_survey`:
a stored survey of every key narrowed, else a survey of the matching keys only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from ..diff.core import compare
from ..model.bisect import BAD, GOOD, SKIP, BisectCommit, BisectResult, Verdict
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Survey
from ..model.words import agree, count
from ..repo.checkout import commit_message
from ..store.store import Store
from .range import commit_range, selection_survey

__all__ = ["BAD", "GOOD", "SKIP", "BisectError", "Search", "Verdict", "bisect_range", "judge_survey", "search"]


class BisectError(ValueError):
    """A bisect that cannot start: GOOD cannot be judged."""


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


def judge_survey(survey: Survey, figure: str, reference: dict[str, int] | None, above: int | None) -> Verdict:
    """A commit's verdict from its survey (narrowed to the matching builds) against GOOD's values
    (``reference``), or against ``above``; with neither, GOOD's own (its values are the reference)."""
    rows = list(survey.rows)
    if not rows:
        return Verdict(SKIP, reason="no build matches")
    failed = [r for r in rows if r.failed]
    if failed:
        return Verdict(SKIP, reason=f"{len(failed)} of {count(len(rows), 'matching build')} "
                                    f"{agree(len(failed), 'fails', 'fail')} (first: {failed[0].row_id} on "
                                    f"{failed[0].target})")
    values = {f"{r.target}:{r.row_id}": int(r.resources[figure]) for r in rows
              if r.ok and isinstance(r.resources.get(figure), int)}
    if not values:
        return Verdict(SKIP, reason=f"no matching build has {figure}")
    if above is not None:
        over = sorted(ref for ref, v in values.items() if v > above)
        return Verdict(BAD if over else GOOD, values, shows=tuple((ref, None, values[ref]) for ref in over))
    if reference is None:  # GOOD itself: its values are the reference
        return Verdict(GOOD, values)
    moved = sorted(ref for ref in values if ref in reference and values[ref] != reference[ref])
    if not any(ref in reference for ref in values):
        return Verdict(SKIP, values, reason="no matching build is also in GOOD's survey")
    return Verdict(BAD if moved else GOOD, values, shows=tuple((ref, reference[ref], values[ref]) for ref in moved))


ProgressScope = Callable[[], AbstractContextManager[Progress | None]]


def bisect_range(start: Path, good: str, bad: str, store: Store, options: SurveyOptions, figure: str,
                 above: int | None, progress: ProgressScope = contextlib.nullcontext,
                 on_verdict: Callable[[str, Verdict], None] = lambda sha, verdict: None) -> BisectResult:
    """Search GOOD..BAD (first parents) for the first commit where ``figure`` of the builds ``options``
    selects changes from GOOD's (or, with ``above``, exceeds it): each commit judged from its survey
    (:func:`selection_survey`, each survey in a ``progress()`` of its own), told to ``on_verdict`` as it is
    judged. Where found, that commit's diff against its parent (surveyed too where no probe judged it).
    BisectError when GOOD cannot be judged."""
    base, commits = commit_range(start, f"{good}..{bad}")
    surveys: dict[str, Survey] = {}
    made = 0
    # How each survey is announced: GOOD, or the commit's place in the range.
    places = {base: "GOOD", **{c.sha: f"commit {i} of {len(commits)}" for i, c in enumerate(commits, start=1)}}

    def survey_of(sha: str) -> Survey:
        nonlocal made
        if sha not in surveys:
            with progress() as shown:
                named = (shown or Progress()).named(f"{sha[:10]}, {places[sha]}")
                survey, fresh = selection_survey(start, sha, store, options, named)
            surveys[sha] = survey
            made += fresh
        return surveys[sha]

    reference: dict[str, int] | None = None
    if above is None:
        first = judge_survey(survey_of(base), figure, None, None)
        if first.verdict == SKIP:
            raise BisectError(f"GOOD ({good}) cannot be judged: {first.why()}")
        reference = first.values
    verdicts: dict[int, Verdict] = {}

    def judge(i: int) -> str:
        verdicts[i] = judge_survey(survey_of(commits[i].sha), figure, reference, above)
        on_verdict(commits[i].sha, verdicts[i])
        return verdicts[i].verdict

    def parent_of(i: int) -> str:
        return commits[i - 1].sha if i else base

    found = search(len(commits), judge)
    message, comparison = "", None
    if found.first is not None:
        # The answer is shown against its parent: a probe judged that one, or it is GOOD, which --above
        # does not judge (surveyed here).
        commit, parent = commits[found.first].sha, parent_of(found.first)
        diff = compare(survey_of(parent), surveys[commit])
        comparison = replace(diff, base=replace(diff.base, label=parent[:10]),
                             head=replace(diff.head, label=commit[:10]))
        message = commit_message(start, commit)
    return BisectResult(good=good, bad=bad, key=", ".join(options.keys), figure=figure, above=above,
                        commits=tuple(BisectCommit(c.sha, c.subject) for c in commits), first=found.first,
                        candidates=found.candidates, probes=found.probes, verdicts=verdicts,
                        surveyed=len(surveys), surveyed_now=made, message=message, comparison=comparison)
