"""Builds shared across Ray nodes, driven directly (their logic needs no cluster): the survey's build claims
(engine/ray_actor.BuildClaims, an asyncio class Ray runs as an actor), and the answers held until the objects
they name come back (engine/ray_answers.HeldAnswers)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from regsurvey.engine.protocol import KeyFinished
from regsurvey.engine.ray_actor import BuildClaims, KeyShipped
from regsurvey.engine.ray_answers import HeldAnswers
from regsurvey.engine.ray_node import NodeShipper, leave_node, node_store, shipped_object, store_objects
from regsurvey.model.keys import Key
from regsurvey.model.results import ObjectRef, ObjectReport, Row
from regsurvey.store.objectstore import ObjectStore
from regsurvey.store.resultcache import CachedResult

ENTRY = CachedResult(kernel="k", report=ObjectReport({"regs": 40}, ()), object=ObjectRef("ab/ab.cubin", "ab"),
                     compile_s=1.5)


def test_one_actor_compiles_a_build_and_another_node_takes_its_result() -> None:
    async def run() -> None:
        claims = BuildClaims()
        assert (await claims.claim("h", "a", "node1"))[0] == "yours"
        assert (await claims.claim("h", "a", "node1"))[0] == "yours"  # asked again by its holder
        assert (await claims.claim("h", "b", "node2"))[0] == "held"
        waiting = asyncio.ensure_future(claims.claim("h", "b", "node2", wait_s=30))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await claims.settle("h", "a", ENTRY, None)
        assert await asyncio.wait_for(waiting, 5) == ("done", ENTRY, None)  # at once, not after 30 s
        assert await claims.claim("h", "c", "node1") == ("done", ENTRY, None)
        assert (await claims.stats())["builds_across_nodes"] == 1  # node2's; node1's own build is no crossing
        assert await claims.nodes_of(["h", "unknown"]) == {"h": "node1"}  # where the build ran, for a fetch

    asyncio.run(run())


def test_a_failure_is_settled_and_a_build_left_without_result_is_free() -> None:
    async def run() -> None:
        claims = BuildClaims()
        await claims.claim("bad", "a", "n1")
        await claims.settle("bad", "a", None, "LLVM ERROR: out of registers")
        assert await claims.claim("bad", "b", "n2") == ("done", None, "LLVM ERROR: out of registers")
        await claims.claim("h", "a", "n1")
        await claims.settle("h", "b", ENTRY, None)  # not b's: ignored
        assert (await claims.claim("h", "b", "n2"))[0] == "held"
        await claims.settle("h", "a", None, None)  # a's build left nothing (a full disk): the next compiles it
        assert (await claims.claim("h", "b", "n2"))[0] == "yours"

    asyncio.run(run())


def test_a_lost_actor_frees_its_claims_for_those_waiting() -> None:
    async def run() -> None:
        claims = BuildClaims()
        await claims.claim("h1", "a", "n1")
        await claims.claim("h2", "a", "n1")
        waiting = asyncio.ensure_future(claims.claim("h1", "b", "n2", wait_s=30))
        await asyncio.sleep(0.05)
        await claims.lost("a")
        assert (await asyncio.wait_for(waiting, 5))[0] == "yours"  # b compiles it now
        assert (await claims.claim("h2", "c", "n3"))[0] == "yours"
        assert (await claims.claim("h1", "c", "n3", wait_s=0.1))[0] == "held"  # b's now, after a short wait

    asyncio.run(run())


def _answer(key: Key, *objects: ObjectRef) -> KeyShipped:
    rows = tuple(Row(key=key.id, kind=key.kind, axes={}, target=key.target, kernel="k", status="ok", launch=i,
                     object=ref, triton_hash=f"h{i}", reused=True) for i, ref in enumerate(objects))
    return KeyShipped(KeyFinished(key, rows))


def test_an_answer_naming_another_nodes_object_is_held_until_it_comes(tmp_path: Path) -> None:
    """A row reused from another node's build names an object that comes back with that node's answer: the
    rows wait for it; one the node's answer never brought is asked of the nodes' stores (what ``ship``
    sends: the object and the texts beside it), else the key is dropped."""
    node, here = ObjectStore(tmp_path / "node" / "objects"), ObjectStore(tmp_path / "here" / "objects")
    sha, rel = node.put(b"a cubin compiled on the other node", "cubin", extras={"ptx": ".version 8.7\n"})
    other_sha, other_rel = node.put(b"another cubin", "cubin")
    known_sha, known_rel = here.put(b"a cubin this store had", "cubin")
    held = HeldAnswers(here.root.parent)
    first, second, third = (Key(kind="mm", axes=(("n", n),), target="sm90", id=f"mm/n{n}") for n in (1, 2, 3))
    assert held.ready(first, _answer(first, ObjectRef(known_rel, known_sha)))  # all here: taken at once
    assert not held.ready(second, _answer(second, ObjectRef(known_rel, known_sha), ObjectRef(rel, sha)))
    assert not held.ready(third, _answer(third, ObjectRef(other_rel, other_sha)))
    assert held and held.wanted() == {sha: rel, other_sha: other_rel}
    assert held.released() == []
    store_objects((shipped_object(node, rel, sha),), here)  # the other node's answer, stored
    assert [k for k, _ in held.released()] == [second]
    assert here.get(rel, sha) == b"a cubin compiled on the other node" and here.text(rel, "ptx") == ".version 8.7\n"
    assert held.wanted() == {other_sha: other_rel}
    assert held.builds() == {other_sha: "h0"}  # the build the missing object came from
    assert [k for k, _ in held.dropped()] == [third] and not held


def test_a_shipper_sends_what_the_nodes_store_holds_and_clears_what_dead_actors_left(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    """At a survey's end, on a node where no actor of the survey is alive: the node's store sends the objects
    asked for (those it has), and what actors killed there left (their checkout, their marker, the store
    once no actor is left) is removed; a live actor's is kept until it leaves."""
    import os
    import subprocess
    import sys

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = node_store("s1")
    store = ObjectStore(shared / "objects")
    sha, rel = store.put(b"compiled by an actor killed since", "cubin", extras={"ptx": ".version 8.7\n"})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "regsurvey-ray-dead" / "tree").mkdir(parents=True)
    (shared / "actors").mkdir()
    (shared / "actors" / f"{dead.pid}-regsurvey-ray-dead").touch()
    (tmp_path / "regsurvey-ray-alive").mkdir()
    (shared / "actors" / f"{os.getpid()}-regsurvey-ray-alive").touch()  # this process: alive
    shipper = NodeShipper("s1")
    got = shipper.ship({sha: rel, "f" * 64: "ff/" + "f" * 64 + ".cubin"})
    here = ObjectStore(tmp_path / "here" / "objects")
    store_objects(got, here)
    assert [o.sha256 for o in got] == [sha] and here.text(rel, "ptx") == ".version 8.7\n"
    shipper.close()
    assert not (tmp_path / "regsurvey-ray-dead").exists()
    assert [m.name for m in (shared / "actors").iterdir()] == [f"{os.getpid()}-regsurvey-ray-alive"]
    (shared / "actors" / f"{os.getpid()}-regsurvey-ray-alive").unlink()  # it left
    leave_node(shared)
    assert not shared.exists() and (tmp_path / "regsurvey-ray-alive").exists()  # its own: it removes it


