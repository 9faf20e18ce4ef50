"""The keys of a survey on a Ray cluster (:mod:`.ray_executor`) handed to its actors: at most :data:`DEPTH`
calls each, the answers written into the local store on writer threads, copies of a key running long given to
idle actors at the tail, time-outs and lost actors."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections import deque
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.keys import Key
from ..model.results import Row
from .protocol import KeyFinished
from .ray_actor import KeyShipped, store_objects
from .ray_node import shipper_class

if TYPE_CHECKING:
    from .ray_executor import RaySurvey, _Actor

# Calls in flight per actor: the one it runs, and one queued behind it so that it never waits for the
# survey between keys.
DEPTH = 2

# Copies of a key in flight that idle actors (of any node) may take at the survey's tail: keys compiling for
# HELP_MIN_S or more (a Ray call says nothing before it ends, so a key's launches are not known), at most
# HELP_COPIES of each (a copy of a key of one launch waits for it and answers its rows).
HELP_MIN_S = 2.0
HELP_COPIES = 4

# Threads writing what comes back into the local store.
STORING_THREADS = 4


class HeldAnswers:
    """Answers stored whose rows name objects this store lacks: compiled on another node, those come back
    with that node's answer. An answer's rows are taken once every object they name is here."""

    def __init__(self, root: Path):
        self.root = root  # the store's directory: a row's object path is relative to it
        self.held: list[tuple[Key, KeyShipped]] = []

    def __bool__(self) -> bool:
        return bool(self.held)

    def absent(self, shipped: KeyShipped) -> dict[str, str]:
        """The objects ``shipped``'s rows name that are not here (sha256 -> path)."""
        rows = shipped.answer.rows if isinstance(shipped.answer, KeyFinished) else ()
        return {r.object.sha256: r.object.path for r in rows
                if r.object is not None and not (self.root / r.object.path).is_file()}

    def ready(self, key: Key, shipped: KeyShipped) -> bool:
        """Whether ``shipped``'s rows can be taken now; if not, it is held."""
        if self.absent(shipped):
            self.held.append((key, shipped))
            return False
        return True

    def released(self) -> list[tuple[Key, KeyShipped]]:
        """The answers held whose objects are all here now (in the order held); they are held no more."""
        out: list[tuple[Key, KeyShipped]] = []
        still: list[tuple[Key, KeyShipped]] = []
        for item in self.held:
            (still if self.absent(item[1]) else out).append(item)
        self.held = still
        return out

    def wanted(self) -> dict[str, str]:
        """Every object the answers held lack."""
        return {sha: path for _, shipped in self.held for sha, path in self.absent(shipped).items()}

    def builds(self) -> dict[str, str]:
        """The Triton hash of each object :meth:`wanted` names (sha256 -> hash): the build it came from."""
        wanted = self.wanted()
        return {r.object.sha256: r.triton_hash for _, shipped in self.held
                if isinstance(shipped.answer, KeyFinished) for r in shipped.answer.rows
                if r.object is not None and r.object.sha256 in wanted and r.triton_hash}

    def dropped(self) -> list[tuple[Key, KeyShipped]]:
        """The answers still held (their objects lost), held no more."""
        out, self.held = self.held, []
        return out


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def said_cause(exc: BaseException) -> str:
    """What a Ray error says of its cause, in one line: the exception line ending the remote traceback it
    quotes, when it quotes one (an actor whose start failed: Ray's first line is only "The actor died because
    of an error raised in its creation task", or "Failed to deserialize exception" when the exception cannot
    travel), else its first line."""
    lines = [line for line in _COLOUR.sub("", str(exc)).strip().splitlines() if line.strip()]
    quoted = any(line.lstrip().startswith('File "') for line in lines)
    if quoted and lines[-1][:1] not in (" ", "^"):
        return lines[-1].strip()
    return lines[0].strip() if lines else type(exc).__name__


