"""The local transport: worker processes on this machine (forked by a warm server, a forkserver, or spawned:
:mod:`.worker_start`; or, for another environment's toolchain, started under its interpreter:
:mod:`.other_toolchain`), each speaking :mod:`.protocol` over a pipe, and the loop that waits on their pipes and
time-outs and tells the :class:`~.schedule.Schedule` what they said.

A worker says KeyCaptured once a key's body ran (with its number of launches), KeyCompiled once its
launches are compiled, and answers KeyFinished with the rows once their objects are read, stored and
linted; it gets the next key after KeyCompiled (:data:`POLICY`). A worker that dies, or whose server
ends, is lost (:meth:`.schedule.Schedule.on_lost`); one silent past the time-out is killed.
"""

from __future__ import annotations

import multiprocessing.connection
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..model.keys import Key
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Row, SaidOnce
from ..model.targets import ANY_TARGET, DEFAULT_LIST_TARGET
from ..model.words import count
from ..repo.checkout import Checkout
from ..store.signing import Unsigned, unsigned_warning
from . import server
from .copies import KeyId
from .errors import SurveyError
from .other_toolchain import other_environment, start_worker
from .protocol import (
    Answer,
    CapturedKey,
    Failed,
    KeyCaptured,
    KeyCompiled,
    KeyFinished,
    KeysListed,
    ListKeys,
    Request,
    SurveyKey,
    ToolchainInfo,
    ToolchainOf,
    WorkerExited,
)
from .schedule import Policy, Schedule
from .server import ServerWorker
from .timing import SurveyTiming
from .worker_start import ensure_forkserver, main_module_hidden, worker_context, worker_environment, worker_start

# A worker compiles one key at a time and may still be reading and storing one compiled key when it is sent
# the next (two keys held at most); a worker taking its target's last key gets its successor at once.
POLICY = Policy(depth=2, queued=False, successors=True)


def shared_import() -> bool:
    """``REGSURVEY_SHARED_IMPORT=1``: every worker imports the project once and surveys every target
    from that import, as before per-target isolation. Wrong for launchers that cache the device;
    there only so that ``benchmarks/survey_speed.py`` can measure what isolation costs, side by side."""
    return os.environ.get("REGSURVEY_SHARED_IMPORT", "") == "1"


@dataclass(eq=False)
class LocalWorker:
    """A worker process: the one target whose keys it surveys (it imported the project for it)."""

    process: Any  # multiprocessing.Process, a server.ServerWorker, or an other_toolchain.OtherProcess
    conn: Any
    target: str = ""
    spawned: float = field(default_factory=time.time)
    ready_s: float | None = None  # seconds from spawn until the worker had imported the keys


