"""The copies of a key in flight (engine/copies.py): who took one, when the key is done, and its rows merged
from every copy."""

from __future__ import annotations

from regsurvey.engine.copies import KeyCopies, merged_copies
from regsurvey.model.keys import Key
from regsurvey.model.results import Row


def test_a_key_is_done_when_its_last_copy_ends_and_a_carrier_takes_a_copy_once() -> None:
    key = Key(kind="a", axes=(), target="sm90", id="a/1")
    first, helper, other = object(), object(), object()
    copies = KeyCopies()
    copies.sent(key, first)
    copies.sent(key, helper)
    assert copies.out(key) == 2
    assert not copies.may_help(key, helper) and copies.may_help(key, other)
    assert copies.ended(key) == (False, None)  # the helper lost: the first still carries the key
    copies.compiled(key)  # the first has every launch compiled: nothing is left for another copy
    assert not copies.may_help(key, other)
    row = Row(key="a/1", kind="a", axes={}, target="sm90", kernel="k", status="ok", triton_hash="h0")
    assert copies.ended(key, [row]) == (True, [row])
    assert copies.out(key) == 0 and copies.may_help(key, helper)  # forgotten once done
    copies.sent(key, first)
    assert copies.ended(key) == (True, None)  # the last copy lost, no rows: the caller decides
    assert (copies.keys_shared, copies.launches_shared) == (0, 0)


def test_merged_copies_take_each_launch_from_the_copy_that_compiled_it() -> None:
    def row(launch: int, reused: bool, kernel: str | None = "k") -> Row:
        return Row(key="a", kind="a", axes={}, target="sm90", kernel=kernel, status="ok" if kernel else "error",
                   launch=launch, triton_hash=f"h{launch}" if kernel else None, reused=reused)

    one = [row(0, False), row(1, True), row(2, True)]
    two = [row(0, True), row(1, False), row(2, True)]  # launch 2: reused by both (an earlier survey's)
    merged, shared = merged_copies([one, two])
    assert [(r.launch, r.reused) for r in merged] == [(0, False), (1, False), (2, True)] and shared == 1
    assert merged[1] is two[1]
    failed = [row(0, False, kernel=None)]  # a copy whose body raised before any launch: the other's rows
    assert merged_copies([failed, two]) == (two, 0)
    assert merged_copies([failed]) == (failed, 0)
