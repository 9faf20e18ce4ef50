"""Surveying a checkout: list its keys, compile them in worker processes, collect the rows.

Workers are processes forked from a warm server or a forkserver (or spawned) whose import path starts
at the checkout (see :mod:`regsurvey.engine.worker`). This module schedules keys over them, enforces the
per-key time-out (a hung compile is killed and its key marked ``error``), survives a worker that dies,
and turns the rows into a :class:`Survey`.

Its length (over 500 lines): scheduling, time-outs, lost-worker handling and how workers start
(server, forkserver, spawn) share the pool's state. The messages are :mod:`.protocol`'s; the lint of
the cubins the workers leave is :mod:`.deferred_lint`'s.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from ..keys.keyfiles import declared_targets
from ..model.keys import Key
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Row, SaidOnce, Status, Survey
from ..model.targets import ANY_TARGET, DEFAULT_LIST_TARGET, TARGETS, get_target
from ..model.version import READER_REVISION
from ..model.words import count
from ..revisions.checkout import Checkout
from ..secret_vars import without_secrets
from ..store.files import MiB, atomic_write, read_regular
from ..store.signing import CACHE_KEY_VAR, Unsigned, unsigned_warning
from .deferred_lint import DeferredLint
from .launcher_messages import survey_said_once
from .protocol import (
    Answer,
    Failed,
    KeyCaptured,
    KeyCompiled,
    KeyFinished,
    KeysListed,
    KeyWaiting,
    ListKeys,
    Request,
    SurveyKey,
    ToolchainInfo,
    ToolchainOf,
    WorkerExited,
)
from .server import ServerWorker

A = TypeVar("A", KeysListed, ToolchainInfo)


class SurveyError(Exception):
    """A survey that cannot start (bad keys files, unknown target): a one-line message, but for a keys file
    that raised in a library (the frames down to the raising one follow); ``traceback``: Python's whole
    traceback, when there is one (``run --format json`` prints it)."""

    def __init__(self, message: str, traceback: str | None = None):
        super().__init__(message)
        self.traceback = traceback


def worker_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a worker runs with: ``env`` without its secret variables, but for ``REGSURVEY_CACHE_KEY``,
    with which workers sign the results they store. That key belongs only in jobs that survey trusted
    revisions (docs/trust.md): a merge request's job never holds it, so no project's code it runs
    could read it there."""
    clean = without_secrets(env)
    if env.get(CACHE_KEY_VAR):
        clean[CACHE_KEY_VAR] = env[CACHE_KEY_VAR]
    return clean


@dataclass
class _Worker:
    process: Any
    conn: Any
    target: str = ""  # the one target whose keys it surveys (it imported the project for it)
    key: Key | None = None  # the key it compiles
    finishing: list[Key] = field(default_factory=list)  # compiled keys whose objects it still reads
    started: float = 0.0  # monotonic time the key it compiles was sent
    heard: float = 0.0  # monotonic time of its last message (or of the last key sent)
    spawned: float = field(default_factory=time.time)
    ready_s: float | None = None  # seconds from spawn until the worker had imported the keys
    succeeded: bool = False  # a worker for another target was started to take its place (see _run_keys)
    waiting: str | None = None  # who holds the build lock its key's compile waits for ("" unknown), if it waits

    def timed_out(self, timeout: float) -> str:
        """Why its key failed at the time-out: what it was doing then."""
        why = f"timed out after {timeout:g} s (--timeout)"
        if self.waiting is None:
            return why
        return (f"{why} while waiting for the build lock of one of its kernels, held by "
                f"{self.waiting or 'another process'} (compiling that kernel for another key, or another "
                "survey on this store)")

    def deadline(self, timeout: float) -> float:
        """When it has taken too long: the key it compiles has ``timeout`` seconds from being sent;
        with only keys to finish, it must say something within ``timeout`` seconds."""
        return (self.started if self.key is not None else self.heard) + timeout


_COMPILING = ("capture_s", "hash_s", "compile_s")  # a worker's compiling thread; the rest is finishing


TIMELINE_VAR = "REGSURVEY_TIMELINE"


