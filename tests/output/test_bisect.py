"""``regsurvey bisect``'s report (:mod:`regsurvey.output.bisect`) from a :class:`BisectResult`: the found
commit in text and JSON (its verdicts' arrows the format's own, its diff the comparison's JSON itself), and
the lines said when nothing is found, the same in every format."""

from __future__ import annotations

import json

from regsurvey.diff.core import compare
from regsurvey.model.bisect import BAD, GOOD, SKIP, BisectCommit, BisectResult, Verdict
from regsurvey.output.diff_json import comparison_dict
from regsurvey.output.formats import get_format, render

from ..lint_surveys import clean_and_mutated

COMMITS = (BisectCommit("1" * 40, "notes"), BisectCommit("2" * 40, "broken"), BisectCommit("3" * 40, "spill"))
VERDICTS = {1: Verdict(SKIP, reason="1 of 1 matching build fails (first: k/0 on gfx950)"),
            0: Verdict(GOOD, {"gfx950:k/0": 0}),
            2: Verdict(BAD, {"gfx950:k/0": 4}, shows=(("gfx950:k/0", 0, 4),))}


def result(first: int | None, candidates: tuple[int, ...] = ()) -> BisectResult:
    base, head = clean_and_mutated()
    return BisectResult("HEAD~3", "HEAD", "k/*", "vgpr_spill", None, COMMITS, first, candidates, (1, 0, 2),
                        VERDICTS, surveyed=4, surveyed_now=1, message="spill\n\nmore" if first is not None else "",
                        comparison=compare(base, head) if first is not None else None)


def test_the_found_commit_in_text_and_json() -> None:
    found = result(2, (2,))
    text = render(found, "table")
    assert text.startswith(f"first commit where vgpr_spill of 'k/*' changes from GOOD's: {'3' * 40}\n\n"
                           "    spill\n    \n    more\n\nit shows in: gfx950:k/0 0 → 4\n"
                           "2222222222 skip, 1111111111 good, 3333333333 bad\n"
                           "4 of 4 commits surveyed for the matching keys (1 now, 3 from the store)\n\n")
    assert text.endswith(get_format("table").format(found.comparison).rstrip() + "\n")
    data = json.loads(render(found, "json"))
    assert data["shows"] == "gfx950:k/0 0 -> 4" and data["steps"][2] == {"commit": "3" * 40, "verdict": "bad",
                                                                         "why": "gfx950:k/0 0 -> 4"}
    assert data["diff"] == json.loads(json.dumps(comparison_dict(found.comparison)))


def test_nothing_found_is_said_alike_in_every_format() -> None:
    open_ = result(None, (1, 2))
    said = ("skipped commits leave it open: the first commit showing vgpr_spill of 'k/*' changes from GOOD's is one "
            "of\n  2222222222 broken (skipped: 1 of 1 matching build fails (first: k/0 on gfx950))\n"
            "  3333333333 spill\n4 of 4 commits surveyed for the matching keys (1 now, 3 from the store)\n")
    assert {render(open_, name) for name in ("table", "markdown", "json")} == {said}
    assert render(result(None), "json") == ("no commit of HEAD~3..HEAD shows vgpr_spill of 'k/*' changes from GOOD's: "
                                            "HEAD itself does not. 4 of 4 commits surveyed for the matching keys "
                                            "(1 now, 3 from the store)\n")