class LocalPool:
    """The workers of a survey of ``checkout`` on this machine: a :class:`~.schedule.Transport`, and what a
    survey asks of its workers before the keys are scheduled (the keys, the toolchain).

    ``worker_main``: the workers' main loop, :func:`.worker.serve` by default (tests give a stand-in
    speaking the same protocol)."""

    policy = POLICY
    lost_before = "a worker that failed before"

    def __init__(self, checkout: Checkout, objects_dir: Path, options: SurveyOptions,
                 worker_main: Callable[..., None] | None = None):
        from .worker import finishing_mode  # the worker's module (and the capture machinery): see _serve

        try:
            finishing_mode()  # what the workers will read: a bad value is the survey's one-line error
        except ValueError as exc:
            raise SurveyError(str(exc)) from None
        self.checkout = checkout
        self.objects_dir = objects_dir
        self.triton_cache_dir = options.triton_cache_dir
        self.worker_main = worker_main
        self.jobs = max(1, options.jobs)
        self.reuse = options.reuse_results  # take results from the result cache
        self.python = options.toolchain  # another environment's interpreter; None: this one's
        self.timing = SurveyTiming(jobs=self.jobs)
        self.workers: list[LocalWorker] = []
        self.started = 0  # workers started so far (one import of the checkout each)
        self.any_target = shared_import()
        self.said_once: set[SaidOnce] = set()  # what the workers' kind bodies said once per process
        self.unsigned: set[Unsigned] = set()  # cache entries ignored for their signature, by any worker
        self.ready: list[float] = []  # seconds each worker left at the end took to import the keys
        self._shown: set[str] = set()  # the workers' warnings shown so far
        self._warned: set[str] = set()
        self._listing: tuple[LocalWorker, ListKeys] | None = None
        self._scratch: str | None = None  # the workers' temporary directory (made at the first start)

    # -- the transport

    def start(self, target: str) -> LocalWorker:
        """A new worker for ``target``'s keys: it imports the checkout with that target as the device."""
        target = ANY_TARGET if self.any_target else target
        # The worker imports the project's code (a merge request's, in CI): it gets no secret variable
        # but the results cache's signing key, with which it signs what it stores (see worker_environment).
        environ = worker_environment(os.environ)
        # What workers leave in their temporary directory (the stand-in smi commands' directories, whose exit
        # handlers a killed worker never runs; a project's own files) goes into one of the survey's, removed
        # with it (close).
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="regsurvey-workers-")
        environ["TMPDIR"] = self._scratch
        if self.python is not None:
            environ = other_environment(environ)  # not this interpreter's PYTHONPATH
        args = (str(self.checkout.root), str(self.checkout.root / "keys"), str(self.objects_dir),
                self.triton_cache_dir, environ, target, os.getpid())  # ends with this process
        self.started += 1
        if self.python is not None and self.worker_main is None:  # no server or forkserver of its own
            return self._joined(LocalWorker(*start_worker(self.python, args), target=target))
        if self.worker_main is None and worker_start() == "server":
            got = server.connect_worker(args)
            if got is not None:
                return self._joined(LocalWorker(*got, target=target))
        ctx = worker_context()
        if ctx.get_start_method() == "forkserver":
            ensure_forkserver()  # at once if it runs
        parent, child = ctx.Pipe()
        process = ctx.Process(target=self.worker_main or _serve(), daemon=True, name="regsurvey-worker",
                              args=(child, *args))
        with main_module_hidden():
            process.start()
        child.close()
        return self._joined(LocalWorker(process, parent, target=target))

    def send(self, worker: LocalWorker, key: Key, captured: CapturedKey | None = None) -> None:
        """Hand ``key`` to ``worker`` (``captured``: its launches, for a copy that helps with it)."""
        self.timing.last_dispatch = time.monotonic()
        self.timing.mark("sent", worker, key)
        worker.conn.send(SurveyKey(key, reuse=self.reuse, captured=captured))

    def end(self, worker: LocalWorker, idle: bool) -> None:
        """Kill ``worker`` (it keeps nothing unsaved: objects and cache entries are written atomically)."""
        if worker.process.is_alive():
            worker.process.kill()
        self._forget(worker)

    def room(self) -> bool:
        """A worker lost is replaced at once."""
        return True

    # -- before the keys are scheduled

    def capacity(self) -> int:
        """The workers this survey runs at once (``-j``)."""
        return self.jobs

    def list_keys(self, target: str, targets: tuple[str, ...] | None) -> None:
        """Start the worker that lists the keys (importing the checkout for ``target``) and ask it for the
        keys of ``targets`` (None: every target); :meth:`listed` is its answer."""
        first = self.start(target)
        listing = ListKeys(targets)
        first.conn.send(listing)
        self._listing = first, listing

    def listed(self, timeout: float) -> KeysListed:
        """The keys listed; SurveyError when the listing worker fails, dies or says nothing in ``timeout``."""
        assert self._listing is not None
        return _answer(*self._listing, KeysListed, timeout)

    def toolchain(self, backend: str) -> dict[str, Any]:
        """The toolchain block of ``backend``, from the worker that listed the keys."""
        assert self._listing is not None
        first = self._listing[0]
        request = ToolchainOf(backend)
        first.conn.send(request)
        return _answer(first, request, ToolchainInfo, timeout=120).toolchain

    # -- the survey

    def run(self, schedule: Schedule[LocalWorker], listed_at: float) -> None:
        """Feed ``schedule`` what the workers say until every key is done (the keys were listed at
        ``listed_at``): wait on their pipes until the next time-out."""
        self.timing.listed = listed_at
        while not schedule.done:
            if schedule.dispatch():
                continue  # the new worker gets its key now, not after the busy ones next say something
            busy = schedule.busy()
            if not busy:
                continue
            wait_for = max(0.0, min(schedule.deadline(w) for w in busy) - time.monotonic())
            ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=wait_for)
            for w in busy:
                if w.conn in ready:
                    self._read(w, schedule)
                elif time.monotonic() >= schedule.deadline(w):
                    schedule.on_timeout(w)
        self.timing.keys_shared = schedule.copies.keys_shared
        self.timing.launches_shared = schedule.copies.launches_shared
        self.timing.mark("keys done")
        self.ready = [w.ready_s for w in self.workers if w.ready_s is not None]

    def close(self) -> None:
        """Kill every worker (a polite shutdown of an interpreter holding torch and Triton takes most of a
        second), and say once which cache entries were ignored for their signature."""
        self.timing.workers_started = self.started
        # Kill them all first, then wait for each (rather than one kill and wait after the other).
        for w in self.workers:
            if w.process.is_alive():
                w.process.kill()
        for w in list(self.workers):
            self._forget(w)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if self.unsigned:  # one line for them all (a key newly set on a cache of unsigned entries: every build)
            print(unsigned_warning(self.unsigned), file=sys.stderr)

    def figures(self, *, rows: int, lint_s: float, closed_at: float,
                lint_runs: list[tuple[float, float, int]]) -> dict[str, float]:
        """The survey's ``timing`` (of ``rows`` builds): the workers closed at ``closed_at``, the deferred
        lint's batches ``lint_runs`` took ``lint_s`` in all, ending now."""
        self.timing.mark("workers closed", at=closed_at)
        self.timing.mark("lint done")
        for began, ended, cubins in lint_runs:
            self.timing.mark(f"lint batch of {count(cubins, 'cubin')}, {ended - began:.2f} s", at=began)
        if lint_s:
            self.timing.phases["lint_s"] = self.timing.phases.get("lint_s", 0.0) + lint_s
        figures = self.timing.as_dict(self.ready)
        self.timing.write_timeline()
        return figures

    # -- what the workers say

    def _read(self, w: LocalWorker, schedule: Schedule[LocalWorker]) -> None:
        """Everything ``w`` has said; a worker whose pipe ended is lost."""
        try:
            while w.conn.poll():
                self._heard(w, w.conn.recv(), schedule)
        except (EOFError, OSError):
            w.process.join(timeout=5)
            if w.process.exitcode is None and isinstance(w.process, ServerWorker):
                # The server says each of its workers' exit code: it ended, not the worker.
                why = "the worker server ended mid-survey"
                schedule.on_lost(w, why, blame=False)
                if why not in self._warned:
                    self._warned.add(why)
                    print(f"regsurvey: warning: {why}; its keys are surveyed again", file=sys.stderr)
            else:
                schedule.on_lost(w, f"worker process died while surveying the key (exit code {w.process.exitcode})")

    def _heard(self, w: LocalWorker, message: Answer, schedule: Schedule[LocalWorker]) -> None:
        for line in getattr(message, "notes", ()):  # the worker's warnings: its stderr may be a server's log
            if line not in self._shown:  # several workers of a target may say the same
                self._shown.add(line)
                print(line, file=sys.stderr)
        if isinstance(message, KeyCompiled | KeyFinished):
            self.said_once.update(message.said_once)
            self.unsigned.update(message.unsigned)
        match message:
            case WorkerExited(code=code):  # a server's worker has exited: its code, then the connection ends
                w.process.exitcode = code
            case KeyCaptured(key=key):
                self.timing.mark("captured", w, key)
            case KeyCompiled(key=key):
                self.timing.mark("compiled", w, key)
            case KeyFinished(key=key):
                self.timing.mark("finished", w, key)
                self.timing.answered(w, message, from_server=isinstance(w.process, ServerWorker))
                if w.ready_s is None and message.ready_at:
                    w.ready_s = message.ready_at - w.spawned
            case Failed(key=Key() as key):
                self.timing.mark("finished", w, key)
        schedule.on_answer(w, message)

    def _joined(self, w: LocalWorker) -> LocalWorker:
        self.workers.append(w)
        return w

    def _forget(self, w: LocalWorker) -> None:
        w.process.join(timeout=10)
        w.conn.close()
        self.workers.remove(w)