@dataclass
class SurveyTiming:
    """Where a survey's wall time went, as seconds summed over workers (``Survey.timing``).

    ``compile_s`` is the toolchain's own work; ``capture_s`` (kind bodies), ``hash_s`` (Triton cache
    keys and result-cache look-ups), ``analyze_s`` (reading and linting each object:
    ``analysis.analyze``), ``store_s`` (storing objects and results), ``pressure_s`` (an AMD
    build's register pressure, kept beside its object: ``explaining.keep_pressure``) and ``lint_s`` (the
    lint of the cubins the workers left, in batches beside the compiles) are regsurvey's own work; ``wait_s``
    is time a worker waited for a kernel another worker (or survey) was compiling, rather than compile it
    twice (it counts in ``idle_s`` too); ``idle_s`` is
    the time the N compile slots spent not compiling once the keys were listed (start-up still running,
    waiting for a key, or the tail; reading and linting run beside compiling, in each worker's
    finishing process); ``list_s`` is the wall time until the key
    list arrived; ``worker_peak_rss_mb`` is the largest worker's (or finishing process's) peak
    resident memory; ``workers_preloaded`` counts the workers that were forked with torch and Triton
    already imported, ``workers_from_server`` those a running ``regsurvey server`` forked;
    ``workers_started`` counts every worker started (each imports the checkout once, for its target);
    ``keys_shared`` counts the keys idle workers helped with at the survey's tail, ``launches_shared`` the
    launches of those keys that a helper compiled (see :func:`_run_keys`).
    """

    jobs: int
    start: float = field(default_factory=time.monotonic)
    listed: float = 0.0
    last_dispatch: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: float = 0.0  # the largest worker's
    preloaded: set[int] = field(default_factory=set)  # workers that came with torch and Triton imported
    from_server: set[int] = field(default_factory=set)  # workers a `regsurvey server` forked
    workers_started: int = 0
    keys_shared: int = 0  # keys that more than one worker surveyed side by side (sharing their launches)
    launches_shared: int = 0  # launches of those keys compiled by another worker than the first to finish
    # REGSURVEY_TIMELINE=FILE (benchmarks): each key's dispatch, capture, compile and finish per worker, and the
    # survey's last steps, as seconds since the keys were listed, written to FILE as JSON.
    timeline: list[tuple[float, str, str, str]] | None = field(
        default_factory=lambda: [] if os.environ.get(TIMELINE_VAR) else None)

    def mark(self, event: str, worker: object = None, key: Key | None = None, at: float | None = None) -> None:
        """Note ``event`` in the timeline (when one is kept), now or ``at`` (a monotonic time)."""
        if self.timeline is not None:
            who = f"{id(worker):x}/{getattr(worker, 'target', '')}" if worker is not None else ""
            when = (time.monotonic() if at is None else at) - (self.listed or self.start)
            self.timeline.append((round(when, 4), event, who, f"{key.id}@{key.target}" if key else ""))

    def write_timeline(self) -> None:
        """Mark the end and write the timeline, when one is kept (best effort: a benchmark's aid)."""
        if self.timeline is not None:
            self.mark("end")
            with contextlib.suppress(OSError):
                Path(os.environ[TIMELINE_VAR]).write_text(json.dumps({"jobs": self.jobs, "events": self.timeline}))

    def answered(self, w: _Worker, answer: KeyFinished) -> None:
        self.peak_rss_mb = max(self.peak_rss_mb, answer.peak_rss_mb)
        if answer.preloaded:
            self.preloaded.add(id(w))
        if isinstance(w.process, ServerWorker):
            self.from_server.add(id(w))
        for phase, seconds in answer.timing.items():
            self.phases[phase] = self.phases.get(phase, 0.0) + seconds
        if w.ready_s is None and answer.ready_at:
            w.ready_s = answer.ready_at - w.spawned

    def as_dict(self, workers_ready: list[float]) -> dict[str, float]:
        end = time.monotonic()
        listed = self.listed or end
        out = {"jobs": float(self.jobs), "wall_s": end - self.start, "list_s": listed - self.start,
               **{k: v for k, v in sorted(self.phases.items())},
               "idle_s": max(0.0, self.jobs * (end - listed) - sum(self.phases.get(p, 0.0) for p in _COMPILING)),
               "tail_s": end - self.last_dispatch if self.last_dispatch else 0.0}
        if workers_ready:
            out["worker_ready_max_s"] = max(workers_ready)
        if self.peak_rss_mb:
            out["worker_peak_rss_mb"] = self.peak_rss_mb
        out["workers_preloaded"] = float(len(self.preloaded))
        out["workers_from_server"] = float(len(self.from_server))
        out["workers_started"] = float(self.workers_started)
        if self.keys_shared:
            out["keys_shared"] = float(self.keys_shared)
            out["launches_shared"] = float(self.launches_shared)
        return {k: round(v, 3) for k, v in out.items()}


@dataclass
class _Pool:
    checkout: Checkout
    objects_dir: Path
    triton_cache_dir: str | None = None
    target: Callable[..., None] | None = None  # the worker's main loop (tests give a stand-in)
    workers: list[_Worker] = field(default_factory=list)
    started: int = 0  # workers started so far (one import of the checkout each)

    def spawn(self, target: str) -> _Worker:
        """A new worker for ``target``'s keys: it imports the checkout with that target as the device."""
        # The worker imports the project's code (a merge request's, in CI): it gets no secret variable
        # but the results cache's signing key, with which it signs what it stores (see worker_environment).
        args = (str(self.checkout.root), str(self.checkout.root / "keys"), str(self.objects_dir),
                self.triton_cache_dir, worker_environment(os.environ), target, os.getpid())  # ends with this process
        self.started += 1
        if self.target is None and _worker_start() == "server":
            from . import server

            got = server.connect_worker(args)
            if got is not None:
                w = _Worker(*got, target=target)
                self.workers.append(w)
                return w
        ctx = _worker_context()
        if ctx.get_start_method() == "forkserver":
            _ensure_forkserver()  # at once if it runs
        parent, child = ctx.Pipe()
        if self.target is None:
            from .worker import serve  # the worker's module (and the capture machinery): not the CLI's
        process = ctx.Process(target=self.target or serve, daemon=True, name="regsurvey-worker",
                              args=(child, *args))
        with _main_module_hidden():
            process.start()
        child.close()
        w = _Worker(process, parent, target=target)
        self.workers.append(w)
        return w

    def kill(self, w: _Worker) -> None:
        if w.process.is_alive():
            w.process.kill()
        self._forget(w)

    def _forget(self, w: _Worker) -> None:
        w.process.join(timeout=10)
        w.conn.close()
        self.workers.remove(w)

    def close(self) -> None:
        # Workers keep nothing unsaved (objects and cache entries are written atomically), and a
        # polite shutdown of an interpreter holding torch and Triton takes most of a second: kill.
        # Kill them all first, then wait for each (rather than one kill and wait after the other).
        for w in self.workers:
            if w.process.is_alive():
                w.process.kill()
        for w in list(self.workers):
            self._forget(w)


