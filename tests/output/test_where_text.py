"""Where a build's registers moved, in words (output.where_text): each kind of ``WhereChange`` as its one
sentence, and a summary line's changes with how many of its builds each is true of. (The facts from real
compiles, and the reports that show them: tests/pressure/test_where.py.)"""

from __future__ import annotations

from regsurvey.diff.shared_where import SharedWhere
from regsurvey.diff.summary import SummaryLine
from regsurvey.model.pressure import NO_LINE
from regsurvey.model.where import WhereChange, WhereKind
from regsurvey.output.where_text import line_where_sentences, where_sentence, where_sentences

A, B = "decode_layer/attention.py:188", "decode_layer/attention.py:203"


def test_the_peak_moved_or_changed() -> None:
    assert where_sentence(WhereChange(WhereKind.PEAK_MOVED, A, B, noun="VGPR", live_before=100, live_after=124)) == \
        f"the VGPR peak moved from {A} to {B} (+24 live VGPRs)"
    assert where_sentence(WhereChange(WhereKind.PEAK_MOVED, A, B, noun="register", live_before=90, live_after=90)) \
        == f"the register peak moved from {A} to {B}"
    assert where_sentence(WhereChange(WhereKind.PEAK_CHANGED, B, B, noun="VGPR", live_before=124, live_after=100)) \
        == f"the VGPR peak at {B} fell from 124 to 100 live VGPRs"


def test_a_lines_spills() -> None:
    assert where_sentences([
        WhereChange(WhereKind.NEW_SPILLS, B, B, stores_after=4, reloads_after=1),
        WhereChange(WhereKind.MORE_SPILLS, A, A, sgpr=True, stores_before=1, reloads_before=1, stores_after=2,
                    reloads_after=1),
        WhereChange(WhereKind.FEWER_SPILLS, A, A, stores_before=3, reloads_before=2, stores_after=1),
        WhereChange(WhereKind.SPILLS_GONE, NO_LINE, NO_LINE, stores_before=1, reloads_before=0),
    ]) == (
        f"new spills at {B} (4 stores, 1 reload)",
        f"more SGPR spills at {A} (1 to 2 stores, 1 to 1 reload)",
        f"fewer spills at {A} (3 to 1 store, 2 to 0 reloads)",
        "no spills left where the compiler gave no source line (were 1 store, 0 reloads)",
    )


def test_a_summary_line_says_of_how_many_builds() -> None:
    new = WhereChange(WhereKind.NEW_SPILLS, B, B, stores_after=4)
    gone = WhereChange(WhereKind.SPILLS_GONE, A, A, stores_before=2)
    line = SummaryLine(("adds VGPR spills to attn on gfx950 (0", "4)"), "worse", ("gfx950:a", "gfx950:b"),
                       where=(SharedWhere(new, 2), SharedWhere(gone, 1)))
    assert line_where_sentences(line) == (f"new spills at {B} (4 stores, 0 reloads)",
                                          f"no spills left at {A} (were 2 stores, 0 reloads) (1 of 2 builds)")
    assert line_where_sentences(SummaryLine(("x",), "worse", ("gfx950:a",), where=(SharedWhere(gone, 1),))) == \
        (f"no spills left at {A} (were 2 stores, 0 reloads)",)


def test_a_loops_spills() -> None:
    up, down = WhereKind.LOOP_SPILLS_UP, WhereKind.LOOP_SPILLS_DOWN
    assert where_sentence(WhereChange(up, A, A, reloads_after=24, depth=1)) == \
        f"adds 24 spill reloads inside the loop at {A}"
    assert where_sentence(WhereChange(up, A, A, stores_before=2, reloads_before=2, stores_after=10, reloads_after=26,
                                      depth=2)) == (
        f"adds 8 spill stores and 24 reloads inside the loop at {A} (depth 2)")
    assert where_sentence(WhereChange(down, B, B, stores_before=1, reloads_before=3, depth=1)) == \
        f"removes 1 spill store and 3 reloads inside the loop at {B}"
    assert where_sentence(WhereChange(up, B, B, stores_before=2, reloads_before=2, stores_after=6, depth=1)) == \
        f"adds 4 spill stores and removes 2 reloads inside the loop at {B}"
    assert where_sentence(WhereChange(up, NO_LINE, NO_LINE, stores_after=1, depth=1)) == \
        "adds 1 spill store inside a loop where the compiler gave no source line"
