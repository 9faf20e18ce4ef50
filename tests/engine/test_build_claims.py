"""The survey's build claims across Ray nodes (engine/ray_actor.BuildClaims), driven directly: its logic needs
no cluster (it is an asyncio class Ray runs as an actor)."""

from __future__ import annotations

import asyncio

from regsurvey.engine.ray_actor import BuildClaims
from regsurvey.model.results import ObjectRef, ObjectReport
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
