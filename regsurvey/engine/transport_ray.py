"""The Ray transport: a survey's actors on a Ray cluster (:mod:`.ray_executor` joins it and says what travels),
each key a call to one (:data:`POLICY`: at most two calls each, the second queued behind the first so that an
actor never waits for the survey between keys), and the loop that waits on their calls (``ray.wait``) and
tells the :class:`~.schedule.Schedule` what came back.

A Ray call says nothing before it ends: a key's launches are not known, so idle actors (of any node) take
copies of a key once it has run for :data:`HELP_MIN_S` (at most :data:`HELP_COPIES`); through the build locks
(the node store's, the survey's claims across nodes) the copies share the key's launches as local workers do.
The answers are written into the local store on writer threads (:mod:`.ray_answers`); a key's rows are taken
once every object they name is here. An actor whose call fails (its node, its process) is lost, every key it
held sent again once; one past the time-out is killed. At the end, objects whose compiling actor's answer
was lost are sent by their node, and what killed actors left on a node is removed.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.keys import Key
from ..model.options import SurveyOptions
from ..model.results import SaidOnce
from ..store.objectstore import ObjectStore
from ..store.resultcache import ResultCache
from ..store.signing import Unsigned, unsigned_warning
from .errors import SurveyError
from .protocol import CapturedKey, Failed, KeyFinished, KeysListed, ToolchainInfo
from .ray_actor import KeyShipped, claims_class
from .ray_answers import Storing, answered_rows
from .ray_node import shipper_class, store_objects
from .schedule import Policy, Schedule, error_row

# Copies of a key in flight that idle actors (of any node) may take at the survey's tail: keys compiling for
# HELP_MIN_S or more (a Ray call says nothing before it ends, so a key's launches are not known), at most
# HELP_COPIES of each (a copy of a key of one launch waits for it and answers its rows).
HELP_MIN_S = 2.0
HELP_COPIES = 4

# Calls in flight per actor: the one it runs, and one queued behind it so that it never waits for the
# survey between keys.
DEPTH = 2

POLICY = Policy(depth=DEPTH, queued=True, help_after_s=HELP_MIN_S, help_copies=HELP_COPIES, share_by_running=True)


def first_line(exc: BaseException) -> str:
    """The first line of what ``exc`` says (its type's name when it says nothing)."""
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


@dataclass(eq=False)
class RayActor:
    """An actor of the survey: the one target whose keys it surveys."""

    handle: Any
    target: str
    calls: deque[tuple[Key, Any]] = field(default_factory=deque)  # (key, its call's ObjectRef), in order
    answered: int = 0  # calls answered (the first also waited for the actor to start and import the project)
    node: str = ""  # the Ray node it runs on, once known (its first answer says)
    who: str = ""  # its name in the survey's build claims (ray_actor.BuildClaims)


class RayPool:
    """The survey's actors on the cluster (``ray``, joined): a :class:`~.schedule.Transport`, what a survey
    asks of its workers before the keys are scheduled, and the figures of the survey's time on the cluster.

    ``tree``: the checkout as it travels; ``environ``: the actors' variables; ``actor_class``: the Ray actor
    class of :class:`~.ray_actor.SurveyActor`."""

    policy = POLICY
    lost_before = "an actor lost before"

    def __init__(self, ray: Any, tree: bytes, objects_dir: Path, options: SurveyOptions, environ: dict[str, str],
                 actor_class: Any):
        self.ray = ray
        self.options = options
        self.objects = ObjectStore(objects_dir)
        unsigned: list[Unsigned] = []
        self.cache = ResultCache(self.objects, unsigned=unsigned.append)
        self.actor_class = actor_class
        self.tree = ray.put(tree)
        # The results of identical kernels this store holds (any commit's): a node reuses them rather than
        # compiling (it sends back a row naming the object here, not the object).
        known = self.cache.entries() if options.reuse_results else {}
        if unsigned:  # (not sent: the nodes compile them again)
            print(unsigned_warning(unsigned), file=sys.stderr)
        survey = self.survey = uuid.uuid4().hex[:16]  # names the store this survey's actors share on each node
        # The builds in flight across nodes: an actor waits for a kernel another node compiles.
        self.claims = claims_class().remote()
        self.actor_args = (environ, options.triton_cache_dir is not None, ray.put(known), survey, self.claims)
        self.workers: list[RayActor] = []
        self.started = 0
        self.phases: dict[str, float] = {}
        self.peak_rss_mb = 0.0
        self.said_once: set[SaidOnce] = set()  # what kind bodies said once per process, in any actor
        self.calls = 0
        self.timed_calls = 0  # calls whose overhead is measured: each actor's but the first
        self.overhead_s = 0.0  # their seconds between the call's start and its answer here, not in the actor
        self.rescheduled = 0
        self.keys_shared = 0  # keys whose launches actors shared (schedule.KeyCopies)
        self.launches_shared = 0
        self.across_nodes = 0  # builds an actor took from another node's compile (ray_actor.BuildClaims)
        self.fetched = 0  # objects fetched at the end from nodes whose answer was lost (fetch_lost)
        self.left_behind: set[str] = set()  # nodes of actors killed ("": not known), which could not clean up
        self.nodes: set[str] = set()
        self.last_capacity_check = 0.0
        self.jobs = 1  # the actors the cluster could run at once, when last asked (capacity)
        self.listed_at = 0.0
        self._listing: tuple[RayActor, Any, tuple[str, ...] | None] | None = None
        self.start_s, self.driver_cpu = time.monotonic(), time.thread_time()

    # -- the transport

    def start(self, target: str) -> RayActor:
        """A new actor for ``target``'s keys (spread over the nodes)."""
        who = uuid.uuid4().hex[:12]
        handle = self.actor_class.options(scheduling_strategy="SPREAD").remote(self.tree, target, *self.actor_args,
                                                                               who)
        self.started += 1
        actor = RayActor(handle, target, who=who)
        self.workers.append(actor)
        return actor

    def send(self, worker: RayActor, key: Key, captured: CapturedKey | None = None) -> None:
        """Call ``worker`` for ``key`` (``captured``: its launches, for a copy that helps with it; a Ray call
        says nothing before it ends, so the schedule has none to give here today)."""
        worker.calls.append((key, worker.handle.survey.remote(key, self.options.reuse_results, captured)))

    def end(self, worker: RayActor, idle: bool) -> None:
        """End ``worker``: ``idle``, it removes its directory first (an actor that hangs or is lost
        cannot)."""
        worker.calls.clear()
        self.kill(worker, polite=idle)

    def room(self) -> bool:
        """Whether a CPU is free for another actor now."""
        return bool(self.ray.available_resources().get("CPU", 0.0) >= 1.0)

    def kill(self, actor: RayActor, polite: bool = False) -> None:
        """End ``actor``: ``polite``, it removes its directory first (an actor that hangs or is lost
        cannot)."""
        if polite:
            with contextlib.suppress(Exception):
                self.ray.get(actor.handle.close.remote(), timeout=10)
        else:  # what it leaves on its node is removed at the end (fetch_lost)
            self.left_behind.add(actor.node)
        with contextlib.suppress(Exception):
            self.ray.kill(actor.handle, no_restart=True)
        with contextlib.suppress(Exception):  # its builds in flight are free: another compiles them
            self.claims.lost.remote(actor.who)
        if actor in self.workers:
            self.workers.remove(actor)

    def close(self) -> None:
        """Cancel every call in flight, end every actor (politely when it is idle)."""
        for actor in self.workers:
            for _, ref in actor.calls:
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref)
        for actor in list(self.workers):
            self.kill(actor, polite=not actor.calls)
        with contextlib.suppress(Exception):
            self.ray.kill(self.claims, no_restart=True)

    # -- before the keys are scheduled

    def capacity(self) -> int:
        """Actors the cluster can run at once: its CPUs (the nodes alive now). The survey's ``jobs`` is the
        last answer, given when the keys are scheduled (the cluster may grow while they run)."""
        self.jobs = self._cpus()
        return self.jobs

    def _cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def list_keys(self, target: str, targets: tuple[str, ...] | None) -> None:
        """Start the actor that lists the keys (importing the checkout for ``target``) and ask it for the keys
        of ``targets`` (None: every target); :meth:`listed` is its answer."""
        first = self.start(target)
        self._listing = first, first.handle.list_keys.remote(targets), targets

    def listed(self, timeout: float) -> KeysListed:
        """The keys listed (asked again of another actor, once, when the listing one is lost)."""
        assert self._listing is not None
        first, listing, targets = self._listing
        listed, actor = self.request(first, lambda a: listing if a is first else a.handle.list_keys.remote(targets),
                                     timeout)
        self._listing = actor, listing, targets
        assert isinstance(listed, KeysListed)
        return listed

    def toolchain(self, backend: str) -> dict[str, Any]:
        """The toolchain block of ``backend``, from the actor that listed the keys."""
        assert self._listing is not None
        info, actor = self.request(self._listing[0], lambda a: a.handle.toolchain.remote(backend), 120)
        self._listing = actor, *self._listing[1:]
        assert isinstance(info, ToolchainInfo)
        return info.toolchain

    def request(self, actor: RayActor, call: Callable[[RayActor], Any], timeout: float) -> tuple[Any, RayActor]:
        """The answer to ``call(actor)`` (a call that is not a key's), and the actor that gave it: a
        SurveyError when it fails or is late. An actor lost (its node, its process) is asked of another
        actor once."""
        for attempt in (1, 2):
            try:
                answer = self.ray.get(call(actor), timeout=timeout)
                break
            except self.ray.exceptions.GetTimeoutError:
                raise SurveyError(f"the keys files did not finish importing on the cluster within {timeout:.0f} s: "
                                  "a keys file, or what it imports, hangs") from None
            except self.ray.exceptions.RayError as exc:
                why = f"the Ray actor importing the keys files was lost: {said_cause(exc)}"
                if attempt == 2:
                    raise SurveyError(why) from None
                print(f"regsurvey: warning: {why}; asked of another actor", file=sys.stderr)
                self.kill(actor)
                self.rescheduled += 1
                actor = self.workers[0] if self.workers else self.start(actor.target)
        if isinstance(answer, Failed):
            raise SurveyError(answer.error, answer.traceback)
        return answer, actor

    # -- the survey

    def run(self, schedule: Schedule[RayActor], listed_at: float) -> None:
        """Feed ``schedule`` what the actors answer until every key is done and stored; then fetch what
        nodes whose answer was lost hold, and clean up after the actors killed."""
        self.listed_at = listed_at
        storing = Storing(self.objects, self.cache)

        def take(key: Key, shipped: KeyShipped) -> None:
            schedule.on_rows(key, answered_rows(key, shipped))

        try:
            while not schedule.done or storing:
                storing.stored(self.account, take)
                if schedule.dispatch() or self._grown(schedule):
                    continue  # the new actor gets its keys now, not after the busy ones next answer
                heads = {a.calls[0][1]: a for a in self.workers if a.calls}
                if not heads:
                    storing.wait(0.05)
                    continue
                self._answered(self._ready(heads, schedule, storing), heads, schedule, storing)
                now = time.monotonic()
                for actor in list(self.workers):
                    if actor.calls and now >= schedule.deadline(actor):
                        schedule.on_timeout(actor)
            if storing.held or self.left_behind:
                self.fetch_lost(storing, schedule)
            with contextlib.suppress(Exception):
                self.across_nodes = self.ray.get(self.claims.stats.remote(), timeout=10)["builds_across_nodes"]
        except BaseException:
            self.close()
            raise
        finally:
            storing.close()
        self.keys_shared, self.launches_shared = schedule.copies.keys_shared, schedule.copies.launches_shared
        self.rescheduled += len(schedule.resent)

    def _grown(self, schedule: Schedule[RayActor]) -> bool:
        """Now and then, while keys wait: another actor when the cluster has room for it (none left: one
        waits for a CPU)."""
        now = time.monotonic()
        if not schedule.pending or now - self.last_capacity_check <= 0.5:
            return False
        self.last_capacity_check = now
        if len(self.workers) < self._cpus() and (not self.workers or self.room()):
            schedule.start_one()
            return True
        return False

    def _ready(self, heads: dict[Any, RayActor], schedule: Schedule[RayActor], storing: Storing) -> list[Any]:
        """The calls answered (every one answered now, once one is or the next time-out comes)."""
        now = time.monotonic()
        wait_for = max(0.0, min(schedule.deadline(a) for a in heads.values()) - now)
        if schedule.pending and len(self.workers) < self.jobs:
            wait_for = min(wait_for, 0.5)  # look for room for another actor now and then
        if not schedule.pending and any(not a.calls for a in self.workers):
            wait_for = min(wait_for, 0.5)  # an idle actor may soon help with a key running long
        if storing:
            wait_for = min(wait_for, 0.005)  # answers being stored: their rows are taken as they are
        ready, _ = self.ray.wait(list(heads), num_returns=1, timeout=wait_for)
        if ready:
            ready, _ = self.ray.wait(list(heads), num_returns=len(heads), timeout=0)
        return list(ready)

    def _answered(self, ready: list[Any], heads: dict[Any, RayActor], schedule: Schedule[RayActor],
                  storing: Storing) -> None:
        """Take the answers of the calls ``ready``: each is stored, and its actor's next call begins; an
        actor whose call failed is lost."""
        now = time.monotonic()
        for ref in ready:
            actor = heads[ref]
            key, _ = actor.calls[0]
            took = now - schedule.since(actor)
            try:
                shipped: KeyShipped = self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:
                why = f"Ray actor lost ({type(exc).__name__}: {first_line(exc)[:200]})"
                schedule.on_lost(actor, why, blame=False)
                print(f"regsurvey: warning: {why}; its keys are surveyed again", file=sys.stderr)
                continue
            actor.calls.popleft()
            schedule.on_left(actor, key)
            self.calls += 1
            actor.answered += 1
            actor.node = shipped.node
            if actor.answered > 1:  # the first call also waited for the actor to start and import the project
                self.timed_calls += 1
                self.overhead_s += max(0.0, took - shipped.seconds)
            storing.put(key, shipped)
            self.nodes.add(shipped.node)

    def fetch_lost(self, storing: Storing, schedule: Schedule[RayActor]) -> None:
        """At the end, on the nodes where something is left to do: the answers still held name objects whose
        compiling node's answer was lost, so that node (the claims say which) sends what its store holds
        of them, through an actor of the survey alive there, else a shipper started there; and a shipper
        removes what actors killed there (a time-out, a lost call) left on a node no actor of the survey is
        left on. A key whose objects are still missing (their node lost too) is an error (transient:
        surveyed again next time)."""
        held = storing.held
        wanted = held.wanted()
        live = {a.node: a.handle for a in self.workers if a.node}
        needed = self._holding_nodes(held.builds(), live) if wanted else set()
        shippers = self._shippers(needed | self.left_behind, live)
        asked = [live[n].ship.remote(wanted) for n in needed & live.keys()]
        asked += [h.ship.remote(wanted) for n, h in shippers.items() if n in needed]
        for ref in asked:
            with contextlib.suppress(Exception):  # an actor or node lost meanwhile, or a node's full disk
                got = self.ray.get(ref, timeout=60)
                store_objects(got, self.objects)
                self.fetched += len(got)
        closing = []
        for shipper in shippers.values():
            with contextlib.suppress(Exception):
                closing.append(shipper.close.remote())
        with contextlib.suppress(Exception):
            self.ray.wait(closing, num_returns=len(closing), timeout=30)
        for shipper in shippers.values():
            with contextlib.suppress(Exception):
                self.ray.kill(shipper, no_restart=True)
        for key, shipped in held.released():
            schedule.on_rows(key, answered_rows(key, shipped))
        for key, _ in held.dropped():
            schedule.on_rows(key, [error_row(key, "an identical kernel it reused was compiled on a node whose answer "
                                                  "was lost, with the kernel's object", transient=True)])

    def _holding_nodes(self, builds: dict[str, str], live: dict[str, Any]) -> set[str]:
        """The nodes that compiled ``builds`` (the claims say; every node with an actor when they cannot)."""
        where: dict[str, str] = {}
        if builds:
            with contextlib.suppress(Exception):  # the claims actor gone: every node with an actor is asked
                where = self.ray.get(self.claims.nodes_of.remote(sorted(set(builds.values()))), timeout=30)
        return {where[h] for h in builds.values() if h in where} if where else set(live)

    def _shippers(self, visit: set[str], live: dict[str, Any]) -> dict[str, Any]:
        """A shipper on each node of ``visit`` alive with no actor of the survey left there."""
        alive: set[str] = set()
        with contextlib.suppress(Exception):
            alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        if "" in visit:  # an actor killed before it said where it ran: every node
            visit = visit | alive
        shippers = {}
        for n in (visit & alive) - live.keys():
            with contextlib.suppress(Exception):  # a node gone
                shippers[n] = shipper_class(n).remote(self.survey)
        return shippers

    # -- what comes back

    def account(self, shipped: KeyShipped) -> None:
        """Add a call's timing (and what its kind body said once per process) to the survey's, and show its
        notes."""
        answer = shipped.answer
        if isinstance(answer, KeyFinished):
            for phase, seconds in answer.timing.items():
                self.phases[phase] = self.phases.get(phase, 0.0) + seconds
            self.peak_rss_mb = max(self.peak_rss_mb, answer.peak_rss_mb)
            self.said_once.update(answer.said_once)
        for line in answer.notes if isinstance(answer, KeyFinished) else ():
            print(line, file=sys.stderr)

    def figures(self, *, rows: int, lint_s: float, closed_at: float,
                lint_runs: list[tuple[float, float, int]]) -> dict[str, float]:
        """The survey's ``timing``: its time on the cluster (``rows`` builds), with the deferred lint's
        ``lint_s``."""
        phases = dict(self.phases)
        if lint_s:
            phases["lint_s"] = phases.get("lint_s", 0.0) + lint_s
        end = time.monotonic()
        timing = {"jobs": float(self.jobs), "wall_s": end - self.start_s, "list_s": self.listed_at - self.start_s,
                  **dict(sorted(phases.items())), "workers_started": float(self.started),
                  "ray_nodes": float(len(self.nodes)), "ray_calls": float(self.calls),
                  "ray_rescheduled": float(self.rescheduled)}
        if self.timed_calls:
            timing["ray_overhead_per_build_ms"] = 1000 * self.overhead_s / self.timed_calls
        if rows:  # the CPU of the survey's own thread: its serial part (the loop), what bounds a survey of many nodes
            timing["ray_driver_cpu_per_build_ms"] = 1000 * (time.thread_time() - self.driver_cpu) / rows
        if self.peak_rss_mb:
            timing["worker_peak_rss_mb"] = self.peak_rss_mb
        if self.across_nodes:
            timing["ray_builds_across_nodes"] = float(self.across_nodes)
        if self.fetched:
            timing["ray_objects_fetched_at_end"] = float(self.fetched)
        if self.keys_shared:
            timing["keys_shared"] = float(self.keys_shared)
            timing["launches_shared"] = float(self.launches_shared)
        return {k: round(v, 3) for k, v in timing.items()}
