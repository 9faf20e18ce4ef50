"""What comes back from a survey's Ray actors (engine/ray_answers.py): answers written into the local store on
writer threads, their rows taken in the order answered once every object they name is here."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from regsurvey.engine.protocol import Failed, KeyFinished
from regsurvey.engine.ray_actor import KeyShipped
from regsurvey.engine.ray_answers import Storing, answered_rows
from regsurvey.engine.ray_node import ShippedObject
from regsurvey.model.keys import Key
from regsurvey.model.results import ObjectRef, Row
from regsurvey.store.objectstore import ObjectStore
from regsurvey.store.resultcache import ResultCache


def key(name: str) -> Key:
    return Key(kind=name, axes=(), target="sm90", id=f"{name}/1")


def answer(k: Key, names: bytes, ships: bytes | None = None) -> KeyShipped:
    """``k``'s answer: one row naming the object ``names`` (its bytes), shipped with it when ``ships`` is."""
    sha = hashlib.sha256(names).hexdigest()
    row = Row(key=k.id, kind=k.kind, axes={}, target=k.target, kernel="k", status="ok",
              object=ObjectRef(path=f"objects/{sha[:2]}/{sha}.cubin", sha256=sha))
    shipped = () if ships is None else (ShippedObject(hashlib.sha256(ships).hexdigest(), "cubin", ships, {}),)
    return KeyShipped(KeyFinished(k, (row,)), shipped)


def drain(storing: Storing, accounted: list[str], taken: list[str]) -> None:
    deadline = time.monotonic() + 30
    while storing and time.monotonic() < deadline:
        storing.wait(0.05)
        storing.stored(lambda s: accounted.append(s.answer.key.id),  # type: ignore[union-attr]
                       lambda k, _: taken.append(k.id))


def test_rows_are_taken_in_the_order_answered_once_their_objects_are_here(tmp_path: Path) -> None:
    objects = ObjectStore(tmp_path / "store" / "objects")
    storing = Storing(objects, ResultCache(objects))
    accounted: list[str] = []
    taken: list[str] = []
    try:
        storing.put(key("a"), answer(key("a"), b"cubin a", ships=b"cubin a"))
        storing.put(key("b"), answer(key("b"), b"cubin c"))  # took c's build from another node: not here yet
        drain(storing, accounted, taken)
        assert (accounted, taken) == (["a/1", "b/1"], ["a/1"])
        assert storing.held.wanted() == {hashlib.sha256(b"cubin c").hexdigest():
                                         f"objects/{hashlib.sha256(b'cubin c').hexdigest()[:2]}/"
                                         f"{hashlib.sha256(b'cubin c').hexdigest()}.cubin"}
        storing.put(key("c"), answer(key("c"), b"cubin c", ships=b"cubin c"))  # the node that compiled it answers
        drain(storing, accounted, taken)
        assert (accounted, taken) == (["a/1", "b/1", "c/1"], ["a/1", "c/1", "b/1"])
        assert not storing.held
    finally:
        storing.close()


def test_a_failed_answer_is_the_keys_error_row() -> None:
    k = key("a")
    [row] = answered_rows(k, KeyShipped(Failed("worker failed: boom", k, transient=True)))
    assert (row.key, row.ok, row.error, row.transient) == ("a/1", False, "worker failed: boom", True)
