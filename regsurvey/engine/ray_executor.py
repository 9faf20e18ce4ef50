"""Surveys on a Ray cluster (``--ray ADDRESS``, ``REGSURVEY_RAY``): each key is a call to a Ray actor.

What travels: the checkout's files that git tracks (as they are in the working tree) and those
``REGSURVEY_RAY_INCLUDE`` (``--ray-include``) names, never another untracked file (a ``.env``, a key),
as one gzipped tar, put once into Ray's object store; of the environment, Triton's settings and the few
variables of regsurvey's a worker reads (:func:`actor_environment`), never a token. Each actor
(``num_cpus=1``, spread over the nodes) unpacks it into a directory of its own on its node, imports it
once for its target with the :class:`~regsurvey.engine.worker.Worker` local workers use (an objects
directory its node-mates of the survey share), then compiles the keys sent to it one call at a time. No
kernel is compiled twice: on a node its build lock is the node store's, across nodes the survey's claims
actor (:class:`~.ray_actor.BuildClaims`), from which an actor waiting for another node's build takes its
result-cache entry; that row's object comes back with the other node's answer, and a key's rows are
taken once every object they name is here. Each call answers the key's rows and, for each
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
import re
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..model.keys import Key
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Row, SaidOnce, Survey
from ..model.targets import get_target
from ..model.version import READER_REVISION
from ..model.words import count
from ..revisions.checkout import Checkout
from ..store.signing import Unsigned, unsigned_warning
from .launcher_messages import survey_said_once
from .protocol import Failed, KeyFinished
from .ray_actor import KeyShipped, SurveyActor, TreeError, claims_class, pack_tree, tree_files
from .ray_keys import first_line, run_keys, said_cause

ENV_VAR = "REGSURVEY_RAY"

INCLUDE_VAR = "REGSURVEY_RAY_INCLUDE"  # untracked files the cluster needs: glob patterns, comma-separated

# What the actors' environment takes from the survey's, beyond their node's own: Triton's settings (they
# change what compiles) and the variables of regsurvey's that a worker reads. Nothing else travels: not a
# CI runner's tokens (REGSURVEY_GITLAB_TOKEN, CI_JOB_TOKEN, GITHUB_TOKEN), nor a variable whose name says it
# is a secret, under TRITON_ too. Paths that mean something only here stay here.
_ENV_PREFIX = "TRITON_"
_ENV_REGSURVEY = frozenset({"REGSURVEY_MATERIALIZE", "REGSURVEY_LLVM_OBJDUMP"})
_ENV_LOCAL = frozenset({"TRITON_CACHE_DIR", "TRITON_HOME"})
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|AUTH|API_?KEY|(^|_)KEY$", re.IGNORECASE)


def actor_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` (the survey's) that the actors take."""
    return {name: value for name, value in environ.items()
            if ((name.startswith(_ENV_PREFIX) and name not in _ENV_LOCAL) or name in _ENV_REGSURVEY)
            and not _SECRET.search(name)}


def included() -> tuple[str, ...]:
    """The patterns of the untracked files that travel too (``REGSURVEY_RAY_INCLUDE``)."""
    return tuple(p.strip() for p in os.environ.get(INCLUDE_VAR, "").split(",") if p.strip())


def packed_checkout(checkout: Checkout) -> bytes:
    """The checkout's files that travel, as the tar each actor unpacks (:func:`.ray_actor.tree_files`); the
    untracked files left here are named in a warning (a local survey would read them). SurveyError for a
    checkout that cannot travel."""
    from .survey import SurveyError

    tree = tree_files(checkout.root, included())
    if tree.left_out:
        shown = ", ".join(tree.left_out[:3]) + (f" and {len(tree.left_out) - 3} more" if len(tree.left_out) > 3 else "")
        print(f"regsurvey: warning: --ray: {count(len(tree.left_out), 'untracked file')} not sent to the cluster "
              f"({shown}): git add them, or name them with --ray-include", file=sys.stderr)
    try:
        return pack_tree(checkout.root, tree.files)
    except TreeError as exc:
        raise SurveyError(f"--ray: {exc}") from None
    except OSError as exc:
        raise SurveyError(f"--ray: cannot read the checkout to send it: {exc}") from None


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
    node: str = ""  # the Ray node it runs on, once known (its first answer says)
    who: str = ""  # its name in the survey's build claims (ray_actor.BuildClaims)


