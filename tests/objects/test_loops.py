"""The loop finder (regsurvey/objects/loops.py) on graphs whose loops are known by construction; on real
kernels' machine code it is held against LLVM's own loop comments and the SASS's backward branches in
tests/objects/test_loop_spills.py."""

from __future__ import annotations

from regsurvey.objects.loops import loop_nest


def test_a_straight_line_has_no_loop() -> None:
    nest = loop_nest([[1], [2], []])
    assert nest.loops == () and nest.depth == (0, 0, 0) and nest.deepest == 0


def test_nested_loops_and_their_depths() -> None:
    # 0 -> 1 (outer header) -> 2 (inner header) -> 3 -> 2 (inner back edge); 3 -> 4 -> 1 (outer back edge);
    # 1 -> 5 (exit).
    nest = loop_nest([[1], [2, 5], [3], [2, 4], [1], []])
    assert nest.depth == (0, 1, 2, 2, 1, 0) and nest.deepest == 2
    outer, inner = nest.loops
    assert (outer.header, sorted(outer.body), outer.latches, outer.depth, outer.parent) == (1, [1, 2, 3, 4], (4,), 1,
                                                                                            None)
    assert (inner.header, sorted(inner.body), inner.latches, inner.depth, inner.parent) == (2, [2, 3], (3,), 2, 0)
    assert nest.innermost == (None, 0, 1, 1, 0, None)


def test_a_block_that_branches_to_itself_is_a_loop() -> None:
    nest = loop_nest([[1], [1, 2], []])
    assert nest.depth == (0, 1, 0) and nest.loops[0].latches == (1,)


def test_back_edges_into_one_header_make_one_loop() -> None:
    # Two latches (2 and 3) close the loop headed by 1 (a `continue`).
    nest = loop_nest([[1], [2, 4], [1, 3], [1], []])
    assert len(nest.loops) == 1 and nest.loops[0].latches == (2, 3) and nest.depth == (0, 1, 1, 1, 0)


def test_two_loops_in_sequence_are_both_at_depth_one() -> None:
    nest = loop_nest([[1], [1, 2], [3], [3, 4], []])
    assert nest.depth == (0, 1, 0, 1, 0) and [loop.parent for loop in nest.loops] == [None, None]


def test_an_irreducible_cycle_is_no_loop() -> None:
    # 1 and 2 branch to each other, each entered from 0: no block of the cycle dominates the other.
    nest = loop_nest([[1, 2], [2, 3], [1, 3], []])
    assert nest.loops == () and nest.irreducible == 1 and nest.deepest == 0


def test_unreachable_code_is_in_no_loop() -> None:
    # ptxas' trap loop after EXIT: a block that branches to itself, which nothing reaches.
    nest = loop_nest([[], [1]])
    assert nest.depth == (0, 0) and nest.loops == ()
    assert loop_nest([]).loops == ()


def test_a_long_chain_does_not_recurse() -> None:
    count = 20000
    successors = [[i + 1] for i in range(count - 1)] + [[0]]
    nest = loop_nest(successors)
    assert nest.deepest == 1 and len(nest.loops[0].body) == count