def test_what_killed_surveys_left_on_a_node_is_swept_an_hour_later(tmp_path: Path) -> None:
    """An actor starting on a node removes what earlier surveys' actors left there with nothing to clean up
    after them (Ctrl-C, a node lost and back): stores with no actor alive, checkouts no live actor names,
    once an hour old; a live survey's and anything recent are kept."""
    import os
    import subprocess
    import sys
    import time

    from regsurvey.engine.ray_node import STALE_S, sweep_node

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    def survey(name: str, pid: int) -> tuple[Path, Path]:
        store, checkout = tmp_path / f"regsurvey-node-{name}", tmp_path / f"regsurvey-ray-{name}"
        (store / "actors").mkdir(parents=True)
        (store / "objects").mkdir()
        (checkout / "tree").mkdir(parents=True)
        (store / "actors" / f"{pid}-{checkout.name}").touch()
        return store, checkout

    killed, alive = survey("killed", dead.pid), survey("alive", os.getpid())
    orphan, recent = tmp_path / "regsurvey-ray-orphan", tmp_path / "regsurvey-ray-recent"
    orphan.mkdir()
    recent.mkdir()
    mine = tmp_path / "unrelated"
    mine.mkdir()
    old = time.time() - STALE_S - 60
    for path in [*killed, *alive, orphan, mine]:
        os.utime(path, (old, old))
    sweep_node(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "regsurvey-node-alive", "regsurvey-ray-alive", "regsurvey-ray-recent", "unrelated"]
    sweep_node(tmp_path, now=time.time() + 2 * STALE_S)  # later: the recent one is old and named by no one
    assert not recent.exists() and alive[0].exists() and alive[1].exists()
