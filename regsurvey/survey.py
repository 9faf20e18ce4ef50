"""Surveying a checkout: list its keys, compile them in worker processes, collect the rows.

Workers are spawned processes whose import path starts at the checkout (see :mod:`regsurvey.worker`).
This module schedules keys over them, enforces the per-key time-out (a hung compile is killed and
its key marked ``error``), survives a worker that dies, and turns the rows into a :class:`Survey`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import multiprocessing
import multiprocessing.connection
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import worker as worker_mod
from .checkout import Checkout
from .matrix import Key
from .objectstore import atomic_write
from .results import Row, Survey
from .targets import get_target


class SurveyError(Exception):
    """A survey that cannot start (bad keys files, unknown target); one-line message."""


@dataclass(frozen=True)
class SurveyOptions:
    """What to survey and how."""

    targets: tuple[str, ...] | None = None  # override the matrices' targets
    kinds: tuple[str, ...] = ()  # only these kinds (glob patterns)
    keys: tuple[str, ...] = ()  # only keys whose id matches one of these glob patterns
    jobs: int = 1
    timeout: float = 600.0  # seconds per key
    triton_cache_dir: str | None = None  # a Triton cache of the survey's own (e.g. a cold one)
    reuse_results: bool = True  # take results of identical kernels from the content-addressed cache


@dataclass
class Progress:
    """Callbacks a front end can give to follow a survey."""

    on_start: Callable[[int], None] = lambda total: None
    on_key: Callable[[Key, list[Row]], None] = lambda key, rows: None


@dataclass
class _Worker:
    process: Any
    conn: Any
    key: Key | None = None
    started: float = 0.0


@dataclass
class _Pool:
    checkout: Checkout
    objects_dir: Path
    triton_cache_dir: str | None = None
    workers: list[_Worker] = field(default_factory=list)

    def spawn(self) -> _Worker:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(
            target=worker_mod.serve, daemon=True, name="regsurvey-worker",
            args=(child, str(self.checkout.root), str(self.checkout.root / "keys"), str(self.objects_dir),
                  self.triton_cache_dir))
        with _main_module_hidden():
            process.start()
        child.close()
        w = _Worker(process, parent)
        self.workers.append(w)
        return w

    def kill(self, w: _Worker) -> None:
        if w.process.is_alive():
            w.process.kill()
        w.process.join(timeout=10)
        w.conn.close()
        self.workers.remove(w)

    def close(self) -> None:
        # Workers keep nothing unsaved (objects and cache entries are written atomically), and a
        # polite shutdown of an interpreter holding torch and Triton takes most of a second: kill.
        for w in list(self.workers):
            self.kill(w)


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


def _request(w: _Worker, message: dict[str, Any], timeout: float) -> dict[str, Any]:
    w.conn.send(message)
    if not w.conn.poll(timeout):
        raise SurveyError(f"worker did not answer {message['op']!r} within {timeout:.0f} s")
    try:
        return w.conn.recv()
    except EOFError:
        raise SurveyError(
            f"worker process died while loading the keys (exit code {w.process.exitcode})") from None


def _selected(key: Key, options: SurveyOptions) -> bool:
    if options.kinds and not any(fnmatch.fnmatchcase(key.kind, p) for p in options.kinds):
        return False
    if options.keys and not any(fnmatch.fnmatchcase(key.id, p) for p in options.keys):
        return False
    return True


def _error_row(key: Key, message: str) -> Row:
    return Row(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target, kernel=None,
               status="error", error=message)


def survey_checkout(checkout: Checkout, objects_dir: Path, options: SurveyOptions,
                    progress: Progress | None = None) -> Survey:
    """Survey every selected key of ``checkout``; failing keys are rows, not exceptions."""
    progress = progress or Progress()
    if options.targets:
        for t in options.targets:
            get_target(t)  # raises UnknownTargetError with the known names
    if not (checkout.root / "keys").is_dir():
        raise SurveyError(f"no keys/ directory in {checkout.label} ({checkout.root}): nothing to survey")
    pool = _Pool(checkout, objects_dir, options.triton_cache_dir)
    try:
        # Start every worker now: they import torch, Triton and the keys while the first lists keys.
        first = pool.spawn()
        for _ in range(max(0, options.jobs - 1)):
            pool.spawn()
        answer = _request(first, {"op": "list", "targets": list(options.targets or []) or None},
                          timeout=max(options.timeout, 120))
        if not answer["ok"]:
            raise SurveyError(answer["error"])
        keys = [Key(kind=k["kind"], axes=tuple(tuple(p) for p in k["axes"]), target=k["target"], id=k["id"])
                for k in answer["keys"]]
        keys = [k for k in keys if _selected(k, options)]
        if not keys:
            raise SurveyError("no key matches the selection (--kind/--key)")
        toolchain = {}
        for backend in sorted({get_target(k.target).backend for k in keys}):
            info = _request(first, {"op": "toolchain", "backend": backend}, timeout=120)
            if not info["ok"]:
                raise SurveyError(info["error"])
            toolchain[backend] = info["toolchain"]
        progress.on_start(len(keys))
        costs = KeyCosts(objects_dir.parent / "costs.json")
        results = _run_keys(pool, costs.longest_first(keys), options, progress)
        costs.update(r for rows in results.values() for r in rows)
    finally:
        pool.close()
    order = {(k.id, k.target): i for i, k in enumerate(keys)}
    rows = sorted((r for rs in results.values() for r in rs), key=lambda r: (order[(r.key, r.target)], r.launch))
    targets = tuple(dict.fromkeys(k.target for k in keys))
    return Survey(commit=checkout.commit, label=checkout.label, targets=targets, toolchain=toolchain,
                  rows=tuple(rows), dirty=checkout.dirty,
                  created=datetime.now(timezone.utc).isoformat(timespec="seconds"))


class KeyCosts:
    """Compile seconds per (key, target) from earlier surveys, to schedule the slowest keys first.

    A long key started last is the tail that keeps every other worker idle; started first, it
    overlaps with the rest. Keys never surveyed go first of all: their cost is unknown.
    """

    def __init__(self, path: Path):
        self.path = path
        try:
            self.seconds: dict[str, float] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.seconds = {}  # none yet, or damaged: scheduling order is only an optimisation

    def longest_first(self, keys: list[Key]) -> list[Key]:
        """``keys`` reordered: unknown cost first, then by decreasing cost (stable)."""
        return sorted(keys, key=lambda k: -self.seconds.get(f"{k.target}:{k.id}", float("inf")))

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


def _run_keys(pool: _Pool, keys: list[Key], options: SurveyOptions,
              progress: Progress) -> dict[tuple[str, str], list[Row]]:
    pending = list(reversed(keys))  # pop() from the end keeps the given order
    results: dict[tuple[str, str], list[Row]] = {}

    def finish(done: Key, rows: list[Row]) -> None:
        results[(done.id, done.target)] = rows
        progress.on_key(done, rows)

    while pending or any(w.key is not None for w in pool.workers):
        for w in list(pool.workers):
            if w.key is None and pending:
                nxt = pending.pop()
                w.key, w.started = nxt, time.monotonic()
                w.conn.send({"op": "survey", "reuse": options.reuse_results,
                             "key": {"kind": nxt.kind, "axes": [list(p) for p in nxt.axes],
                                     "target": nxt.target, "id": nxt.id}})
        busy = [w for w in pool.workers if w.key is not None]
        now = time.monotonic()
        wait_for = max(0.0, min(w.started + options.timeout - now for w in busy))
        ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=wait_for)
        for w in busy:
            current = w.key
            assert current is not None
            key = current
            if w.conn in ready:
                try:
                    answer = w.conn.recv()
                except (EOFError, OSError):
                    w.process.join(timeout=5)
                    finish(key, [_error_row(key, f"worker process died while compiling "
                                                 f"(exit code {w.process.exitcode})")])
                    pool.kill(w)
                    pool.spawn()
                    continue
                w.key = None
                if answer["ok"]:
                    finish(key, [_row(r) for r in answer["rows"]])
                else:
                    finish(key, [_error_row(key, answer["error"])])
            elif time.monotonic() - w.started >= options.timeout:
                finish(key, [_error_row(key, f"timed out after {options.timeout:g} s (--timeout)")])
                pool.kill(w)
                if pending:
                    pool.spawn()
    return results


def _row(data: dict[str, Any]) -> Row:
    from .results import ObjectRef

    obj = data.get("object")
    return Row(**{**data, "object": ObjectRef(**obj) if obj else None})