# What every worker imports before it knows its checkout: the forkserver imports them once, and each
# worker is a fork of it (milliseconds) rather than a fresh interpreter importing them again (seconds).
_PRELOAD = ["regsurvey.engine._worker_preload"]


START_METHODS = ("server", "forkserver", "spawn")


@functools.cache
def _worker_start() -> str:
    """How this process's surveys start workers: ``server`` (forked by a ``regsurvey server`` of this
    identity: a running one, or one this call starts when ``REGSURVEY_SERVER`` is ``auto``), else
    ``forkserver`` (forked from a forkserver the survey starts, which imports torch and Triton once;
    Linux), else ``spawn``. ``REGSURVEY_WORKER_START`` forces one (to compare them). Asked only once a
    survey is coming."""
    from . import server

    chosen = os.environ.get("REGSURVEY_WORKER_START", "").strip().lower() or None
    if chosen is not None and chosen not in START_METHODS:
        raise SurveyError(f"REGSURVEY_WORKER_START={os.environ['REGSURVEY_WORKER_START']!r}: expected one of "
                          f"{', '.join(START_METHODS)}")
    try:
        policy = server.policy()
    except ValueError as exc:
        raise SurveyError(str(exc)) from None
    # Forking after importing torch is only known safe on Linux (macOS frameworks are not fork-safe).
    if chosen == "spawn" or not sys.platform.startswith("linux"):
        return "spawn"
    if chosen == "forkserver" or (policy == "off" and chosen is None):
        return "forkserver"
    if server.ping() is not None:
        return "server"
    if policy == "auto" and server.launch_for_survey():
        return "server"
    return "forkserver"


def _worker_context() -> Any:
    """The multiprocessing context of workers this survey starts itself."""
    method = "spawn" if _worker_start() == "spawn" else "forkserver"  # a server that went away: fork
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def start_workers_early() -> None:
    """Start what workers fork from now (the forkserver, or a server when none runs), so that its
    imports overlap with what the caller does next (making a worktree)."""
    if _worker_start() == "forkserver":
        _ensure_forkserver()


def _ensure_forkserver() -> None:
    from multiprocessing import forkserver

    _worker_context()  # sets what the forkserver preloads
    # Started with SIGINT ignored, the forkserver ignores it from its first instruction: a Ctrl-C
    # (which reaches the whole process group) is this process's to handle, not a traceback from
    # the middle of the forkserver's imports.
    with _main_module_hidden(), _sigint_ignored():
        forkserver.ensure_running()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored for the moment a child process is started (it inherits that); main thread only."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Spawn re-runs the parent's ``__main__`` script in each child unless it cannot find it. A worker
    needs nothing from it (and a caller's unguarded script would start surveying again in every
    worker): hide it while the worker starts."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, Any] = {n: main.__dict__[n] for n in ("__file__", "__spec__") if n in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None  # spawn reads it, so it must exist
    try:
        yield
    finally:
        main.__dict__.update(saved)


def _request(w: _Worker, message: Request, expected: type[A], timeout: float) -> A:
    w.conn.send(message)
    return _answer(w, message, expected, timeout)


def _answer(w: _Worker, message: Request, expected: type[A], timeout: float) -> A:
    """The worker's answer to ``message`` (already sent): an ``expected``; SurveyError for a Failed
    (its message), a silent or dead worker."""
    try:
        if not w.conn.poll(timeout):
            if isinstance(message, ListKeys):
                raise SurveyError(f"the keys files did not finish importing within {timeout:.0f} s: a keys file, "
                                  "or what it imports, hangs")
            raise SurveyError(f"worker did not answer {type(message).__name__} within {timeout:.0f} s")
        answer = w.conn.recv()
    except (EOFError, OSError):  # the pipe's end, or a reset connection to a server's worker
        w.process.join(timeout=5)
        answer = WorkerExited(w.process.exitcode)
    if isinstance(answer, WorkerExited):  # said by the server whose worker it was, or seen here
        raise SurveyError(f"the worker process ended while importing the keys files (exit code "
                          f"{answer.code}): a keys file, or what it imports, ends its process")
    if isinstance(answer, Failed):
        raise SurveyError(answer.error, answer.traceback)
    if not isinstance(answer, expected):
        raise SurveyError(f"worker answered {type(message).__name__} with {type(answer).__name__}")
    return answer


def _selected(key: Key, options: SurveyOptions) -> bool:
    if options.kinds and not any(fnmatch.fnmatchcase(key.kind, p) for p in options.kinds):
        return False
    if options.keys and not any(fnmatch.fnmatchcase(key.id, p) for p in options.keys):
        return False
    return True


def _error_row(key: Key, message: str, transient: bool = False) -> Row:
    return Row(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target, kernel=None,
               status=Status.ERROR, error=message, transient=transient)


