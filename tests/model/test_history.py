"""What ``regsurvey history`` reports (model/history.py): each commit with its diff's sentences, drawn with
the report's arrow (JSON's ASCII one), a figure's points over the commits, and whether a series changed.
The history made from real surveys is tests/diff/test_history.py's."""

from __future__ import annotations

import json

from regsurvey.model.history import History, HistoryCommit, Point, Series

SUMMARY = (("adds 2 VGPR spills to attn tp4 w2 on gfx950 (0", "2)"),
           ("every key builds on both commits",))


def test_a_commits_sentences_are_drawn_with_the_arrow_asked_for() -> None:
    commit = HistoryCommit("b" * 40, "attention: bigger tile", SUMMARY, {"worse": 1, "unchanged": 3}, 4, 0)
    assert commit.sentences() == ("adds 2 VGPR spills to attn tp4 w2 on gfx950 (0 → 2)",
                                  "every key builds on both commits")
    assert commit.sentences("=>") == ("adds 2 VGPR spills to attn tp4 w2 on gfx950 (0 => 2)",
                                      "every key builds on both commits")
    assert commit.to_dict() == {"sha": "b" * 40, "subject": "attention: bigger tile",
                                "summary": ["adds 2 VGPR spills to attn tp4 w2 on gfx950 (0 -> 2)",
                                            "every key builds on both commits"],
                                "counts": {"worse": 1, "unchanged": 3}, "builds": 4, "failed": 0, "span": 1}
    first = HistoryCommit("a" * 40, "base", builds=4, span=0)  # the range's base: no diff before it
    assert first.to_dict() == {"sha": "a" * 40, "subject": "base", "summary": [], "counts": None, "builds": 4,
                               "failed": 0, "span": 0}


def points(*spreads: tuple[int | None, int | None, int], failed: int = 0, moved: int = 0) -> tuple[Point, ...]:
    return tuple(Point(hi, lo, built, failed if i == len(spreads) - 1 else 0, moved if i == len(spreads) - 1 else 0)
                 for i, (hi, lo, built) in enumerate(spreads))


def test_a_series_changed_only_when_one_of_its_builds_did() -> None:
    same = points((128, 96, 8), (128, 96, 8), (128, 96, 8))
    assert not Series("attn", "gfx950", "vgpr", same).changed
    assert Series("attn", "gfx950", "vgpr", points((128, 96, 8), (136, 96, 8))).changed  # the largest moved
    assert Series("attn", "gfx950", "vgpr", points((128, 96, 8), (128, 96, 7))).changed  # a build went
    assert Series("attn", "gfx950", "vgpr", points((128, 96, 8), (128, 96, 8), moved=1)).changed  # within the spread
    assert Series("attn", "gfx950", "vgpr", points((128, 96, 8), (128, 96, 7), failed=1)).changed
    assert Series("attn", "gfx950", "vgpr", points((None, None, 0), (None, None, 0), failed=2)).changed
    assert not Series("attn", "gfx950", "vgpr", ()).changed


def test_the_history_as_json() -> None:
    series = Series("attn", "gfx950", "vgpr", (Point(128, 96, 8, 0), Point(136, 96, 8, 0, moved=2, worse=2)))
    history = History("HEAD~2..HEAD", (HistoryCommit("a" * 40, "base", span=0),
                                       HistoryCommit("b" * 40, "tile", SUMMARY, {"worse": 2}, 8)),
                      (series,), every=2, figures=("vgpr", "occupancy"))
    data = history.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert (data["spec"], data["every"], data["figures"]) == ("HEAD~2..HEAD", 2, ["vgpr", "occupancy"])
    assert [c["sha"] for c in data["commits"]] == ["a" * 40, "b" * 40]
    assert data["series"] == [{"kind": "attn", "target": "gfx950", "figure": "vgpr", "points": [
        {"max": 128, "min": 96, "built": 8, "failed": 0, "moved": 0, "worse": 0, "better": 0},
        {"max": 136, "min": 96, "built": 8, "failed": 0, "moved": 2, "worse": 2, "better": 0}]}]