def run_keys(state: RaySurvey, keys: list[Key], cost: Any, capacity: int,
             on_rows: Any) -> dict[tuple[str, str], list[Row]]:
    """Send keys to actors (at most :data:`DEPTH` calls each), collect rows, enforce the time-out, and
    send again, once, the keys of actors that are lost.

    Once every key is handed out, an idle actor takes a copy of a key another actor has been compiling
    for :data:`HELP_MIN_S` or more (at most :data:`HELP_COPIES` copies): through the build locks (the
    node store's, the survey's claims across nodes) the copies share the key's launches as local workers
    do (see :func:`.survey._run_keys`), and the key's rows are merged from them."""
    from .survey import KeyCopies, _error_row, wanted_target

    ray = state.ray
    options = state.options
    pending = list(reversed(keys))  # pop() from the end keeps the given order
    results: dict[tuple[str, str], list[Row]] = {}
    resent: set[tuple[str, str]] = set()
    copies = KeyCopies()  # calls in flight for each key, and the rows of those answered

    def finish(done: Key, rows: list[Row]) -> None:
        results[(done.id, done.target)] = rows
        state.progress.on_key(done, rows)
        on_rows(rows, not pending)

    def copy_done(done: Key, rows: list[Row] | None) -> bool:
        """One call of ``done`` ended with ``rows`` (None: lost). True when the key is finished or carried by
        another copy; False when it was its last copy and it left no rows (the caller decides)."""
        last, merged = copies.ended(done, rows)
        if merged is not None:
            finish(done, merged)
        return not last or merged is not None

    def take(target: str) -> Key | None:
        for i in range(len(pending) - 1, -1, -1):
            if pending[i].target == target:
                return pending.pop(i)
        return None

    def send(actor: _Actor, key: Key, now: float) -> None:
        if not actor.calls:
            actor.head_since = now
        copies.sent(key, actor)
        actor.calls.append((key, actor.handle.survey.remote(key, options.reuse_results)))

    def helped(actor: _Actor, now: float) -> Key | None:
        """A key another actor has been compiling for :data:`HELP_MIN_S` or more that ``actor`` can help
        with (the longest, by its estimate or its time so far, per copy)."""
        if not options.reuse_results:  # copies share launches through build locks, which --force takes none of
            return None
        best: tuple[float, Key] | None = None
        for other in state.actors:
            if other is actor or not other.calls:
                continue
            k = other.calls[0][0]
            running = now - other.head_since
            if (k.target != actor.target or copies.out(k) >= HELP_COPIES or running < HELP_MIN_S
                    or not copies.may_help(k, actor)):
                continue
            share = max(cost(k), running) / copies.out(k)
            if best is None or share > best[0]:
                best = (share, k)
        return best[1] if best is not None else None

    def replace_actor() -> None:
        """Start an actor in the place of one ended, if the cluster has a CPU for it now (else the loop
        starts one once it has)."""
        if pending and state.room():
            state.spawn(wanted_target(pending, state.actors, cost))

    def lose(actor: _Actor, why: str) -> None:
        """``actor`` is gone (its node, or its process): every key it held goes again, once, unless another
        copy carries it."""
        for k, _ in actor.calls:
            if copy_done(k, None):
                continue
            if (k.id, k.target) in resent:
                finish(k, [_error_row(k, f"{why}; it was in flight on an actor lost before", transient=True)])
            else:
                resent.add((k.id, k.target))
                state.rescheduled += 1
                pending.append(k)
        actor.calls.clear()
        state.kill(actor)
        print(f"regsurvey: warning: {why}; its keys are surveyed again", file=sys.stderr)
        replace_actor()

    def take_rows(key: Key, shipped: KeyShipped) -> None:
        if isinstance(shipped.answer, KeyFinished):
            copy_done(key, list(shipped.answer.rows))
        else:
            copy_done(key, [_error_row(key, shipped.answer.error, transient=shipped.answer.transient)])

    def stored() -> None:
        """The answers whose objects are stored now: their rows are the survey's (in the order answered),
        once every object they name is here (held until then)."""
        arrived = False
        while storing and storing[0][2].done():
            key, shipped, written = storing.popleft()
            written.result()  # a store that failed (a full disk) fails the survey, as it would here
            state.account(shipped)
            arrived = True
            if held.ready(key, shipped):
                take_rows(key, shipped)
        if arrived and held:
            for key, shipped in held.released():
                take_rows(key, shipped)

    def end_on_nodes() -> None:
        """At the end, on the nodes where something is left to do: the answers still held name objects whose
        compiling node's answer was lost, so that node (the claims say which) sends what its store holds
        of them, through an actor of the survey alive there, else a shipper started there; and a shipper
        removes what actors killed there (a time-out, a lost call) left on a node no actor of the survey is
        left on. A key whose objects are still missing (their node lost too) is an error (transient:
        surveyed again next time)."""
        wanted = held.wanted()
        builds = held.builds()
        where: dict[str, str] = {}
        if builds:
            with contextlib.suppress(Exception):  # the claims actor gone: every node with an actor is asked
                where = ray.get(state.claims.nodes_of.remote(sorted(set(builds.values()))), timeout=30)
        live = {a.node: a.handle for a in state.actors if a.node}
        needed = ({where[h] for h in builds.values() if h in where} if where else set(live)) if wanted else set()
        visit = needed | state.left_behind
        alive: set[str] = set()
        with contextlib.suppress(Exception):
            alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        if "" in visit:  # an actor killed before it said where it ran: every node
            visit |= alive
        shippers = {}
        for n in (visit & alive) - live.keys():
            with contextlib.suppress(Exception):  # a node gone
                shippers[n] = shipper_class(n).remote(state.survey)
        asked = [live[n].ship.remote(wanted) for n in needed & live.keys()]
        asked += [h.ship.remote(wanted) for n, h in shippers.items() if n in needed]
        for ref in asked:
            with contextlib.suppress(Exception):  # an actor or node lost meanwhile, or a node's full disk
                got = ray.get(ref, timeout=60)
                store_objects(got, state.objects)
                state.fetched += len(got)
        closing = []
        for shipper in shippers.values():
            with contextlib.suppress(Exception):
                closing.append(shipper.close.remote())
        with contextlib.suppress(Exception):
            ray.wait(closing, num_returns=len(closing), timeout=30)
        for shipper in shippers.values():
            with contextlib.suppress(Exception):
                ray.kill(shipper, no_restart=True)
        for key, shipped in held.released():
            take_rows(key, shipped)
        for key, _ in held.dropped():
            copy_done(key, [_error_row(key, "an identical kernel it reused was compiled on a node whose answer was "
                                            "lost, with the kernel's object", transient=True)])

    for _ in range(capacity - len(state.actors)):
        state.spawn(wanted_target(pending, state.actors, cost))

    # What comes back is written into the local store on threads of its own (files: the writes run beside
    # each other and beside this loop), so the loop's own time per build is Ray's and the bookkeeping.
    writers = ThreadPoolExecutor(max_workers=STORING_THREADS, thread_name_prefix="regsurvey-store")
    storing: deque[tuple[Key, KeyShipped, Future[None]]] = deque()
    held = HeldAnswers(state.objects.root.parent)  # answers stored whose rows wait for another answer's objects
    try:
        while pending or storing or any(a.calls for a in state.actors):
            stored()
            now = time.monotonic()
            replaced = False
            for actor in list(state.actors):
                if not pending and not actor.calls:
                    helping = helped(actor, now)
                    if helping is not None:
                        send(actor, helping, now)
                    continue
                while len(actor.calls) < DEPTH and pending:
                    nxt = take(actor.target)
                    if nxt is None:
                        if not actor.calls:  # nothing of its target left: an actor for a target with work
                            state.kill(actor, polite=True)
                            state.spawn(wanted_target(pending, state.actors, cost))
                            replaced = True
                        break
                    send(actor, nxt, now)
            if replaced:
                continue  # the new actor gets its keys now, not after the busy ones next answer
            if pending and now - state.last_capacity_check > 0.5:
                state.last_capacity_check = now
                if len(state.actors) < state.capacity() and (not state.actors or state.room()):
                    state.spawn(wanted_target(pending, state.actors, cost))  # none left: one waits for a CPU
                    continue
            heads = {a.calls[0][1]: a for a in state.actors if a.calls}
            if not heads:
                if pending and not state.actors:
                    state.spawn(wanted_target(pending, state.actors, cost))
                if storing:
                    futures.wait([storing[0][2]], timeout=0.05)
                else:
                    time.sleep(0.05)
                continue
            wait_for = max(0.0, min(a.head_since + options.timeout - now for a in heads.values()))
            if pending and len(state.actors) < capacity:
                wait_for = min(wait_for, 0.5)  # look for room for another actor now and then
            if not pending and any(not a.calls for a in state.actors):
                wait_for = min(wait_for, 0.5)  # an idle actor may soon help with a key running long
            if storing:
                wait_for = min(wait_for, 0.005)  # answers being stored: their rows are taken as they are
            ready, _ = ray.wait(list(heads), num_returns=1, timeout=wait_for)
            if ready:
                ready, _ = ray.wait(list(heads), num_returns=len(heads), timeout=0)
            now = time.monotonic()
            for ref in ready:
                actor = heads[ref]
                key, _ = actor.calls.popleft()
                took = now - actor.head_since
                actor.head_since = now
                try:
                    shipped: KeyShipped = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    actor.calls.appendleft((key, ref))
                    lose(actor, f"Ray actor lost ({type(exc).__name__}: {first_line(exc)[:200]})")
                    continue
                state.calls += 1
                actor.answered += 1
                actor.node = shipped.node
                if actor.answered > 1:  # the first call also waited for the actor to start and import the project
                    state.timed_calls += 1
                    state.overhead_s += max(0.0, took - shipped.seconds)
                storing.append((key, shipped, writers.submit(shipped.store, state.objects, state.cache)))
                state.nodes.add(shipped.node)
            now = time.monotonic()
            for actor in list(state.actors):
                if actor.calls and now >= actor.head_since + options.timeout:
                    late, _ = actor.calls.popleft()
                    if not copy_done(late, None):
                        finish(late, [_error_row(late, f"timed out after {options.timeout:g} s (--timeout)",
                                                 transient=True)])
                    for k, _ in reversed(actor.calls):  # not started: not sent twice
                        if not copy_done(k, None):
                            pending.append(k)
                    actor.calls.clear()
                    state.kill(actor)
                    replace_actor()
        if held or state.left_behind:
            end_on_nodes()
        with contextlib.suppress(Exception):
            state.across_nodes = ray.get(state.claims.stats.remote(), timeout=10)["builds_across_nodes"]
    except BaseException:
        state.close()
        raise
    finally:
        writers.shutdown(wait=True)
    state.keys_shared, state.launches_shared = copies.keys_shared, copies.launches_shared
    return results