def survey_checkout(checkout: Checkout, objects_dir: Path, options: SurveyOptions,
                    progress: Progress | None = None) -> Survey:
    """Survey every selected key of ``checkout``; failing keys are rows, not exceptions."""
    progress = progress or Progress()
    if options.targets:
        for t in options.targets:
            get_target(t)  # raises UnknownTargetError with the known names
    if not (checkout.root / "keys").is_dir():
        raise SurveyError(f"no keys/ directory in {checkout.label} ({checkout.root}): nothing to survey")
    progress.on_survey(checkout.label)
    from .ray_executor import ray_address, survey_on_ray

    if ray_address(options) is not None:  # on a Ray cluster: each key a call to an actor there
        return survey_on_ray(checkout, objects_dir, options, progress)
    from .worker import finishing_mode

    try:
        finishing_mode()  # what the workers will read: a bad value is the survey's one-line error
    except ValueError as exc:
        raise SurveyError(str(exc)) from None
    pool = _Pool(checkout, objects_dir, options.triton_cache_dir)
    timing = SurveyTiming(jobs=max(1, options.jobs))
    costs = KeyCosts(objects_dir.parent / "costs.json")
    ready: list[float] = []
    deferred: DeferredLint | None = None
    results: dict[tuple[str, str], list[Row]] | None = None
    said_once: set[SaidOnce] = set()
    unsigned: set[Unsigned] = set()  # cache entries ignored for their signature, by any worker
    try:
        # Every worker imports the checkout for one target (see worker.Worker). The first lists the
        # keys, with the first target asked for as the device (else the first the keys files name,
        # else the one earlier surveys used most, else sm90); the others are forked while it lists,
        # for the targets asked for or, when none is, those the keys files name (a guess: a worker
        # whose target has no keys is replaced).
        listing_target, asked = starting_targets(options, checkout, costs)
        if shared_import():
            listing_target = ANY_TARGET
        first = pool.spawn(listing_target)
        listing = ListKeys(tuple(options.targets) if options.targets else None)
        first.conn.send(listing)
        plan = costs.workers_for(asked, max(1, options.jobs)) if asked else []
        for target in plan[1:]:  # the first is the listing worker's
            pool.spawn(ANY_TARGET if shared_import() else target)
        listed = _answer(first, listing, KeysListed, timeout=IMPORT_TIMEOUT_S)
        keys = [k for k in listed.keys if _selected(k, options)]
        if not keys:
            raise SurveyError("no key matches the selection (--kind/--key)")
        toolchain = {}
        for backend in sorted({get_target(k.target).backend for k in keys}):
            toolchain[backend] = _request(first, ToolchainOf(backend), ToolchainInfo, timeout=120).toolchain
        progress.on_start(len(keys))
        timing.listed = time.monotonic()
        ordered = costs.longest_first(keys)
        while len(pool.workers) < max(1, options.jobs):
            pool.spawn(_wanted_target(ordered, pool.workers, costs.estimate))
        deferred = DeferredLint(objects_dir, options.jobs)
        results = _run_keys(pool, ordered, options, progress, timing, costs.estimate, on_rows=deferred.add,
                            on_said=said_once.update, on_unsigned=unsigned.update)
        timing.mark("keys done")
        costs.update(r for rows in results.values() for r in rows)
        ready = [w.ready_s for w in pool.workers if w.ready_s is not None]
    finally:
        timing.workers_started = pool.started
        pool.close()
        if deferred is not None and results is None:
            deferred.close()
        if unsigned:  # one line for them all (a key newly set on a cache of unsigned entries: every build)
            print(unsigned_warning(unsigned), file=sys.stderr)
    order = {(k.id, k.target): i for i, k in enumerate(keys)}
    rows = settled_failures(sorted((r for rs in results.values() for r in rs),
                                   key=lambda r: (order[(r.key, r.target)], r.launch)))
    assert deferred is not None
    timing.mark("workers closed")
    rows, lint_s = deferred.finish(rows)
    timing.mark("lint done")
    for began, ended, cubins in deferred.runs:
        timing.mark(f"lint batch of {count(cubins, 'cubin')}, {ended - began:.2f} s", at=began)
    if lint_s:
        timing.phases["lint_s"] = timing.phases.get("lint_s", 0.0) + lint_s
    targets = tuple(dict.fromkeys(k.target for k in keys))
    figures = timing.as_dict(ready)
    timing.write_timeline()
    return Survey(commit=checkout.commit, label=checkout.label, targets=targets, toolchain=toolchain,
                  rows=tuple(rows), dirty=checkout.dirty,
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"), timing=figures,
                  reader=READER_REVISION, declared=dict(listed.declared),
                  said_once=survey_said_once(said_once, rows, targets))


def settled_failures(rows: list[Row]) -> list[Row]:
    """``rows`` with the failures a worker took from another's ``.failed`` record (transient: a record is a
    hint, see store.inflight) settled where this survey compiled the kernel itself and it failed the same
    way: then they are the kernel's failure, not one of the moment. Those left transient make the stored
    survey be surveyed again rather than reused."""
    compiled = {(r.triton_hash, r.error) for r in rows
                if r.status is Status.ERROR and not r.transient and r.triton_hash is not None}
    return [replace(r, transient=False) if r.transient and r.status is Status.ERROR and r.triton_hash is not None
            and (r.triton_hash, r.error) in compiled else r for r in rows]


def starting_targets(options: SurveyOptions, checkout: Checkout, costs: KeyCosts) -> tuple[str, list[str]]:
    """Before the keys are listed: the target the listing worker imports the checkout for, and the
    targets to start the other workers for (none: wait for the list). The targets asked for; else
    those the keys files name literally (:func:`declared_targets`, a guess); the listing target is
    then the first of them, else the one earlier surveys used most, else sm90."""
    asked = [get_target(t).name for t in options.targets or ()] or declared_targets(checkout.root / "keys")
    return (asked[0] if asked else costs.usual_target() or DEFAULT_LIST_TARGET), asked


