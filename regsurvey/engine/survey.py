"""Surveying a checkout: list its keys, schedule them over workers, collect the rows into a :class:`Survey`.

The set-up is the same whatever runs the workers (a :class:`Pool`: the local processes of
:mod:`.transport_local`, or a Ray cluster's actors, :mod:`.ray_executor`): the worker listing the keys
imports the checkout for the first target asked for (else the first the keys files name, else the one
earlier surveys used most, else sm90), and the others start while it lists, for the targets asked for or,
when none is, those the keys files name (a guess: a worker whose target has no keys is replaced), in
proportion to each target's compile seconds the store knows (:meth:`.costs.KeyCosts.workers_for`). The keys
are then handed out longest first by one :class:`~.schedule.Schedule`; the lint of the cubins the workers
leave runs beside them (:mod:`.deferred_lint`); failures a worker took from another's record are settled
where this survey compiled the kernel itself (:func:`settled_failures`).
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..keys.keyfiles import declared_targets
from ..model.keys import Key
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Row, SaidOnce, Status, Survey
from ..model.targets import DEFAULT_LIST_TARGET, get_target
from ..model.version import READER_REVISION
from ..repo.checkout import Checkout
from ..store.objectstore import ObjectStore
from .copies import key_id
from .costs import KeyCosts
from .deferred_lint import DeferredLint
from .errors import SurveyError
from .key_reads import KeyReads
from .key_reads import enabled as key_reads_enabled
from .key_records import KeyRecords, namespace, recordable, reused_rows
from .launcher_messages import survey_said_once
from .other_toolchain import local_only, other_environment, refuse_unbuildable
from .protocol import KeysListed
from .ray_address import ray_address
from .schedule import Policy, Schedule, Targeted, Transport
from .transport_local import LocalPool
from .worker_start import worker_environment

# How long the first worker may take to import the keys files (torch, Triton, the project and what it
# imports: a minute on a cold cache for a large library), whatever --timeout gives each key.
IMPORT_TIMEOUT_S = 240.0

W = TypeVar("W", bound=Targeted)

KeysFor = Callable[[list[Key]], list[Key]]  # the keys selected -> the keys to survey


class Pool(Transport[W], Protocol[W]):
    """What runs a survey's workers, as the set-up sees it: a :class:`~.schedule.Transport`, and what is
    asked of the workers before the keys are scheduled."""

    policy: Policy  # how its workers take keys
    lost_before: str  # the end of the error of a key lost twice: "... it was in flight on <lost_before>"
    said_once: set[SaidOnce]  # what kind bodies said once per process, in any worker

    @property
    def workers(self) -> list[W]:
        """The workers running now."""
        ...

    def capacity(self) -> int:
        """The workers it runs at once."""
        ...

    def list_keys(self, target: str, targets: tuple[str, ...] | None) -> None:
        """Start a worker for ``target`` and ask it for the keys of ``targets`` (None: every target)."""
        ...

    def listed(self, timeout: float) -> KeysListed:
        """The keys :meth:`list_keys` asked for; SurveyError when they do not come within ``timeout``."""
        ...

    def toolchain(self, backend: str) -> dict[str, Any]:
        """The toolchain block of ``backend``."""
        ...

    def run(self, schedule: Schedule[W], listed_at: float) -> None:
        """Feed ``schedule`` until every key is done."""
        ...

    def close(self) -> None:
        """End every worker."""
        ...

    def figures(self, *, rows: int, lint_s: float, closed_at: float,
                lint_runs: list[tuple[float, float, int]]) -> dict[str, float]:
        """The survey's ``timing`` block: ``rows`` builds; the deferred lint took ``lint_s`` in ``lint_runs``
        (monotonic start and end, cubins), once the workers were closed at ``closed_at``."""
        ...


def survey_checkout(checkout: Checkout, objects_dir: Path, options: SurveyOptions,
                    progress: Progress | None = None, keys_for: KeysFor | None = None) -> Survey:
    """Survey every selected key of ``checkout``; failing keys are rows, not exceptions. ``keys_for``: the
    keys to survey instead, made from those selected (``regsurvey fix``'s variants of them)."""
    progress = progress or Progress()
    if options.targets:
        for t in options.targets:
            get_target(t)  # raises UnknownTargetError with the known names
        if ray_address(options) is None:  # (on a Ray cluster the actors' Triton compiles, not this one)
            refuse_unbuildable(options.targets, options.toolchain)  # SurveyError: one line naming the release
    if not (checkout.root / "keys").is_dir():
        raise SurveyError(f"no keys/ directory in {checkout.label} ({checkout.root}): nothing to survey")
    local_only(ray_address(options), options.toolchain)
    progress.announce(checkout.label)
    if ray_address(options) is not None:  # on a Ray cluster: each key a call to an actor there
        from .ray_executor import ray_pool  # Ray's modules: imported only for a survey there

        with ray_pool(checkout, objects_dir, options) as on_ray:
            return surveyed(on_ray, checkout, objects_dir, options, progress, keys_for)
    return surveyed(LocalPool(checkout, objects_dir, options), checkout, objects_dir, options, progress, keys_for)


def surveyed(pool: Pool[Any], checkout: Checkout, objects_dir: Path, options: SurveyOptions,
             progress: Progress, keys_for: KeysFor | None = None) -> Survey:
    """The survey of ``checkout`` by ``pool``'s workers (which it closes)."""
    costs = KeyCosts(objects_dir.parent / "costs.json")
    deferred: DeferredLint | None = None
    results: dict[tuple[str, str], list[Row]] | None = None
    records: KeyRecords | None = None
    reused: dict[tuple[str, str], list[Row]] = {}
    reused_said: set[SaidOnce] = set()
    try:
        listed, keys, toolchain = _listed(pool, checkout, options, costs)
        if keys_for is not None:
            keys = keys_for(keys)
        progress.on_start(len(keys))
        # Keys whose kind bodies read nothing that changed since their record: their rows as they were.
        records = (KeyRecords(objects_dir.parent, namespace(toolchain))
                   if options.reuse_results and keys_for is None and key_reads_enabled() else None)
        if records is not None:
            reused, reused_said = reused_rows(records, keys, checkout.root, _workers_environment(options),
                                              ObjectStore(objects_dir))
        for key in keys:
            if key_id(key) in reused:
                progress.on_key(key, reused[key_id(key)])
        listed_at = time.monotonic()
        jobs = pool.capacity()
        deferred = DeferredLint(objects_dir, jobs)
        schedule = Schedule(costs.longest_first([k for k in keys if key_id(k) not in reused]), pool,
                            policy=pool.policy, timeout=options.timeout,
                            cost=costs.estimate, reuse=options.reuse_results, progress=progress,
                            on_rows=deferred.add, workers=pool.workers, lost_before=pool.lost_before)
        schedule.fill(jobs)
        pool.run(schedule, listed_at)
        results = {**schedule.results, **reused}
        if keys_for is None:  # a sweep's variant keys are no keys of the project's: costs.json keeps none
            costs.update(r for rows in schedule.results.values() for r in rows)
    finally:
        pool.close()
        if deferred is not None and results is None:
            deferred.close()
    closed_at = time.monotonic()
    order = {(k.id, k.target): i for i, k in enumerate(keys)}
    rows = settled_failures(sorted((r for rs in results.values() for r in rs),
                                   key=lambda r: (order[(r.key, r.target)], r.launch)))
    rows, lint_s = deferred.finish(rows)
    targets = tuple(dict.fromkeys(k.target for k in keys))
    said_once = survey_said_once(set(pool.said_once) | reused_said, rows, targets)
    if records is not None:
        _record(records, keys, schedule.reads, rows, said_once)
    return Survey(commit=checkout.commit, label=checkout.label, targets=targets, toolchain=toolchain,
                  rows=tuple(rows), dirty=checkout.dirty,
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  timing={**pool.figures(rows=len(rows), lint_s=lint_s, closed_at=closed_at, lint_runs=deferred.runs),
                          **({"keys_unchanged": float(len(reused))} if reused else {})},
                  reader=READER_REVISION,
                  declared=dict(listed.declared), said_once=said_once)


def _workers_environment(options: SurveyOptions) -> dict[str, str]:
    """The environment the survey's workers get (what a key's record compares its variables with)."""
    environ = worker_environment(os.environ)
    return other_environment(environ) if options.toolchain is not None else environ


def _record(records: KeyRecords, keys: list[Key], reads: dict[tuple[str, str], KeyReads], rows: list[Row],
            said_once: tuple[SaidOnce, ...]) -> None:
    """Keep each key that ran with what its body read (its final rows: linted), where its rows are what its
    inputs make (:func:`.key_records.recordable`)."""
    by_key: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        by_key.setdefault((row.key, row.target), []).append(row)
    for key in keys:
        found, made = reads.get(key_id(key)), by_key.get(key_id(key), [])
        if found is not None and recordable(made):
            records.put(key, found, made, said_once)


def _listed(pool: Pool[Any], checkout: Checkout, options: SurveyOptions,
            costs: KeyCosts) -> tuple[KeysListed, list[Key], dict[str, dict[str, Any]]]:
    """The keys listed, those selected, and the toolchain block of each of their backends. Every worker
    imports the checkout for one target (see worker.Worker); the others start while the first lists."""
    listing_target, asked = starting_targets(options, checkout, costs)
    pool.list_keys(listing_target, tuple(options.targets) if options.targets else None)
    if asked:  # the targets are known (or guessed): the other workers start (and import) while the first lists
        for target in costs.workers_for(asked, pool.capacity())[1:]:  # the first is the listing worker's
            pool.start(target)
    listed = pool.listed(IMPORT_TIMEOUT_S)
    keys = [k for k in listed.keys if selected(k, options)]
    if not keys:
        raise SurveyError("no key matches the selection (--kind/--key)")
    if ray_address(options) is None:  # the targets the keys' matrices name, where none was asked for
        refuse_unbuildable((k.target for k in keys), options.toolchain)
    backends = sorted({get_target(k.target).backend for k in keys})
    return listed, keys, {backend: pool.toolchain(backend) for backend in backends}


def selected(key: Key, options: SurveyOptions) -> bool:
    """Whether ``key`` is one of those ``--kind`` and ``--key`` select."""
    if options.kinds and not any(fnmatch.fnmatchcase(key.kind, p) for p in options.kinds):
        return False
    if options.keys and not any(fnmatch.fnmatchcase(key.id, p) for p in options.keys):
        return False
    return True


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