class RaySurvey:
    """The survey's state on the cluster: the actors, the keys pending, the rows received."""

    def __init__(self, tree: bytes, objects_dir: Path, options: SurveyOptions, progress: Progress):
        import ray

        from ..store.objectstore import ObjectStore
        from ..store.resultcache import ResultCache

        self.ray = ray
        self.options = options
        self.progress = progress
        self.objects = ObjectStore(objects_dir)
        unsigned: list[Unsigned] = []
        self.cache = ResultCache(self.objects, unsigned=unsigned.append)
        self.actor_class = _actor_class()
        environ = actor_environment(os.environ)
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
        self.actors: list[_Actor] = []
        self.started = 0
        self.phases: dict[str, float] = {}
        self.peak_rss_mb = 0.0
        self.said_once: set[SaidOnce] = set()  # what kind bodies said once per process, in any actor
        self.calls = 0
        self.timed_calls = 0  # calls whose overhead is measured: each actor's but the first
        self.overhead_s = 0.0  # their seconds between the call's start and its answer here, not in the actor
        self.rescheduled = 0
        self.keys_shared = 0  # keys whose launches actors of one node shared (survey.SurveyTiming's)
        self.launches_shared = 0
        self.across_nodes = 0  # builds an actor took from another node's compile (ray_actor.BuildClaims)
        self.fetched = 0  # objects fetched at the end from nodes whose answer was lost (ray_keys.run_keys)
        self.left_behind: set[str] = set()  # nodes of actors killed ("": not known), which could not clean up
        self.nodes: set[str] = set()
        self.last_capacity_check = 0.0

    # -- actors

    def spawn(self, target: str) -> _Actor:
        who = uuid.uuid4().hex[:12]
        handle = self.actor_class.options(scheduling_strategy="SPREAD").remote(self.tree, target, *self.actor_args,
                                                                               who)
        self.started += 1
        actor = _Actor(handle, target, who=who)
        self.actors.append(actor)
        return actor

    def kill(self, actor: _Actor, polite: bool = False) -> None:
        """End ``actor``: ``polite``, it removes its directory first (an actor that hangs or is lost
        cannot)."""
        if polite:
            with contextlib.suppress(Exception):
                self.ray.get(actor.handle.close.remote(), timeout=10)
        else:  # what it leaves on its node is removed at the end (ray_keys.end_on_nodes)
            self.left_behind.add(actor.node)
        with contextlib.suppress(Exception):
            self.ray.kill(actor.handle, no_restart=True)
        with contextlib.suppress(Exception):  # its builds in flight are free: another compiles them
            self.claims.lost.remote(actor.who)
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
        with contextlib.suppress(Exception):
            self.ray.kill(self.claims, no_restart=True)

    def request(self, actor: _Actor, call: Callable[[_Actor], Any], timeout: float) -> tuple[Any, _Actor]:
        """The answer to ``call(actor)`` (a call that is not a key's), and the actor that gave it: a
        SurveyError when it fails or is late. An actor lost (its node, its process) is asked of another
        actor once."""
        from .survey import SurveyError

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
                actor = self.actors[0] if self.actors else self.spawn(actor.target)
        if isinstance(answer, Failed):
            raise SurveyError(answer.error, answer.traceback)
        return answer, actor

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