def _serve() -> Callable[..., None]:
    """The workers' main loop. Imported only once a worker starts: the worker's module (and the capture
    machinery, Triton) is not the CLI's."""
    from .worker import serve

    return serve


A = TypeVar("A", KeysListed, ToolchainInfo)


def _answer(w: LocalWorker, message: Request, expected: type[A], timeout: float) -> A:
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


def run_keys(keys: list[Key], checkout: Checkout, objects_dir: Path, options: SurveyOptions, *,
             worker_main: Callable[..., None] | None = None,
             progress: Progress | None = None) -> dict[KeyId, list[Row]]:
    """The rows of each of ``keys`` (by key id and target), from a pool of ``options.jobs`` workers: the
    scheduler on its own, without listing keys or storing a survey (:func:`.survey.survey_checkout` does
    both).

    ``worker_main``: the workers' main loop, :func:`.worker.serve` by default; a stand-in speaking the
    same protocol (:mod:`.protocol`) drives the scheduler's handling of workers that die or fall silent.
    """
    pool = LocalPool(checkout, objects_dir, options, worker_main=worker_main)
    try:
        for _ in range(pool.jobs):
            pool.start(keys[0].target if keys else DEFAULT_LIST_TARGET)
        schedule = Schedule(keys, pool, policy=POLICY, timeout=options.timeout, reuse=options.reuse_results,
                            progress=progress, workers=pool.workers)
        pool.run(schedule, time.monotonic())
        return schedule.results
    finally:
        pool.close()