MAX_KEY_SECONDS = 1e7  # what costs.json may say a key took (a hundred days); anything else is damage


class KeyCosts:
    """Compile seconds per (key, target) from earlier surveys (of any commit), to schedule the slowest keys
    first.

    A long key started last is the tail that keeps every other worker idle; started first, it
    overlaps with the rest. A key never surveyed is estimated from what is known before compiling it
    (:meth:`estimate`): its kind's other keys, else nothing (a kind never surveyed goes first of all),
    and, within either, its axes (a bigger tile, width, more warps or stages, a path switched on: a bigger
    build).
    """

    def __init__(self, path: Path):
        self.path = path
        self.seconds: dict[str, float] = {}  # none yet, or damaged: scheduling order is only an optimisation
        self._means: tuple[tuple[int, int], dict[tuple[str, str], float]] | None = None
        try:
            known = json.loads(read_regular(path, 256 * MiB))
        except (OSError, ValueError):
            return
        if isinstance(known, dict):
            # Seconds only: Python's JSON reads NaN and Infinity, on which sorting and sharing workers out
            # fail (int(nan) raised); a negative time, or one that overflows a sum, is as damaged.
            self.seconds = {k: float(v) for k, v in known.items()
                            if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                            and 0 <= v <= MAX_KEY_SECONDS}

    def estimate(self, key: Key) -> float:
        """The key's compile seconds last time. A key never surveyed: the mean of its kind's keys surveyed
        on its target (else on any target), scaled by :func:`axes_factor`; a key of a kind never surveyed:
        the longest key known (1 s when none is), so scaled, so that it starts before every known one."""
        known = self.seconds.get(f"{key.target}:{key.id}")
        if known is not None:
            return known
        means = self._kind_means()
        kind = means.get((key.target, key.kind), means.get(("", key.kind)))
        if kind is not None:
            return kind * axes_factor(key)
        return max(self.seconds.values(), default=1.0) * axes_factor(key)

    def _kind_means(self) -> dict[tuple[str, str], float]:
        """Mean seconds per (target, kind), and per ("", kind) over every target (a key id starts with its
        kind's name); computed once per state of :attr:`seconds`."""
        state = (id(self.seconds), len(self.seconds))
        if self._means is None or self._means[0] != state:
            totals: dict[tuple[str, str], list[float]] = {}
            for name, seconds in self.seconds.items():
                target, _, ident = name.partition(":")
                kind = ident.split("/", 1)[0]
                for group in ((target, kind), ("", kind)):
                    total = totals.setdefault(group, [0.0, 0.0])
                    total[0] += seconds
                    total[1] += 1
            self._means = (state, {group: t / n for group, (t, n) in totals.items()})
        return self._means[1]

    def usual_target(self) -> str | None:
        """The target with the most keys surveyed before in this store (None when none was)."""
        counts: dict[str, int] = {}
        for name in self.seconds:
            target = name.split(":", 1)[0]
            if target in TARGETS:
                counts[target] = counts.get(target, 0) + 1
        return max(counts, key=lambda t: counts[t]) if counts else None

    def workers_for(self, targets: list[str], jobs: int) -> list[str]:
        """The target of each of ``jobs`` workers started before the keys are listed, the first being
        ``targets[0]`` (the listing worker's): in proportion to the compile seconds this store knows of each
        target's keys (a target compiling 1.35x slower gets more workers, so that no target's workers run
        out of keys long before the others'), at least one each; in turn when a target has none known."""
        totals = [sum(v for k, v in self.seconds.items() if k.startswith(f"{t}:")) for t in targets]
        if jobs <= len(targets) or not all(totals):
            return [targets[i % len(targets)] for i in range(jobs)]
        spare = jobs - len(targets)
        shares = [spare * t / sum(totals) for t in totals]
        counts = [1 + int(share) for share in shares]
        for i in sorted(range(len(targets)), key=lambda i: int(shares[i]) - shares[i])[:jobs - sum(counts)]:
            counts[i] += 1  # the largest remainders
        return [t for t, n in zip(targets, counts) for _ in range(n)]

    def longest_first(self, keys: list[Key]) -> list[Key]:
        """``keys`` reordered by decreasing :meth:`estimate` (stable; at a tie, the key never surveyed first)."""
        return sorted(keys, key=lambda k: (-self.estimate(k), f"{k.target}:{k.id}" in self.seconds))

    def update(self, rows: Any) -> None:
        """Record the compile time of each key (all its launches together) and save."""
        totals: dict[str, float] = {}
        for r in rows:
            if r.ok and not r.reused:
                totals[f"{r.target}:{r.key}"] = totals.get(f"{r.target}:{r.key}", 0.0) + r.compile_s
        if not totals:
            return
        self.seconds.update({k: round(v, 3) for k, v in totals.items()})
        try:
            atomic_write(self.path, json.dumps(self.seconds, sort_keys=True).encode())
        except OSError:
            pass


def axes_factor(key: Key) -> float:
    """How much bigger a build a key's axes say it is, known before anything is compiled: 1, plus 5 %
    per doubling of each numeric axis value above 1 (tiles, widths, warps, stages, parallelism) and per
    boolean axis that is on (a path compiled in). Only an order among keys of one kind: strings say nothing."""
    extra = 0.0
    for _, value in key.axes:
        if isinstance(value, bool):
            extra += 1.0 if value else 0.0
        elif isinstance(value, (int, float)) and value > 1:
            extra += math.log2(value)
    return 1.0 + 0.05 * extra


