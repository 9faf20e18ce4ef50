"""Progress events of a survey (model/progress.py): callbacks that do nothing unless given, and the same
progress renamed or numbered for each revision of a command that surveys several. How the terminal shows
them is tests/output/test_progress.py's."""

from __future__ import annotations

from regsurvey.model.keys import Key
from regsurvey.model.progress import Progress
from regsurvey.model.results import Row

KEY = Key(kind="gemm", axes=(), target="sm90", id="gemm/w2")


def test_a_progress_given_nothing_does_nothing() -> None:
    quiet = Progress()
    assert (quiet.on_survey("HEAD"), quiet.on_start(3), quiet.on_key(KEY, [])) == (None, None, None)


def test_a_progress_named_or_numbered_announces_each_survey_so() -> None:
    said: list[str] = []
    started: list[int] = []
    keys: list[tuple[str, int]] = []
    progress = Progress(on_start=started.append, on_key=lambda k, rows: keys.append((k.id, len(rows))),
                        on_survey=said.append)
    progress.named("abc1234567").announce("a" * 40)
    progress.numbered(1, 2).announce("HEAD~1 (abc1234567)")
    progress.numbered(3, 5, "commit").announce("3333333333")
    progress.numbered(2, 2, "commit").named("def7654321").announce("d" * 40)  # as `history` names its commits
    progress.named("fed7654321").numbered(1, 2, "commit").announce("f" * 40)  # the other order: the same
    assert said == ["abc1234567", "HEAD~1 (abc1234567), revision 1 of 2", "3333333333, commit 3 of 5",
                    "def7654321, commit 2 of 2", "fed7654321, commit 1 of 2"]
    numbered = progress.numbered(2, 2)
    numbered.on_start(4)
    numbered.on_key(KEY, [Row(key=KEY.id, kind="gemm", axes={}, target="sm90", kernel="k", status="ok")])
    assert (started, keys) == ([4], [("gemm/w2", 1)])  # the other callbacks are the progress's own
