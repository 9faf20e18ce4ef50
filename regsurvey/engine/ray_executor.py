"""Surveys on a Ray cluster (``--ray ADDRESS``, ``REGSURVEY_RAY``): each key is a call to a Ray actor.

What travels: the checkout's files (those git lists: ``git ls-files -co --exclude-standard``; every file
outside git) as one gzipped tar, put once into Ray's object store. Each actor (``num_cpus=1``, spread over
the nodes) unpacks it into a directory of its own on its node, imports it once for its target with the
:class:`~regsurvey.engine.worker.Worker` local workers use (an objects directory of its own beside it),
then compiles the keys sent to it one call at a time. Each call answers the key's rows and, for each
row's object, the object's bytes and the texts kept beside it (amdgcn, ptx, ..., pressure) and its
result-cache entry, which the survey stores in the local store: reports, ``explain`` and ``lint`` read
them as they read a local survey's. Nodes need not share a filesystem, only regsurvey and the toolchain.

What stays local: the store, the result cache and its costs, scheduling (slowest first, per target, as
:mod:`.survey` does), the deferred lint of cubins, and the survey itself.

Failures: a key that takes longer than ``--timeout`` is an error row (transient) and its actor is killed
(another takes its place); an actor or node lost has its keys in flight sent again, once, to other
actors, then they are error rows (transient); Ctrl-C cancels the calls in flight and kills the actors,
and what finished before is stored.

``ray`` is imported only here, and only when a survey asks for it (the ``ray`` extra).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections import deque
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..model.keys import Key
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Row, Survey
from ..model.targets import DEFAULT_LIST_TARGET, get_target
from ..model.version import READER_REVISION
from ..revisions.checkout import Checkout
from .protocol import Failed, KeyFinished
from .ray_actor import KeyShipped, SurveyActor, pack_tree

ENV_VAR = "REGSURVEY_RAY"

# Calls in flight per actor: the one it runs, and one queued behind it so that it never waits for the
# survey between keys.
DEPTH = 2

# Copies of a key in flight that idle actors of its node may take at the survey's tail: keys compiling for
# HELP_MIN_S or more (a Ray call says nothing before it ends, so a key's launches are not known), at most
# HELP_COPIES of each (a copy of a key of one launch waits for it and answers its rows).
HELP_MIN_S = 2.0
HELP_COPIES = 4

# Threads writing what comes back into the local store.
STORING_THREADS = 4

# Environment variables the actors take from the survey's environment (Triton's settings, regsurvey's);
# paths that mean something only here stay here.
_ENV_PREFIXES = ("TRITON_", "REGSURVEY_")
_ENV_LOCAL = frozenset({"TRITON_CACHE_DIR", "TRITON_HOME", "REGSURVEY_RESULTS", ENV_VAR, "REGSURVEY_SERVER",
                        "REGSURVEY_SERVER_DIR", "REGSURVEY_WORKER_START"})


def ray_address(options: SurveyOptions) -> str | None:
    """The Ray cluster the survey runs on (``--ray``, else ``REGSURVEY_RAY``), or None: local workers."""
    return options.ray_address or os.environ.get(ENV_VAR, "").strip() or None


def _actor_class() -> Any:
    import ray

    return ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(SurveyActor)


# -- the survey -----------------------------------------------------------------------------------------


@dataclass
class _Actor:
    handle: Any
    target: str
    calls: deque[tuple[Key, Any]] = field(default_factory=deque)  # (key, its call's ObjectRef), in order
    head_since: float = 0.0  # monotonic time the first call in flight began (sent, or the one before it done)
    answered: int = 0  # calls answered (the first also waited for the actor to start and import the project)
    node: str = ""  # the Ray node it runs on, once known
    where: Any = None  # the call asking it for its node (the first it runs)


class RaySurvey:
    """The survey's state on the cluster: the actors, the keys pending, the rows received."""

    def __init__(self, checkout: Checkout, objects_dir: Path, options: SurveyOptions, progress: Progress):
        import ray

        from ..store.objectstore import ObjectStore
        from ..store.resultcache import ResultCache

        self.ray = ray
        self.options = options
        self.progress = progress
        self.objects = ObjectStore(objects_dir)
        self.cache = ResultCache(self.objects)
        self.actor_class = _actor_class()
        environ = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES) and k not in _ENV_LOCAL}
        self.tree = ray.put(pack_tree(checkout.root))
        # The results of identical kernels this store holds (any commit's): a node reuses them rather than
        # compiling (it sends back a row naming the object here, not the object).
        known = self.cache.entries() if options.reuse_results else {}
        survey = uuid.uuid4().hex[:16]  # names the store this survey's actors share on each node
        self.actor_args = (environ, options.triton_cache_dir is not None, ray.put(known), survey)
        self.actors: list[_Actor] = []
        self.started = 0
        self.phases: dict[str, float] = {}
        self.peak_rss_mb = 0.0
        self.calls = 0
        self.timed_calls = 0  # calls whose overhead is measured: each actor's but the first
        self.overhead_s = 0.0  # their seconds between the call's start and its answer here, not in the actor
        self.rescheduled = 0
        self.keys_shared = 0  # keys whose launches actors of one node shared (survey.SurveyTiming's)
        self.launches_shared = 0
        self.nodes: set[str] = set()
        self.last_capacity_check = 0.0

    # -- actors

    def spawn(self, target: str) -> _Actor:
        handle = self.actor_class.options(scheduling_strategy="SPREAD").remote(self.tree, target, *self.actor_args)
        self.started += 1
        actor = _Actor(handle, target, where=handle.where.remote())
        self.actors.append(actor)
        return actor

    def node_of(self, actor: _Actor) -> str:
        """The node ``actor`` runs on, once it has said (else "": not yet started)."""
        if not actor.node and actor.where is not None:
            ready, _ = self.ray.wait([actor.where], timeout=0)
            if ready:
                with contextlib.suppress(Exception):  # an actor lost: its calls say so
                    actor.node = self.ray.get(actor.where)[0]
                actor.where = None
        return actor.node

    def kill(self, actor: _Actor, polite: bool = False) -> None:
        """End ``actor``: ``polite``, it removes its directory first (an actor that hangs or is lost
        cannot)."""
        if polite:
            with contextlib.suppress(Exception):
                self.ray.get(actor.handle.close.remote(), timeout=10)
        with contextlib.suppress(Exception):
            self.ray.kill(actor.handle, no_restart=True)
        if actor in self.actors:
            self.actors.remove(actor)

    def capacity(self) -> int:
        """Actors the cluster can run at once: its CPUs (the nodes alive now)."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def room(self) -> bool:
        """Whether a CPU is free for another actor now."""
        return self.ray.available_resources().get("CPU", 0.0) >= 1.0

    def close(self) -> None:
        """Cancel every call in flight, end every actor (politely when it is idle)."""
        for actor in self.actors:
            for _, ref in actor.calls:
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref)
        for actor in list(self.actors):
            self.kill(actor, polite=not actor.calls)

    def request(self, actor: _Actor, call: Any, timeout: float) -> Any:
        """A call's answer (not a key's): a SurveyError when it fails, is lost or is late."""
        from .survey import SurveyError

        try:
            answer = self.ray.get(call, timeout=timeout)
        except self.ray.exceptions.GetTimeoutError:
            raise SurveyError(f"the keys files did not finish importing on the cluster within {timeout:.0f} s: a "
                              "keys file, or what it imports, hangs") from None
        except self.ray.exceptions.RayError as exc:
            raise SurveyError(f"the Ray actor importing the keys files was lost: {_first_line(exc)}") from None
        if isinstance(answer, Failed):
            raise SurveyError(answer.error)
        return answer

    # -- what comes back

    def account(self, shipped: KeyShipped) -> None:
        """Add a call's timing to the survey's, and show its notes."""
        answer = shipped.answer
        if isinstance(answer, KeyFinished):
            for phase, seconds in answer.timing.items():
                self.phases[phase] = self.phases.get(phase, 0.0) + seconds
            self.peak_rss_mb = max(self.peak_rss_mb, answer.peak_rss_mb)
        for line in answer.notes if isinstance(answer, KeyFinished) else ():
            print(line, file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def survey_on_ray(checkout: Checkout, objects_dir: Path, options: SurveyOptions,
                  progress: Progress | None = None) -> Survey:
    """:func:`regsurvey.engine.survey.survey_checkout` on the Ray cluster :func:`ray_address` names."""
    from .survey import SurveyError

    try:
        import ray
    except ImportError:
        raise SurveyError("--ray needs Ray: pip install 'regsurvey[ray]'") from None
    address = ray_address(options)
    connected_here = False
    if not ray.is_initialized():
        try:
            ray.init(address=None if address == "local" else address, log_to_driver=False,
                     logging_level=logging.ERROR)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise SurveyError(f"cannot join the Ray cluster at {address}: {_first_line(exc)}") from None
        connected_here = True
    try:
        return _survey(RaySurvey(checkout, objects_dir, options, progress or Progress()), checkout, objects_dir)
    finally:
        if connected_here:
            ray.shutdown()


def _survey(state: RaySurvey, checkout: Checkout, objects_dir: Path) -> Survey:
    from .deferred_lint import DeferredLint
    from .survey import IMPORT_TIMEOUT_S, KeyCosts, SurveyError, _selected, starting_targets

    options = state.options
    start, driver_cpu = time.monotonic(), time.thread_time()
    costs = KeyCosts(objects_dir.parent / "costs.json")
    deferred: DeferredLint | None = None
    results: dict[tuple[str, str], list[Row]] | None = None
    try:
        listing_target, asked = starting_targets(options, checkout, costs)
        first = state.spawn(listing_target)
        listing = first.handle.list_keys.remote(tuple(options.targets) if options.targets else None)
        if asked:  # the targets are known (or guessed): the other actors start (and import) while the first lists
            for i in range(1, state.capacity()):
                state.spawn(asked[i % len(asked)])
        listed = state.request(first, listing, IMPORT_TIMEOUT_S)
        keys = [k for k in listed.keys if _selected(k, options)]
        if not keys:
            raise SurveyError("no key matches the selection (--kind/--key)")
        toolchain = {}
        for backend in sorted({get_target(k.target).backend for k in keys}):
            toolchain[backend] = state.request(first, first.handle.toolchain.remote(backend), 120).toolchain
        state.progress.on_start(len(keys))
        listed_at = time.monotonic()
        ordered = costs.longest_first(keys)
        capacity = state.capacity()
        deferred = DeferredLint(objects_dir, capacity)
        results = _run_keys(state, ordered, costs.estimate, capacity, deferred.add)
        costs.update(r for rows in results.values() for r in rows)
    finally:
        state.close()
        if deferred is not None and results is None:
            deferred.close()
    order = {(k.id, k.target): i for i, k in enumerate(keys)}
    rows = sorted((r for rs in results.values() for r in rs), key=lambda r: (order[(r.key, r.target)], r.launch))
    rows, lint_s = deferred.finish(rows)
    phases = dict(state.phases)
    if lint_s:
        phases["lint_s"] = phases.get("lint_s", 0.0) + lint_s
    end = time.monotonic()
    timing = {"jobs": float(capacity), "wall_s": end - start, "list_s": listed_at - start,
              **dict(sorted(phases.items())), "workers_started": float(state.started),
              "ray_nodes": float(len(state.nodes)), "ray_calls": float(state.calls),
              "ray_rescheduled": float(state.rescheduled)}
    if state.timed_calls:
        timing["ray_overhead_per_build_ms"] = 1000 * state.overhead_s / state.timed_calls
    if rows:  # the CPU of the survey's own thread: its serial part (the loop), what bounds a survey of many nodes
        timing["ray_driver_cpu_per_build_ms"] = 1000 * (time.thread_time() - driver_cpu) / len(rows)
    if state.peak_rss_mb:
        timing["worker_peak_rss_mb"] = state.peak_rss_mb
    if state.keys_shared:
        timing["keys_shared"] = float(state.keys_shared)
        timing["launches_shared"] = float(state.launches_shared)
    targets = tuple(dict.fromkeys(k.target for k in keys))
    return Survey(commit=checkout.commit, label=checkout.label, targets=targets, toolchain=toolchain,
                  rows=tuple(rows), dirty=checkout.dirty,
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  timing={k: round(v, 3) for k, v in timing.items()}, reader=READER_REVISION)


def _wanted_target(pending: list[Key], actors: list[_Actor], cost: Any) -> str:
    """The target a new actor should take: the most pending compile seconds per actor already on it."""
    load: dict[str, float] = {}
    for k in pending:
        load[k.target] = load.get(k.target, 0.0) + max(cost(k), 1e-3)
    if not load:
        return actors[0].target if actors else DEFAULT_LIST_TARGET
    serving: dict[str, int] = {}
    for a in actors:
        serving[a.target] = serving.get(a.target, 0) + 1
    return max(load, key=lambda t: load[t] / (1 + serving.get(t, 0)))


def _run_keys(state: RaySurvey, keys: list[Key], cost: Any, capacity: int,
              on_rows: Any) -> dict[tuple[str, str], list[Row]]:
    """Send keys to actors (at most :data:`DEPTH` calls each), collect rows, enforce the time-out, and
    send again, once, the keys of actors that are lost.

    Once every key is handed out, an idle actor takes a copy of a key another actor on its node has been
    compiling for :data:`HELP_MIN_S` or more (at most :data:`HELP_COPIES` copies): the actors of a
    node share one store, so the copies share the key's launches as local workers do (see
    :func:`.survey._run_keys`), and the key's rows are merged from them."""
    from .survey import KeyCopies, _error_row

    ray = state.ray
    options = state.options
    pending = list(reversed(keys))  # pop() from the end keeps the given order
    results: dict[tuple[str, str], list[Row]] = {}
    resent: set[tuple[str, str]] = set()
    copies = KeyCopies()  # calls in flight for each key, and the rows of those answered
    helpers: set[tuple[int, str, str]] = set()  # (actor, key) of every call sent: an actor takes a key once

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
        helpers.add((id(actor), key.id, key.target))
        copies.sent(key)
        actor.calls.append((key, actor.handle.survey.remote(key, options.reuse_results)))

    def helped(actor: _Actor, now: float) -> Key | None:
        """A key another actor of ``actor``'s node has been compiling for :data:`HELP_MIN_S` or more that
        ``actor`` can help with (the longest, by its estimate or its time so far, per copy)."""
        best: tuple[float, Key] | None = None
        for other in state.actors:
            if other is actor or not other.calls or not state.node_of(actor) or state.node_of(other) != actor.node:
                continue
            k = other.calls[0][0]
            ident = (k.id, k.target)
            running = now - other.head_since
            if (k.target != actor.target or copies.out(k) >= HELP_COPIES or running < HELP_MIN_S
                    or (id(actor), *ident) in helpers):
                continue
            share = max(cost(k), running) / copies.out(k)
            if best is None or share > best[0]:
                best = (share, k)
        return best[1] if best is not None else None

    def replace_actor() -> None:
        """Start an actor in the place of one ended, if the cluster has a CPU for it now (else the loop
        starts one once it has)."""
        if pending and state.room():
            state.spawn(_wanted_target(pending, state.actors, cost))

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

    def stored() -> None:
        """The answers whose objects are stored now: their rows are the survey's (in the order answered)."""
        while storing and storing[0][2].done():
            key, shipped, written = storing.popleft()
            written.result()  # a store that failed (a full disk) fails the survey, as it would here
            state.account(shipped)
            if isinstance(shipped.answer, KeyFinished):
                copy_done(key, list(shipped.answer.rows))
            else:
                copy_done(key, [_error_row(key, shipped.answer.error, transient=shipped.answer.transient)])

    for _ in range(capacity - len(state.actors)):
        state.spawn(_wanted_target(pending, state.actors, cost))

    # What comes back is written into the local store on threads of its own (files: the writes run beside
    # each other and beside this loop), so the loop's own time per build is Ray's and the bookkeeping.
    writers = ThreadPoolExecutor(max_workers=STORING_THREADS, thread_name_prefix="regsurvey-store")
    storing: deque[tuple[Key, KeyShipped, Future[None]]] = deque()
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
                            state.spawn(_wanted_target(pending, state.actors, cost))
                            replaced = True
                        break
                    send(actor, nxt, now)
            if replaced:
                continue  # the new actor gets its keys now, not after the busy ones next answer
            if pending and now - state.last_capacity_check > 0.5:
                state.last_capacity_check = now
                if len(state.actors) < state.capacity() and (not state.actors or state.room()):
                    state.spawn(_wanted_target(pending, state.actors, cost))  # none left: one waits for a CPU
                    continue
            heads = {a.calls[0][1]: a for a in state.actors if a.calls}
            if not heads:
                if pending and not state.actors:
                    state.spawn(_wanted_target(pending, state.actors, cost))
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
                    lose(actor, f"Ray actor lost ({type(exc).__name__}: {_first_line(exc)[:200]})")
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
    except BaseException:
        state.close()
        raise
    finally:
        writers.shutdown(wait=True)
    state.keys_shared, state.launches_shared = copies.keys_shared, copies.launches_shared
    return results