def survey_on_ray(checkout: Checkout, objects_dir: Path, options: SurveyOptions,
                  progress: Progress | None = None) -> Survey:
    """:func:`regsurvey.engine.survey.survey_checkout` on the Ray cluster :func:`ray_address` names."""
    from .survey import SurveyError

    try:
        import ray
    except ImportError:
        raise SurveyError("--ray needs Ray: pip install 'regsurvey[ray]'") from None
    address = ray_address(options)
    tree = packed_checkout(checkout)  # before joining the cluster: a checkout that cannot travel is said at once
    connected_here = False
    if not ray.is_initialized():
        try:
            ray.init(address=None if address == "local" else address, log_to_driver=False,
                     logging_level=logging.ERROR)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise SurveyError(f"cannot join the Ray cluster at {address}: {first_line(exc)}") from None
        connected_here = True
    try:
        return _survey(RaySurvey(tree, objects_dir, options, progress or Progress()), checkout, objects_dir)
    finally:
        if connected_here:
            ray.shutdown()


def _survey(state: RaySurvey, checkout: Checkout, objects_dir: Path) -> Survey:
    from .deferred_lint import DeferredLint
    from .survey import IMPORT_TIMEOUT_S, KeyCosts, SurveyError, _selected, settled_failures, starting_targets

    options = state.options
    start, driver_cpu = time.monotonic(), time.thread_time()
    costs = KeyCosts(objects_dir.parent / "costs.json")
    deferred: DeferredLint | None = None
    results: dict[tuple[str, str], list[Row]] | None = None
    try:
        listing_target, asked = starting_targets(options, checkout, costs)
        first = state.spawn(listing_target)
        wanted = tuple(options.targets) if options.targets else None
        listing = first.handle.list_keys.remote(wanted)
        if asked:  # the targets are known (or guessed): the other actors start (and import) while the first lists
            for target in costs.workers_for(asked, state.capacity())[1:]:
                state.spawn(target)
        listed, first = state.request(first, lambda a: listing if a is first else a.handle.list_keys.remote(wanted),
                                      IMPORT_TIMEOUT_S)
        keys = [k for k in listed.keys if _selected(k, options)]
        if not keys:
            raise SurveyError("no key matches the selection (--kind/--key)")
        toolchain = {}
        for backend in sorted({get_target(k.target).backend for k in keys}):
            def told(actor: _Actor, backend: str = backend) -> Any:
                return actor.handle.toolchain.remote(backend)

            info, first = state.request(first, told, 120)
            toolchain[backend] = info.toolchain
        state.progress.on_start(len(keys))
        listed_at = time.monotonic()
        ordered = costs.longest_first(keys)
        capacity = state.capacity()
        deferred = DeferredLint(objects_dir, capacity)
        results = run_keys(state, ordered, costs.estimate, capacity, deferred.add)
        costs.update(r for rows in results.values() for r in rows)
    finally:
        state.close()
        if deferred is not None and results is None:
            deferred.close()
    order = {(k.id, k.target): i for i, k in enumerate(keys)}
    rows = settled_failures(sorted((r for rs in results.values() for r in rs),
                                   key=lambda r: (order[(r.key, r.target)], r.launch)))
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
    if state.across_nodes:
        timing["ray_builds_across_nodes"] = float(state.across_nodes)
    if state.fetched:
        timing["ray_objects_fetched_at_end"] = float(state.fetched)
    if state.keys_shared:
        timing["keys_shared"] = float(state.keys_shared)
        timing["launches_shared"] = float(state.launches_shared)
    targets = tuple(dict.fromkeys(k.target for k in keys))
    return Survey(commit=checkout.commit, label=checkout.label, targets=targets, toolchain=toolchain,
                  rows=tuple(rows), dirty=checkout.dirty,
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  timing={k: round(v, 3) for k, v in timing.items()}, reader=READER_REVISION,
                  declared=dict(listed.declared),
                  said_once=survey_said_once(state.said_once, rows, targets))