# How long the first worker may take to import the keys files (torch, Triton, the project and what it
# imports: a minute on a cold cache for a large library), whatever --timeout gives each key.
IMPORT_TIMEOUT_S = 240.0

# How many compiled keys a worker may still be reading and storing when it is sent another.
_FINISHING_DEPTH = 2


def shared_import() -> bool:
    """``REGSURVEY_SHARED_IMPORT=1``: every worker imports the project once and surveys every target
    from that import, as before per-target isolation. Wrong for launchers that cache the device;
    there only so that ``benchmarks/survey_speed.py`` can measure what isolation costs, side by side."""
    return os.environ.get("REGSURVEY_SHARED_IMPORT", "") == "1"


def _wanted_target(pending: list[Key], workers: list[_Worker], cost: Callable[[Key], float]) -> str:
    """The target a new worker should survey: :func:`wanted_target`, or every target (ANY_TARGET) in the
    benchmark's shared-import mode."""
    if pending and shared_import():
        return ANY_TARGET
    return wanted_target(pending, workers, cost)


def wanted_target(pending: list[Key], workers: Sequence[Any], cost: Callable[[Key], float]) -> str:
    """The target a new worker (or Ray actor: anything with a ``target``) should take: the one with the
    most pending compile seconds per worker already on it (a target with none pending is never chosen
    while another has some)."""
    load: dict[str, float] = {}
    for k in pending:
        load[k.target] = load.get(k.target, 0.0) + max(cost(k), 1e-3)
    if not load:
        return workers[0].target if workers else DEFAULT_LIST_TARGET
    serving: dict[str, int] = {}
    for w in workers:
        serving[w.target] = serving.get(w.target, 0) + 1
    return max(load, key=lambda t: load[t] / (1 + serving.get(t, 0)))


def run_keys(keys: list[Key], checkout: Checkout, objects_dir: Path, options: SurveyOptions, *,
             worker_main: Callable[..., None] | None = None, progress: Progress | None = None,
             timing: SurveyTiming | None = None) -> dict[tuple[str, str], list[Row]]:
    """The rows of each of ``keys`` (by key id and target), from a pool of ``options.jobs`` workers: the
    scheduler on its own, without listing keys or storing a survey (:func:`survey_checkout` does both).

    ``worker_main``: the workers' main loop, :func:`.worker.serve` by default; a stand-in speaking the
    same protocol (:mod:`.protocol`) drives the scheduler's handling of workers that die or fall silent.
    """
    pool = _Pool(checkout, objects_dir, options.triton_cache_dir, target=worker_main)
    timing = timing or SurveyTiming(jobs=max(1, options.jobs))
    try:
        for _ in range(max(1, options.jobs)):
            pool.spawn(keys[0].target if keys else DEFAULT_LIST_TARGET)
        return _run_keys(pool, keys, options, progress or Progress(), timing)
    finally:
        pool.close()


