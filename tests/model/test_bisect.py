"""What ``regsurvey bisect`` finds (model/bisect.py): each judged commit's verdict and why, what was looked
for, and how many commits were surveyed. The report's formats of them are tests/output/test_bisect.py's."""

from __future__ import annotations

import pytest

from regsurvey.model.bisect import BAD, GOOD, SHOWN, SKIP, BisectCommit, BisectResult, Verdict
from regsurvey.model.words import ASCII_ARROW

COMMITS = (BisectCommit("1" * 40, "notes"), BisectCommit("2" * 40, "broken"), BisectCommit("3" * 40, "spill"))


def result(above: int | None = None, figure: str = "vgpr_spill", surveyed: int = 4, now: int = 1,
           commits: tuple[BisectCommit, ...] = COMMITS) -> BisectResult:
    return BisectResult("HEAD~3", "HEAD", "k/*", figure, above, commits, first=None, candidates=(), probes=(),
                        verdicts={}, surveyed=surveyed, surveyed_now=now)


def test_the_three_verdicts_are_words() -> None:
    assert (GOOD, BAD, SKIP) == ("good", "bad", "skip") and SHOWN == 3


def test_a_skip_says_why_it_cannot_be_judged() -> None:
    skip = Verdict(SKIP, reason="1 of 1 matching build fails (first: k/0 on gfx950)")
    assert skip.why() == "1 of 1 matching build fails (first: k/0 on gfx950)" and skip.values == {}


def test_a_verdict_names_the_builds_that_show_the_change() -> None:
    bad = Verdict(BAD, {"gfx950:k/0": 4, "sm90:k/0": 0}, shows=(("gfx950:k/0", 0, 4),))
    assert bad.why() == "gfx950:k/0 0 → 4"
    assert bad.why(ASCII_ARROW) == "gfx950:k/0 0 -> 4"  # the JSON's
    above = Verdict(BAD, {"gfx950:k/0": 4}, shows=(("gfx950:k/0", None, 4),))  # --above: no GOOD value
    assert above.why() == "gfx950:k/0 4"
    assert Verdict(GOOD, {"gfx950:k/0": 0}).why() == ""


@pytest.mark.parametrize(("builds", "said"), [
    (3, "k/0 0 → 1, k/1 0 → 2, k/2 0 → 3"),
    (4, "k/0 0 → 1, k/1 0 → 2, k/2 0 → 3 and 1 more build"),
    (6, "k/0 0 → 1, k/1 0 → 2, k/2 0 → 3 and 3 more builds"),
])
def test_the_first_three_builds_are_named_the_rest_counted(builds: int, said: str) -> None:
    shows = tuple((f"k/{i}", 0, i + 1) for i in range(builds))
    assert Verdict(BAD, shows=shows).why() == said


def test_what_was_looked_for() -> None:
    assert result().what == "vgpr_spill of 'k/*' changes from GOOD's"
    assert result(above=0).what == "vgpr_spill of 'k/*' above 0"  # 0 is a threshold, not "none"
    assert result(above=128, figure="vgpr").what == "vgpr of 'k/*' above 128"


def test_how_many_commits_were_surveyed_and_how_many_now() -> None:
    # The range's commits and GOOD itself.
    assert result().tally == "4 of 4 commits surveyed for the matching keys (1 now, 3 from the store)"
    assert result(surveyed=2, now=2).tally == "2 of 4 commits surveyed for the matching keys (2 now, 0 from the store)"
    assert result(surveyed=1, now=0, commits=()).tally == ("1 of 1 commit surveyed for the matching keys "
                                                           "(0 now, 1 from the store)")
