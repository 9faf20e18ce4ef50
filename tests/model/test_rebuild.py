"""The outcome of building every row of a revision twice (model/rebuild.py, ``regsurvey rebuild-check``):
deterministic when no build differs, and its JSON. Rebuilding a real revision is
tests/revisions/test_rebuild.py's."""

from __future__ import annotations

import json

from regsurvey.model.rebuild import RebuildCheck, RebuildDifference


def test_no_difference_is_deterministic() -> None:
    check = RebuildCheck("HEAD", "a" * 40, 12, ())
    assert check.deterministic
    assert check.to_dict() == {"label": "HEAD", "commit": "a" * 40, "builds": 12, "deterministic": True,
                               "differences": []}
    assert RebuildCheck("working tree", None, 0, ()).to_dict()["commit"] is None


def test_each_difference_is_said_field_by_field() -> None:
    text = RebuildDifference("sm90", "gemm/w2#1", "gemm/w2", "matmul", "1" * 64, "2" * 64, ".text",
                             "differs at byte 0x40")
    failed = RebuildDifference("gfx950", "gemm/w8", "gemm/w8", None, "3" * 64, None, "<status>",
                               "built only the first time: timed out after 600 s (--timeout)")
    check = RebuildCheck("HEAD~1", "b" * 40, 2, (text, failed))
    assert not check.deterministic
    data = check.to_dict()
    assert json.loads(json.dumps(data)) == data and data["deterministic"] is False
    assert data["differences"] == [
        {"target": "sm90", "row_id": "gemm/w2#1", "key": "gemm/w2", "kernel": "matmul", "first_sha256": "1" * 64,
         "second_sha256": "2" * 64, "section": ".text", "detail": "differs at byte 0x40"},
        {"target": "gfx950", "row_id": "gemm/w8", "key": "gemm/w8", "kernel": None, "first_sha256": "3" * 64,
         "second_sha256": None, "section": "<status>",
         "detail": "built only the first time: timed out after 600 s (--timeout)"}]