def _run_keys(pool: _Pool, keys: list[Key], options: SurveyOptions, progress: Progress,
              timing: SurveyTiming, cost: Callable[[Key], float] = lambda key: 1.0,
              on_rows: Callable[[list[Row], bool], None] | None = None,
              on_said: Callable[[tuple[SaidOnce, ...]], None] | None = None,
              on_unsigned: Callable[[tuple[Unsigned, ...]], None] | None = None) -> dict[tuple[str, str], list[Row]]:
    """Send keys to workers as they become free, collect their rows, enforce the time-out; ``on_said`` is
    given what the workers' kind bodies said once per process, ``on_unsigned`` the cache entries they
    ignored for their signature.

    A worker says KeyCaptured once a key's body ran (with its number of launches), KeyCompiled once its
    launches are compiled, and answers KeyFinished with the rows once their objects are read, stored and
    linted; it gets the next key after KeyCompiled. A worker that times out or
    dies takes the key it was compiling with it (an error row); keys it was only finishing are sent
    again, once: a key that was in flight on two workers that died is an error too.

    A worker takes only keys of its own target (it imported the checkout for it). One that is idle,
    with no key of its target left to take while other targets' keys wait, is ended and a worker
    for the target with the most work per worker takes its place; that worker is started as soon as
    the other takes the last key of its target, so that its start overlaps that key's compile. Once no
    key is left to hand out, an idle worker helps with a key of its target in flight that has more
    launches than workers on it (the longest first; each worker once per key, and none once a copy has
    compiled every launch: :meth:`KeyCopies.may_help`): each copy compiles the launches no other is
    compiling and reads the others' results (the workers' build locks share them out), and the key's
    rows are taken from every copy (:func:`_merged_copies`) when the last one finishes. A copy lost
    while others go on costs nothing.
    """
    pending = list(reversed(keys))  # pop() from the end keeps the given order
    left = Counter(k.target for k in pending)  # pending keys per target
    results: dict[tuple[str, str], list[Row]] = {}
    resent: set[tuple[str, str]] = set()
    warned: set[str] = set()
    shown_notes: set[str] = set()  # the workers' warnings shown so far
    copies = KeyCopies()
    launches: dict[tuple[str, str], int] = {}  # each key's launches, as its first copy captured them

    def finish(done: Key, rows: list[Row]) -> None:
        results[(done.id, done.target)] = rows
        progress.on_key(done, rows)
        if on_rows is not None:
            on_rows(rows, not pending)  # then every key has been handed out

    def copy_done(done: Key, rows: list[Row]) -> None:
        """One copy of ``done`` finished with ``rows``: the key is done when no other copy is out."""
        last, merged = copies.ended(done, rows)
        if last and merged is not None:
            finish(done, merged)

    def lose(w: _Worker, why: str, blame: bool = True) -> None:
        """``w`` is gone: the key it compiled fails with ``why``; those it was finishing go again, to
        a worker started in its place while keys remain. With ``blame`` False (the worker died of no
        key's doing: the server that forked it ended) every key it held goes again. A key another
        copy still carries (or one already finished) is left to it."""
        blamed = (w.key or w.finishing[0]) if blame else None
        for k in (x for x in [w.key, *w.finishing] if x is not None):
            ident = (k.id, k.target)
            last, merged = copies.ended(k)
            if not last:
                continue
            if merged is not None:
                finish(k, merged)
            elif k == blamed:
                finish(k, [_error_row(k, why, transient=True)])
            elif ident in resent:
                finish(k, [_error_row(k, f"{why}; it was in flight on a worker that failed before", transient=True)])
            else:
                resent.add(ident)
                pending.append(k)
                left[k.target] += 1
        if blamed is None and why not in warned:
            warned.add(why)
            print(f"regsurvey: warning: {why}; its keys are surveyed again", file=sys.stderr)
        w.key, w.finishing = None, []
        pool.kill(w)
        if pending:
            pool.spawn(_wanted_target(pending, pool.workers, cost))

    def take(target: str) -> Key | None:
        """The next pending key of ``target`` (pending is in reverse order: the next is last)."""
        if target != ANY_TARGET and not left[target]:
            return None
        for i in range(len(pending) - 1, -1, -1):
            if pending[i].target == target or target == ANY_TARGET:
                left[pending[i].target] -= 1
                return pending.pop(i)
        return None

    def helped(w: _Worker) -> Key | None:
        """A key in flight that ``w`` can help with: of its target, not already on it, with more launches
        than copies; the one with the most estimated seconds per copy."""
        if not options.reuse_results:  # copies share launches through build locks, which --force takes none of
            return None
        held = {(k.id, k.target) for k in [w.key, *w.finishing] if k is not None}
        best: tuple[float, Key] | None = None
        for other in pool.workers:
            k = other.key
            if k is None or (k.id, k.target) in held or (k.target != w.target and w.target != ANY_TARGET):
                continue
            ident = (k.id, k.target)
            if launches.get(ident, 1) <= copies.out(k) or not copies.may_help(k, w):
                continue
            share = cost(k) / copies.out(k)
            if best is None or share > best[0]:
                best = (share, k)
        return best[1] if best is not None else None

    def send(w: _Worker, key: Key) -> None:
        w.key, w.started, w.waiting = key, time.monotonic(), None
        w.heard = timing.last_dispatch = w.started
        timing.mark("sent", w, key)
        copies.sent(key, w)
        w.conn.send(SurveyKey(key, reuse=options.reuse_results))

    def heard(w: _Worker, message: Answer) -> None:
        w.heard = time.monotonic()
        for line in getattr(message, "notes", ()):  # the worker's warnings: its stderr may be a server's log
            if line not in shown_notes:  # several workers of a target may say the same
                shown_notes.add(line)
                print(line, file=sys.stderr)
        if on_said is not None and isinstance(message, KeyCompiled | KeyFinished) and message.said_once:
            on_said(message.said_once)
        if on_unsigned is not None and isinstance(message, KeyCompiled | KeyFinished) and message.unsigned:
            on_unsigned(message.unsigned)
        match message:
            case WorkerExited(code=code):  # a server's worker has exited: its code, then the connection ends
                w.process.exitcode = code
                return
            case KeyWaiting(key=key, holder=holder):
                if w.key == key:
                    w.waiting = holder
                return
            case KeyCaptured(key=key, launches=n):
                launches.setdefault((key.id, key.target), n)
                timing.mark("captured", w, key)
                return
            case KeyCompiled(key=key):
                timing.mark("compiled", w, key)
                copies.compiled(key)
                if w.key == key:
                    w.finishing.append(key)
                    w.key = None
                return
            case KeyFinished(key=key) | Failed(key=Key() as key):
                pass
            case _:
                return  # an answer to no key this worker holds (cannot happen): ignore
        if w.key == key:
            w.key = None
        elif key in w.finishing:
            w.finishing.remove(key)
        else:
            return
        timing.mark("finished", w, key)
        if isinstance(message, KeyFinished):
            timing.answered(w, message)
            copy_done(key, list(message.rows))
        else:
            copy_done(key, [_error_row(key, message.error, transient=message.transient)])

    while pending or any(w.key is not None or w.finishing for w in pool.workers):
        replaced = False
        for w in list(pool.workers):
            if w.key is not None or len(w.finishing) >= _FINISHING_DEPTH:
                continue
            if not pending:
                helping = helped(w)
                if helping is not None:
                    send(w, helping)
                continue
            nxt = take(w.target)
            if nxt is None:
                if not w.finishing:  # nothing of its target left: a worker for a target with work
                    pool.kill(w)
                    if not w.succeeded:
                        pool.spawn(_wanted_target(pending, pool.workers, cost))
                    replaced = True
                continue
            send(w, nxt)
        # A worker compiling the last key of its target while other targets' keys wait gets its successor
        # now: a worker for the target with the most work left starts, and imports the checkout, while that
        # key compiles (rather than after it: a worker's start is 0.5 to 1 s, a demo key's compile less).
        if pending:
            for w in list(pool.workers):
                if w.key is not None and not w.succeeded and w.target != ANY_TARGET and not left[w.target]:
                    w.succeeded = True
                    pool.spawn(_wanted_target(pending, [x for x in pool.workers if not x.succeeded], cost))
                    replaced = True
        if replaced:
            continue  # the new worker gets its key now, not after the busy ones next say something
        busy = [w for w in pool.workers if w.key is not None or w.finishing]
        if not busy:
            if pending and not pool.workers:  # every worker was lost: start one
                pool.spawn(_wanted_target(pending, pool.workers, cost))
            continue
        now = time.monotonic()
        wait_for = max(0.0, min(w.deadline(options.timeout) - now for w in busy))
        ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=wait_for)
        for w in busy:
            if w.conn in ready:
                try:
                    while w.conn.poll():
                        heard(w, w.conn.recv())
                except (EOFError, OSError):
                    w.process.join(timeout=5)
                    if w.process.exitcode is None and isinstance(w.process, ServerWorker):
                        # The server says each of its workers' exit code: it ended, not the worker.
                        lose(w, "the worker server ended mid-survey", blame=False)
                    else:
                        lose(w, f"worker process died while surveying the key (exit code {w.process.exitcode})")
            elif time.monotonic() >= w.deadline(options.timeout):
                lose(w, w.timed_out(options.timeout))
    timing.keys_shared, timing.launches_shared = copies.keys_shared, copies.launches_shared
    return results


