"""``output/counts.py``: a count and its noun in agreement."""

from __future__ import annotations

from regsurvey.output.counts import counted, counted_plural


def test_counts_agree_with_their_nouns() -> None:
    assert [counted(n, "key") for n in (0, 1, 2)] == ["0 keys", "1 key", "2 keys"]
    assert counted(1, "launch", "launches") == "1 launch" and counted(3, "launch", "launches") == "3 launches"
    assert [counted_plural(n, "spill stores") for n in (1, 2)] == ["1 spill store", "2 spill stores"]
    assert counted_plural(1, "VGPR spills") == "1 VGPR spill" and counted_plural(1, "LDS") == "1 LDS"