class KeyCopies:
    """The copies of each key in flight (workers, or Ray actors, surveying it side by side: one, unless idle
    ones help with it at the tail) and the rows of those that ended; a key is done when its last copy ends,
    its rows merged from them (:func:`_merged_copies`). Counts the keys shared and the launches helpers
    compiled (``SurveyTiming.keys_shared``, ``launches_shared``)."""

    def __init__(self) -> None:
        self._out: dict[tuple[str, str], int] = {}
        self._rows: dict[tuple[str, str], list[list[Row]]] = {}
        # Who took a copy of each key in flight, by id (workers and actors are dataclasses, compared by value),
        # kept alive while the key is, so that no id is reused meanwhile.
        self._carriers: dict[tuple[str, str], dict[int, object]] = {}
        self._compiled: set[tuple[str, str]] = set()  # keys in flight of which a copy has compiled every launch
        self.keys_shared = 0
        self.launches_shared = 0

    def sent(self, key: Key, carrier: object) -> None:
        """A copy of ``key`` is out, on ``carrier`` (a worker, an actor)."""
        ident = (key.id, key.target)
        self._out[ident] = self._out.get(ident, 0) + 1
        self._carriers.setdefault(ident, {})[id(carrier)] = carrier

    def compiled(self, key: Key) -> None:
        """A copy of ``key`` has every launch compiled (by itself, or found compiled by another copy)."""
        if (key.id, key.target) in self._out:
            self._compiled.add((key.id, key.target))

    def out(self, key: Key) -> int:
        """The copies of ``key`` out now."""
        return self._out.get((key.id, key.target), 0)

    def may_help(self, key: Key, carrier: object) -> bool:
        """Whether ``carrier`` may take another copy of ``key``: not when it took one already (that copy
        compiled every launch it could take, and waited for the rest), nor once any copy has compiled every
        launch (none is left to take). A copy ended early would otherwise be sent again at once, over and
        over while the key's slowest launch compiles elsewhere, each copy running the kind body again."""
        ident = (key.id, key.target)
        return ident not in self._compiled and id(carrier) not in self._carriers.get(ident, {})

    def ended(self, key: Key, rows: list[Row] | None = None) -> tuple[bool, list[Row] | None]:
        """A copy of ``key`` ended with ``rows`` (None: lost). (True, the key's merged rows) when it was the
        last and some copy left rows; (True, None) when it was the last and none did (the caller decides:
        an error, or the key again); (False, None) while another copy is out."""
        ident = (key.id, key.target)
        self._out[ident] -= 1
        if rows is not None:
            self._rows.setdefault(ident, []).append(rows)
        if self._out[ident] > 0:
            return False, None
        del self._out[ident]
        self._carriers.pop(ident, None)
        self._compiled.discard(ident)
        got = self._rows.pop(ident, None)
        if got is None:
            return True, None
        merged, shared = _merged_copies(got)
        if len(got) > 1:
            self.keys_shared += 1
            self.launches_shared += shared
        return True, merged


def _merged_copies(outcomes: list[list[Row]]) -> tuple[list[Row], int]:
    """One key's rows from the copies of it that workers surveyed side by side (one copy: its rows), and
    how many launches came from another copy. The first copy's rows that built (the first copy's
    otherwise), each launch that copy found compiled by another replaced by that other copy's row: the
    rows of one worker that compiled them all."""
    built = [rows for rows in outcomes if any(r.kernel is not None for r in rows)] or outcomes
    base = built[0]
    if len(built) == 1:
        return base, 0
    compiled: dict[tuple[int, str | None], Row] = {
        (r.launch, r.triton_hash): r for rows in built[1:] for r in rows if not r.reused and r.triton_hash}
    merged = [compiled.get((r.launch, r.triton_hash), r) if r.reused else r for r in base]
    return merged, sum(1 for old, new in zip(base, merged) if new is not old)
