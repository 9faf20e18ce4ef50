"""A worker process: imports one checkout's keys once, then surveys keys sent to it one at a time.

The parent (:mod:`regsurvey.engine.survey`, its schedule fed by :mod:`.transport_local`) owns scheduling,
time-outs and storage of the survey; the worker runs kind bodies under capture, compiles their launches and
reads the objects' resources. It is forked from a process that imported only torch, Triton and regsurvey (or
spawned), so nothing of the parent's interpreter (or of another commit's kernels) is shared.

A worker compiles on its main thread, one key at a time. Reading, storing and linting a compiled key's
objects ("finishing" it) is Python work that would hold the interpreter lock the compiles also need:
on Linux it runs in a finishing process the worker forks once, beside the compiles (elsewhere, or with
``REGSURVEY_FINISH=thread``, on a second thread).

A kernel (a Triton hash) is compiled once: a launch of one still being finished here takes its row
(:class:`Duplicate`); one being compiled by another worker, or another survey on the store, is awaited
through its build lock (:mod:`regsurvey.store.inflight`, held until the result is in the result cache)
and then taken from the result cache.

Its length (over 500 lines): the worker's request loop, its compiling thread and its finishing process
(or thread) share the per-key state: captured launches, kernels still in flight for reuse, timing phases
and warnings for the survey. The messages themselves are :mod:`.protocol`'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..analysis import analyze
from ..compile import management, toolchain
from ..compile.triton_facts import (
    AMDGCN,
    CACHE_DIR_VAR,
    LLIR,
    PTX,
    PTXAS_LOG,
    TTGIR,
    TTIR,
    ignore_fp_fusion_warning,
    object_key,
)
from ..errors import CorruptObjectError
from ..kept_pressure import keep_pressure
from ..keys.keyfiles import (
    KeysFileError,
    expand_keys,
    full_traceback,
    load_kinds,
    one_line,
    shown_site,
    where_raised,
)
from ..keys.matrix import Kind
from ..keys.session import CapturedLaunch, CaptureSession, SkipKey
from ..model.fix import VariantMissed
from ..model.keys import Key
from ..model.results import ObjectRef, ObjectReport, Row, SaidOnce, Status, error_line, error_text
from ..model.row_start import RowStart
from ..model.targets import ANY_TARGET, DEFAULT_LIST_TARGET, Target, get_target
from ..model.words import count
from ..processes import alive, die_with_parent, watch
from ..store.files import WriteError, out_of_space
from ..store.inflight import BuildLock, HeldElsewhere, InFlight
from ..store.objectstore import ObjectStore
from ..store.resultcache import CachedResult, ResultCache
from ..store.signing import Unsigned
from . import key_reads, launcher_messages
from .key_reads import KeyReads
from .protocol import (
    Answer,
    CapturedKey,
    Failed,
    KeyCaptured,
    KeyCompiled,
    KeyFinished,
    KeysListed,
    KeyWaiting,
    ListKeys,
    Request,
    Stop,
    SurveyKey,
    ToolchainInfo,
    ToolchainOf,
)

# A compile's texts kept beside its object: what the lint, the pressure reader and a later reading
# of the object need. The ttgir holds the shared-memory buffers Triton allocates (their layouts and
# sizes): the LDS the object does not record, which Triton passes at launch.
KEPT_TEXTS = (AMDGCN, PTX, LLIR, TTIR, TTGIR, PTXAS_LOG)


@dataclass
class Compiled:
    """A launch compiled but not yet read, stored and linted (:meth:`Worker.finish` does that)."""

    start: RowStart  # the row's fields known before compiling (key, kernel, launch, ...)
    target: Target
    compiled: toolchain.CompiledObject
    compile_s: float


@dataclass
class Duplicate:
    """A launch whose kernel an earlier, still unfinished launch compiled (the same Triton hash): its
    row is that one's, reused, once that one is finished."""

    start: RowStart
    triton_hash: str

    def row(self, done: Row | None) -> Row:
        """The row, from the finished row of the launch that compiled the kernel (None: lost)."""
        if done is None:
            return self.start.failed("the identical kernel compiled before was lost", triton_hash=self.triton_hash,
                                     transient=True)
        if not done.ok or done.object is None:  # it failed (and so does this, the same way)
            return self.start.failed(done.error, status=Status.ERROR if done.ok else done.status,
                                     triton_hash=self.triton_hash, transient=done.transient)
        return _reused_row(self.start, self.triton_hash,
                           CachedResult(kernel=done.kernel or "", report=ObjectReport(done.resources, done.lint),
                                        object=done.object, compile_s=done.compile_s, stage_s=done.stage_s))


Item = Row | Compiled | Duplicate


@dataclass(frozen=True)
class BodyRun:
    """One run of a kind body: its launches, what it said, and how it ended (raised, or skipped the key)."""

    session: CaptureSession
    said: launcher_messages.Messages
    raised: BaseException | None
    skipped: str | None
    reads: KeyReads | None = None  # what the body read (engine.key_reads), where it was recorded


def _reused_row(start: RowStart, cache_hash: str, cached: CachedResult) -> Row:
    if cached.kernel:  # the name the kernel was compiled under (see Worker._finish)
        start = replace(start, kernel=cached.kernel)
    # The build's compile seconds are those measured when it was compiled, kept with its result (stage_s).
    return start.built(cached.resources, object=cached.object, compile_s=cached.compile_s, triton_hash=cache_hash,
                       findings=cached.report.findings, reused=True, stage_s=cached.stage_s)


class Worker:
    """The state one worker keeps across keys: the checkout's kinds and the object store.

    A worker surveys the keys of one target: it imports the checkout's keys files (and so the
    project) while that target is the device, so that whatever the project caches at import or on
    first use (an arch constant, an fp8 dtype chosen by arch, ``lru_cache``'d device properties) is
    that target's. Another target is another worker, with a fresh import of its own.
    """

    def __init__(self, root: Path, keys_dir: Path, objects_dir: Path, target: str = DEFAULT_LIST_TARGET):
        """``target``: the target whose keys this worker surveys, and the device its import sees.
        ANY_TARGET: one import (made with the default device) for every target, the benchmark's
        baseline (see transport_local.shared_import)."""
        self.root = root
        self.keys_dir = keys_dir
        self.any_target = target == ANY_TARGET
        self.target = get_target(DEFAULT_LIST_TARGET if self.any_target else target).name
        self.objects = ObjectStore(objects_dir)
        # Warnings go to the survey, whose stderr is the user's (this process's may be a server's log).
        self._notes: list[str] = []
        self._notes_lock = threading.Lock()
        # What kind bodies said once per process, for the survey (sent with the next answer, as notes are).
        self._said_once: list[SaidOnce] = []
        self._heard = launcher_messages.Heard()
        self._unsigned: list[Unsigned] = []  # cache entries ignored for their signature (counted by the survey)
        self.results = ResultCache(self.objects, warn=self.note, unsigned=self._ignored_unsigned)
        self.inflight = InFlight(self.objects.root)
        # What kind bodies read (engine.key_reads): Triton's cache and the store are no project's inputs.
        self.recorder = key_reads.Recorder(root, [os.environ.get(CACHE_DIR_VAR, ""), os.path.expanduser("~/.triton"),
                                                  str(self.objects.root.parent)])
        self._hashes = key_reads.FileHashes()
        self._modules: dict[str, str] = {}
        self._modules_seen = -1
        self._kinds: dict[str, Kind] | None = None
        self.timing: dict[str, float] = {}  # seconds per phase since the last take_timing()
        self._timing_lock = threading.Lock()  # the compiling thread and the finishing thread both time
        # Triton hashes compiled here, not yet finished, with their build locks (held until the result is
        # in the result cache: another process compiling the kernel waits for it; see store.inflight)
        self._in_flight: dict[str, BuildLock | None] = {}
        self._in_flight_lock = threading.Lock()  # the compiling thread adds, the relay thread releases
        self._finished: dict[str, Row] = {}  # rows of the kernels finished here, by Triton hash
        self._warned: set[tuple[str, str]] = set()  # (kind, sign) of no-GPU signs already noted
        self.ready_at: float | None = None  # time.time() when the keys were loaded
        self.started = time.time()  # builds that failed since (in any process) are not compiled again

    def _spent(self, phase: str, since: float) -> float:
        """Add the seconds since ``since`` (a perf_counter reading) to ``phase``; return now."""
        now = time.perf_counter()
        with self._timing_lock:
            self.timing[phase] = self.timing.get(phase, 0.0) + (now - since)
        return now

    def _count(self, figure: str) -> None:
        """One more of ``figure`` (a count the survey sums over workers beside the phases' seconds)."""
        with self._timing_lock:
            self.timing[figure] = self.timing.get(figure, 0.0) + 1

    def take_timing(self) -> dict[str, float]:
        """The phases timed since the last call (and reset them)."""
        with self._timing_lock:
            taken, self.timing = self.timing, {}
        return {k: round(v, 4) for k, v in taken.items()}

    def warm_up(self) -> None:
        """Import the keys files now (torch, Triton, the project's kernels), before the first request needs
        them; one that raises is imported again, and says why, when a request needs the keys."""
        try:
            self.kinds()
        except BaseException:  # noqa: S110 - reported again, with its message, when a request needs the keys
            self._kinds = None

    def kinds(self) -> dict[str, Kind]:
        """Load the keys files once, with this worker's target as the device (raises KeysFileError)."""
        if self._kinds is None:
            target = get_target(self.target)
            with toolchain.device_as(target):
                self._kinds = {k.name: k for k in load_kinds(self.root, self.keys_dir)}
            for sign in management.no_gpu_signs(target):
                self.note(f"warning: importing the keys files for {target.name}: {sign}")
            self.ready_at = time.time()
        return self._kinds

    def note(self, line: str) -> None:
        """Keep a warning for the survey (sent with the next answer)."""
        with self._notes_lock:
            self._notes.append(line)

    def take_notes(self) -> tuple[str, ...]:
        """The warnings kept since the last call."""
        with self._notes_lock:
            notes, self._notes = tuple(self._notes), []
        return notes

    def _ignored_unsigned(self, entry: Unsigned) -> None:
        with self._notes_lock:
            self._unsigned.append(entry)

    def take_unsigned(self) -> tuple[Unsigned, ...]:
        """The cache entries ignored for their signature since the last call (the survey names them in
        one warning)."""
        with self._notes_lock:
            taken, self._unsigned = tuple(self._unsigned), []
        return taken

    def take_said_once(self) -> tuple[SaidOnce, ...]:
        """What kind bodies said once per process since the last call (see launcher_messages.Heard)."""
        with self._notes_lock:
            said, self._said_once = tuple(self._said_once), []
        return said

    def list_keys(self, targets: list[str] | tuple[str, ...] | None) -> tuple[Key, ...]:
        """Every key (the keys files imported for this worker's target), in the keys files' order."""
        return tuple(expand_keys(list(self.kinds().values()), list(targets) if targets else None))

    def listing(self, targets: list[str] | tuple[str, ...] | None) -> KeysListed:
        """The answer to ``ListKeys(targets)``: :meth:`list_keys`, and each kind's own targets."""
        declared = tuple((k.name, tuple(k.targets or k.matrix.targets)) for k in self.kinds().values())
        return KeysListed(self.list_keys(targets), self.target, declared)

    def survey_key(self, key: Key, reuse: bool = True, replay: CapturedKey | None = None) -> list[Row]:
        """Run the key's kind body under capture (or take its launches from ``replay``), compile each launch,
        read its resources."""
        return self.finish(self.compile_key(key, reuse, replay=replay))

    def compile_key(self, key: Key, reuse: bool = True,
                    captured: Callable[[int, KeyReads | None, CapturedKey | None], None] | None = None,
                    replay: CapturedKey | None = None) -> list[Item]:
        """The toolchain's part of a key: capture its launches and compile them (or find them
        compiled). Reading, storing and linting the objects is :meth:`finish`'s part, which the
        worker's finishing process (or thread) does while the next key compiles.

        A body that raises keeps the launches it made before (their rows) and adds the key's own
        error row after them (no kernel, the next launch index); one that calls ``rs.skip`` is a
        ``skipped`` row. What the body said (warnings, logs, prints) is on every row of the key, but
        for what it said once per process (the survey's: :meth:`take_said_once`).

        ``replay``: the key's launches as another worker's run of its body captured them (this worker helps
        with it): compiled without running the body, unless one cannot be made again exactly here. ``captured``
        is told the launches (their number, what the body read, and the launches themselves for helpers).

        ``reuse`` False (``--force``): nothing is taken from the result cache, and Triton compiles every
        launch (the body's warmups too) past its own cache.
        """
        with toolchain.compiling_afresh(not reuse):
            return self._compile_key(key, reuse, captured, replay)

    def _compile_key(self, key: Key, reuse: bool,
                     captured: Callable[[int, KeyReads | None, CapturedKey | None], None] | None,
                     replay: CapturedKey | None) -> list[Item]:
        if get_target(key.target).name != self.target and not self.any_target:  # the scheduler never does this
            raise ValueError(f"a worker that imported the project for {self.target} was sent a {key.target} key")
        target = get_target(key.target)
        launches = self._restored(replay, target) if replay is not None else None
        if replay is not None and launches is not None:
            self._count("copies_replayed")
            if captured is not None:
                captured(len(launches), None, None)
            base = RowStart(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target,
                            messages=replay.messages)
            return self._compile_launches(base, launches, target, reuse)
        kind = self.kinds()[key.kind]
        # What the body reads is recorded where a later survey may take its rows (not under --force, nor for
        # a fix's variant, a key of no project's).
        run = self._run_body(kind, key, target, record=reuse and key.variant is None and key_reads.enabled())
        session, raised, skipped = run.session, run.raised, run.skipped
        # What a library says once per process is the survey's, not this key's (launcher_messages.Heard).
        once = self._heard.said_once(run.said, lambda: self._run_body(kind, key, target).said)
        with self._notes_lock:
            self._said_once.extend(SaidOnce(key.kind, key.target, line) for line in once)
        messages = run.said.lines_without(once)
        for sign in management.no_gpu_signs(target):  # what the library concluded: said on every row of the key
            messages.append(f"regsurvey: {sign}")
            if (kind.name, sign) not in self._warned:  # once per kind and worker; the survey shows it once
                self._warned.add((kind.name, sign))
                self.note(f"warning: kind {kind.name} on {target.name}: {sign}")
        if captured is not None:
            shared = None
            if raised is None and skipped is None and len(session.launches) > 1 and reuse and key.variant is None:
                shared = self._portable(session.launches, messages, target)
            captured(len(session.launches), run.reads, shared)
        base = RowStart(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target, messages=tuple(messages))
        if skipped is not None:
            return [base.skipped(skipped)]
        if raised is None and not session.launches:
            file, line = kind.source
            return [base.failed(f"kind body ({shown_site(f'{file}:{line}', self.root)}) launched no kernel")]
        items = self._compile_launches(base, session.launches, target, reuse)
        if raised is not None:
            items.append(self._raised_row(base, raised, len(session.launches)))
        return items

    def _portable(self, launches: list[CapturedLaunch], messages: list[str], target: Target) -> CapturedKey | None:
        """The key's launches for workers that help with it (None: one cannot travel; they run the body)."""
        start = time.perf_counter()
        portable = []
        try:
            for launch in launches:
                try:
                    made = toolchain.portable_launch(launch, target)
                except Exception:  # its hash raised: the compile below says why
                    made = None
                if made is None:
                    return None
                portable.append(made)
        finally:
            self._spent("hash_s", start)
        return CapturedKey(tuple(messages), tuple(portable))

    def _restored(self, replay: CapturedKey, target: Target) -> list[CapturedLaunch] | None:
        """The launches of ``replay`` made again here, or None where one cannot be (the body runs instead)."""
        start = time.perf_counter()
        try:
            return [toolchain.restored_launch(launch, target) for launch in replay.launches]
        except toolchain.NotRestorable:
            return None
        finally:
            self._spent("hash_s", start)

    def _compile_launches(self, base: RowStart, launches: list[CapturedLaunch], target: Target,
                          reuse: bool) -> list[Item]:
        """Compile each launch of a key (or find it compiled), in order."""
        # Two passes: the first compiles the kernels no other process is compiling and passes over those
        # another is (a helper on this key, or another key or survey with the same kernel), so that
        # processes on one key share its launches; the second waits for those and reads their results.
        # Before it waits, what this process compiled is finished (stored, its build locks released),
        # and so is each kernel it compiles then: a process never waits holding a lock another waits on.
        slots: list[Item | None] = [None] * len(launches)
        try:
            for i, launch in enumerate(launches):
                slots[i] = self._compile_launch(base, i, launch, target, reuse, wait=False)
            deferred = [i for i, item in enumerate(slots) if item is None]
            if deferred:
                self._finish_now(slots)
            for i in deferred:
                slots[i] = self._compile_launch(base, i, launches[i], target, reuse)
                self._finish_now(slots)
        except BaseException:  # a bug of ours: the kernels compiled for this key are not finished, never awaited
            self.finished([item for item in slots if item is not None])
            raise
        return [item for item in slots if item is not None]

    def _run_body(self, kind: Kind, key: Key, target: Target, record: bool = False) -> BodyRun:
        """Run the key's kind body under capture, listening to what it says; with ``record``, noting what it
        reads (:mod:`.key_reads`)."""
        # Launch sites inside the project are its own; one in a library is traced back to the project's call.
        session = CaptureSession(target, project_dirs=tuple(dict.fromkeys(
            [os.path.abspath(self.root), os.path.realpath(self.root)])), variant=key.variant)
        start = time.perf_counter()
        raised: BaseException | None = None
        skipped: str | None = None
        recording = self.recorder.recording() if record else contextlib.nullcontext(None)
        self._count("kind_bodies")
        with launcher_messages.listening(self.root) as said, recording as reading:
            try:
                with toolchain.capturing(session):
                    kind.body(**key.axes_dict)
                if key.variant is not None and not session.variant_reached:
                    session.launches.clear()  # the base's own launches: nothing of the variant's
                    raise VariantMissed(key.variant)
            except SkipKey as skip:
                skipped = skip.reason
            except BaseException as exc:  # the project's code may raise anything
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raised = exc
            unused = session.unused_names() if raised is None and skipped is None else None
            if unused:  # the library launched fewer times than the body named: said with the key
                said.add(unused)
        reads = self._reads(reading, session) if reading is not None else None
        self._spent("capture_s", start)
        # Warmups were compiled by Triton while the body ran: compile time, not the body's.
        self._move("capture_s", "compile_s", sum(launch.compile_s for launch in session.launches if launch.compiled))
        return BodyRun(session, said, raised, skipped, reads)

    def _reads(self, reading: Any, session: CaptureSession) -> KeyReads | None:
        """What the body read, hashed; None where that cannot be told (the body must then run every time)."""
        try:
            kernels: set[str] = set()
            jits = {id(launch.jit_function): launch.jit_function for launch in session.launches}
            for jit in jits.values():
                kernels |= toolchain.jit_dependency_files(jit)
            if len(sys.modules) != self._modules_seen:
                self._modules = key_reads.module_entries(self.recorder, self._hashes)
                self._modules_seen = len(sys.modules)
            return key_reads.key_reads(self.recorder, reading, kernels, self._hashes, self._modules)
        except Exception as exc:  # a bug of ours must not fail the key: it runs again next time
            self.note(f"warning: what a kind body read could not be recorded ({type(exc).__name__}: {exc})")
            return None

    def _finish_now(self, slots: list[Item | None]) -> None:
        """Finish the kernels compiled in ``slots`` here and now (their rows replace them, their build
        locks are released), rather than in the finishing process after the key."""
        for i, item in enumerate(slots):
            if isinstance(item, Compiled):
                slots[i] = self.finish([item])[0]

    def _raised_row(self, base: RowStart, exc: BaseException, launches: int) -> Row:
        """The key's own error row for a kind body that raised after ``launches`` launches: one line
        saying where and why, then Python's traceback from the kind body down (the exception's whole
        text and chain at its end)."""
        if isinstance(exc, VariantMissed):
            return replace(base, launch=launches).failed(str(exc))
        text = error_text(exc)
        after = f" after {count(launches, 'launch')}" if launches else ""
        summary = f"kind body raised{after} at {where_raised(exc, self.root)}: {error_line(text)}"
        return replace(base, launch=launches).failed(f"{summary}\n{full_traceback(exc, self.root)}".rstrip(),
                                                     transient=out_of_space(exc))

    def _move(self, source: str, destination: str, seconds: float) -> None:
        if seconds:
            with self._timing_lock:
                self.timing[source] = self.timing.get(source, 0.0) - seconds
                self.timing[destination] = self.timing.get(destination, 0.0) + seconds

    def _compile_launch(self, base: RowStart, index: int, launch: CapturedLaunch,
                        target: Target, reuse: bool, wait: bool = True) -> Item | None:
        """The launch's item: compiled here, or its result reused. ``wait`` False: None when another
        process is compiling its kernel (the caller comes back to it); True: wait for that one."""
        row_start = replace(base, kernel=launch.kernel, launch=index, config=launch.config,
                            num_warps=launch.options.get("num_warps"),
                            num_stages=launch.options.get("num_stages"), where=shown_site(launch.where, self.root),
                            project_where=shown_site(launch.project_where, self.root),
                            build=toolchain.constexpr_values(launch), name=launch.name,
                            config_source=launch.config_source)
        start = time.perf_counter()
        try:
            cache_hash = launch.cache_hash or toolchain.triton_cache_hash(launch, target)
        except Exception:  # let the compile below report what is wrong
            cache_hash = None
        lock: BuildLock | None = None
        start_hash = start  # from when hashing and look-ups are timed (waiting for another process's build is not)
        if cache_hash and reuse:
            if cache_hash in self._in_flight:  # compiled for an earlier key, still being read and stored
                self._spent("hash_s", start)
                return Duplicate(row_start, cache_hash)
            cached = self.results.get(cache_hash)
            if cached is None:
                # Compiled by no one yet, or being compiled by another process: wait for that one.
                phase = self._spent("hash_s", start)
                try:
                    lock = self.inflight.take(cache_hash, wait=wait)
                except HeldElsewhere:
                    return None
                phase = self._spent("wait_s" if lock is not None and lock.waited else "hash_s", phase)
                cached = self.results.get(cache_hash)  # finished elsewhere, while waiting or just before
                failure = lock.failure(self.started) if lock is not None and cached is None else None
                if cached is not None or failure is not None:
                    if lock is not None:
                        lock.release()
                    self._spent("hash_s", phase)
                    if failure is not None:  # it failed there, and would fail here the same way
                        # A record is a hint anyone writing the store can plant: of the moment until the
                        # survey compiles the kernel itself (survey.settled_failures).
                        return row_start.failed(failure, triton_hash=cache_hash, transient=True)
                    assert cached is not None
                    return _reused_row(row_start, cache_hash, cached)
                start_hash = phase
            else:
                self._spent("hash_s", start)
                return _reused_row(row_start, cache_hash, cached)
        compile_start = self._spent("hash_s", start_hash)
        try:
            # A row's compile seconds count its hashing, not the wait for a build that then left no result.
            begun = compile_start if lock is not None and lock.waited else start
            return self._build(row_start, launch, target, reuse, begun, compile_start, cache_hash, lock)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    def _build(self, row_start: RowStart, launch: CapturedLaunch, target: Target, reuse: bool,
               start: float, compile_start: float, cache_hash: str | None, lock: BuildLock | None) -> Item:
        """Compile the launch (holding its kernel's build ``lock``, if any: released here when the
        compile fails, else by :meth:`finished`)."""
        flaky = None
        try:
            try:
                compiled = toolchain.compile_launch(launch, target)
            except Exception as exc:
                if not toolchain.is_flaky_failure(exc):
                    raise
                # The in-process linker's intermittent failure (docs/commands.md, "Flaky builds"): once more.
                flaky = f"first attempt failed, built on retry: {one_line(exc)}"
                compiled = toolchain.compile_launch(launch, target)
        except Exception as exc:
            self._spent("compile_s", compile_start)
            again = flaky is not None and toolchain.is_flaky_failure(exc)
            error = error_text(exc)
            if again:
                error += "\n(failed the same way on a retry: the toolchain's intermittent link failure)"
            # The build's hash, as on the rows of the keys that take this failure (every row of a build has it).
            failed = row_start.failed(error, status=Status.FLAKY if again else Status.ERROR, triton_hash=cache_hash,
                                      compile_s=round(time.perf_counter() - start, 3), transient=out_of_space(exc))
            if lock is not None:
                if not (failed.transient or again):
                    lock.fail(error)  # those waiting for it take this failure
                lock.release()
            return failed
        self._spent("compile_s", compile_start)
        if flaky is not None:
            row_start = replace(row_start, flaky=flaky)
        # A warmup's kernel was compiled while the body ran: its row takes that compile's time.
        compile_s = launch.compile_s if launch.compiled is not None else time.perf_counter() - start
        pending = Compiled(row_start, target, compiled, round(compile_s, 3))
        if reuse:
            if cache_hash != compiled.triton_hash and lock is not None:  # cannot happen: the lock is another's
                lock.release()
                lock = None
            with self._in_flight_lock:
                self._in_flight[compiled.triton_hash] = lock
        elif lock is not None:
            lock.release()
        return pending

    def finish(self, items: list[Item]) -> list[Row]:
        """The rows of a compiled key: read, store and lint each object compiled (in order)."""
        try:
            return self.finish_rows(items)
        finally:
            self.finished(items)

    def finish_rows(self, items: list[Item]) -> list[Row]:
        """:meth:`finish`'s work, wherever it runs (this process, or the finishing process)."""
        rows = []
        for item in items:
            if isinstance(item, Compiled):
                row = self._finish(item)
                self._finished[item.compiled.triton_hash] = row
            elif isinstance(item, Duplicate):
                row = self._duplicate_row(item)
            else:
                row = item
            rows.append(row)
        return rows

    def _duplicate_row(self, item: Duplicate) -> Row:
        """A Duplicate's row: from the row finished here, else (finished by a finishing process that
        has since died) from the result cache that process stored it in."""
        done = self._finished.get(item.triton_hash)
        if done is None:
            cached = self.results.get(item.triton_hash)
            if cached is not None:
                return _reused_row(item.start, item.triton_hash, cached)
        return item.row(done)

    def finished(self, items: list[Item]) -> None:
        """``items`` are finished: a later launch of their kernels finds them in the result cache."""
        for item in items:
            if isinstance(item, Compiled):
                with self._in_flight_lock:
                    lock = self._in_flight.pop(item.compiled.triton_hash, None)
                if lock is not None:  # its result is in the result cache (or it failed): waiters go on
                    lock.release()

    def _finish(self, item: Compiled) -> Row:
        compiled, target, compile_s = item.compiled, item.target, item.compile_s
        # The kernel's name is the one it was compiled under (the object's symbol, what a profiler shows):
        # a kernel with a ``repr`` names each specialization (triton_kernels' ``_p_matmul_NNN_...``).
        row_start = replace(item.start, kernel=compiled.kernel_name or item.start.kernel)
        phase = time.perf_counter()
        try:
            report = analyze(target, compiled.binary, compiled.asm, shared=compiled.shared,
                             num_warps=compiled.num_warps)
        except CorruptObjectError as exc:
            return row_start.failed(f"unreadable object: {exc}", compile_s=compile_s, triton_hash=compiled.triton_hash)
        phase = self._spent("analyze_s", phase)
        try:
            sha, path = self.objects.put(compiled.binary, object_key(target), extras={
                name: compiled.asm[name] for name in KEPT_TEXTS if name in compiled.asm})
            ref = ObjectRef(path=path, sha256=sha)
            self.results.put(compiled.triton_hash, CachedResult(kernel=row_start.kernel or "", report=report,
                                                                object=ref, compile_s=compile_s,
                                                                stage_s=compiled.stage_s))
        except WriteError as exc:  # a full disk: built, but its object is not kept; surveyed again next time
            return row_start.failed(f"not stored: {exc}", compile_s=compile_s, triton_hash=compiled.triton_hash,
                                    transient=True)
        row = row_start.built(report.resources, object=ref, compile_s=compile_s, triton_hash=compiled.triton_hash,
                              findings=report.findings, stage_s=compiled.stage_s)
        phase = self._spent("store_s", phase)
        if keep_pressure(self.objects, path, target.name, compiled.asm.get(AMDGCN)):
            self._spent("pressure_s", phase)
        return row


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (a worker forked from the forkserver is not a
    child of the survey's process, so the survey cannot ask the system for it)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)  # bytes on macOS, KB elsewhere


def serve(conn: Any, root: str, keys_dir: str, objects_dir: str, triton_cache_dir: str | None = None,
          environ: dict[str, str] | None = None, target: str = DEFAULT_LIST_TARGET,
          survey: int | None = None) -> None:
    """Worker main loop: answer requests on ``conn`` until told to stop or the pipe closes.

    ``environ`` is the parent's environment: a worker forked from a forkserver started earlier would
    otherwise see the environment of that moment. ``target``: the one target whose keys it surveys.
    ``survey``: the survey's pid; the worker ends when the survey does (:func:`_end_with_survey`).
    """
    _become_worker(survey, environ, triton_cache_dir)
    try:
        os.chdir(root)
    except OSError as exc:  # the checkout is gone: the survey was interrupted while this worker started
        with contextlib.suppress(OSError):
            conn.send(Failed(f"cannot enter the checkout {root}: {exc.strerror}"))
        return
    # The checkout first on the import path: its kernels, not anyone else's. regsurvey itself is
    # already imported (this module), so a checkout that contains regsurvey/ does not replace it.
    sys.path.insert(0, root)
    # Forked from a forkserver or the server: torch, Triton and Triton's source hash came with the fork.
    preloaded = "regsurvey.engine.worker_preload" in sys.modules
    worker = Worker(Path(root), Path(keys_dir), Path(objects_dir), target)
    worker.warm_up()
    answering = _Answering(conn, worker, preloaded)
    try:
        while True:
            try:
                request: Request = conn.recv()
            except (EOFError, OSError):
                return
            try:
                if not answering.answer(request):
                    return
            except Exception as exc:
                answering.send(failure(exc))
    except (BrokenPipeError, ConnectionResetError):
        return  # the survey has ended (killed): no one to answer, and nothing to print on its terminal
    finally:
        answering.finishing.close(wait=False)


def _become_worker(survey: int | None, environ: dict[str, str] | None, triton_cache_dir: str | None) -> None:
    """This process made a survey's worker: ending with the survey, quiet on Ctrl-C, its stdout the
    survey's stderr, with the survey's environment."""
    _end_with_survey(survey)
    _project_multiprocessing()
    # Ctrl-C reaches every process of the terminal's group: the parent handles it and kills the
    # workers, which would otherwise each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The survey's stdout is the JSON or the table: whatever the project prints (libraries print when
    # imported, FlagGems its vendor notes) goes to stderr, from this process and what it starts.
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        os.dup2(2, 1)
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
        # Its temporary files go where the survey's TMPDIR says (the survey's scratch directory, removed when
        # the survey ends): a worker forked from a server or forkserver inherited where that one's went.
        tempfile.tempdir = None
    if triton_cache_dir:
        os.environ[CACHE_DIR_VAR] = triton_cache_dir
    ignore_fp_fusion_warning()


class _Answering:
    """A worker's answers on its pipe: keys are compiled on this thread, one at a time; each compiled key is
    finished (its objects read, stored and linted) by the finishing process or thread while the next key
    compiles. KeyCompiled tells the parent to send the next."""

    def __init__(self, conn: Any, worker: Worker, preloaded: bool):
        self.conn = conn
        self.worker = worker
        self.preloaded = preloaded
        self.lock = threading.Lock()  # the finishing side answers too
        self.finishing = Finishing(worker, self.reply, use_process=finishing_mode() == "process", inherited=[conn])

    def send(self, message: Answer) -> None:
        with self.lock:
            self.conn.send(message)

    def reply(self, key: Key, answer: KeyFinished | Failed) -> None:
        """Send a finished key's rows (or why it failed) with the timing and memory of both halves."""
        if isinstance(answer, Failed):
            self.send(answer)
            return
        timing = self.worker.take_timing()
        for phase, seconds in answer.timing.items():
            timing[phase] = round(timing.get(phase, 0.0) + seconds, 4)
        self.send(replace(answer, timing=timing, ready_at=self.worker.ready_at,
                          peak_rss_mb=max(peak_rss_mb(), answer.peak_rss_mb), preloaded=self.preloaded))

    def answer(self, request: Request) -> bool:
        """Answer ``request``; False when it says stop (what is held is finished first)."""
        match request:
            case Stop():
                self.finishing.close(wait=True)
                return False
            case ListKeys(targets=targets):
                self.send(self.worker.listing(targets))
            case ToolchainOf(backend=backend):
                self.send(ToolchainInfo(toolchain.toolchain_info(backend)))
            case SurveyKey(key=key, reuse=reuse, captured=replay):
                self.survey_key(key, reuse, replay)
            case _:
                self.send(Failed(f"unknown request {request!r}"))
        return True

    def survey_key(self, key: Key, reuse: bool, replay: CapturedKey | None = None) -> None:
        """Compile ``key`` (saying when it is captured and when it waits for a build lock), then hand it to
        the finishing side."""
        def captured(launches: int, reads: KeyReads | None, shared: CapturedKey | None) -> None:
            self.send(KeyCaptured(key, launches, reads, shared))

        def waiting(_: str, holder: str | None) -> None:
            self.send(KeyWaiting(key, holder))

        self.worker.inflight.on_wait = waiting
        try:
            items = self.worker.compile_key(key, reuse=reuse, captured=captured, replay=replay)
        except Exception as exc:
            self.send(failure(exc, key))
            return
        worker = self.worker
        self.send(KeyCompiled(key, worker.take_notes(), worker.take_said_once(), worker.take_unsigned()))
        self.finishing.submit(key, items)


def _end_with_survey(survey: int | None) -> None:
    """Make this worker (and so its finishing process) end when its survey does, however the survey ends
    (``kill -9`` runs none of its cleanup). The kernel kills the worker when its parent ends: the survey
    itself (spawned), the server (which kills the workers of a survey that has ended), or the survey's
    forkserver, which ends with the survey once no worker holds its "alive" pipe
    (:func:`_let_go_of_forkserver`). Without that signal, a thread watches the survey."""
    ends_with_parent = die_with_parent()
    _let_go_of_forkserver()
    if survey is None:
        return
    if not alive(survey):  # ended while this worker started
        os._exit(1)
    if not ends_with_parent:
        watch(survey)


def _let_go_of_forkserver() -> None:
    """Close the write end of the survey's forkserver's "alive" pipe that a worker the forkserver forked
    holds (multiprocessing hands it to each child, so that children could use the forkserver too). The
    forkserver ends once every holder has closed it: while a worker holds it, the forkserver outlives a
    killed survey, and the worker its parent. A kind body wanting a forkserver starts one of its own."""
    from multiprocessing import forkserver

    own = getattr(forkserver, "_forkserver", None)
    fd = getattr(own, "_forkserver_alive_fd", None)
    if fd is None or getattr(own, "_forkserver_pid", None) is not None:  # none inherited, or this process's own
        return
    with contextlib.suppress(OSError):
        os.close(fd)
    own._forkserver_alive_fd = None  # type: ignore[union-attr]


def _project_multiprocessing() -> None:
    """Give kind bodies the multiprocessing the project sees when it runs by itself: the platform's
    default start method, not the forkserver this worker was forked from (a server's workers already
    have it). Under the forkserver's, a kind body's locks are named semaphores, registered with the
    survey's resource tracker and unlinked by finalizers that a worker, killed at the survey's end,
    never runs: the tracker then unlinks them itself, warning of "leaked semaphore objects" (400 of them
    from FlagGems' keys). Under ``fork`` (Linux) a semaphore is unlinked as soon as it is made."""
    import multiprocessing

    multiprocessing.set_start_method(None, force=True)


def failure(exc: BaseException, key: Key | None = None) -> Failed:
    """The answer to a request that raised (in a worker, or a Ray actor)."""
    if isinstance(exc, KeysFileError):
        return Failed(str(exc), key, exc.traceback, transient=out_of_space(exc))
    if out_of_space(exc):
        return Failed(one_line(exc), key, transient=True)
    # a bug of ours: report it rather than hang the parent
    return Failed(f"worker failed: {one_line(exc)}", key, traceback.format_exc())


def _rows_answer(worker: Worker, finish: Callable[[list[Item]], list[Row]], key: Key,
                 items: list[Item]) -> KeyFinished | Failed:
    """The answer for a finished key: its rows (and the warnings finishing it gave), or why finishing
    it failed."""
    try:
        rows = tuple(finish(items))
        return KeyFinished(key, rows, notes=worker.take_notes(), unsigned=worker.take_unsigned())
    except Exception as exc:
        return failure(exc, key)


FINISHING_MODES = ("process", "thread")


def finishing_mode() -> str:
    """``REGSURVEY_FINISH``: where compiled keys are finished, ``process`` (default; Linux, since it
    forks a process holding torch) or ``thread``; ValueError for anything else."""
    value = os.environ.get("REGSURVEY_FINISH", "").strip().lower()
    if value and value not in FINISHING_MODES:
        raise ValueError(f"REGSURVEY_FINISH={os.environ['REGSURVEY_FINISH']!r}: expected one of "
                         f"{', '.join(FINISHING_MODES)}")
    if not sys.platform.startswith("linux"):
        return "thread"
    return value or "process"


Reply = Callable[[Key, "KeyFinished | Failed"], None]


class Finishing:
    """Where a worker's compiled keys are finished, in the order they were compiled.

    In a finishing process forked from the worker (a copy of it, sharing its memory until either
    writes), so that reading and linting objects takes no interpreter lock from the compiles: they
    then run side by side on two cores. A relay thread in the worker passes each key's rows on. If
    that process dies, the keys it held (the worker still has their objects) and every later one are
    finished on a thread of the worker instead: nothing is lost. Without the process (``thread``
    mode), the thread does all of it.
    """

    def __init__(self, worker: Worker, reply: Reply, use_process: bool, inherited: list[Connection] | None = None):
        """``inherited``: the worker's connections the finishing process must not keep open (the
        survey would not see the worker's end while it lives)."""
        self.worker = worker
        self.reply = reply
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="regsurvey-finish")
        self.lock = threading.Lock()
        self.emptied = threading.Condition(self.lock)
        self.held: dict[tuple[str, str], tuple[Key, list[Item]]] = {}  # sent to the process, not answered
        self.conn: Connection | None = None
        self.pid: int | None = None
        self.relay: threading.Thread | None = None
        if use_process:
            with contextlib.suppress(OSError):  # no process to be had (a process limit): the thread does it all
                self._fork(inherited or [])

    def _fork(self, inherited: list[Connection]) -> None:
        ours, theirs = socket.socketpair()
        worker_pid = os.getpid()
        try:
            pid = os.fork()  # before this worker starts any thread of its own
        except OSError:
            ours.close()
            theirs.close()
            raise
        if pid == 0:  # the finishing process
            code = 1
            try:
                die_with_parent(worker_pid)  # the worker killed (its survey ended), this goes too
                ours.close()
                for other in inherited:
                    other.close()
                self.thread.shutdown(wait=False)
                _finishing_loop(self.worker, Connection(theirs.detach()))
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        self.conn, self.pid = Connection(ours.detach()), pid
        self.relay = threading.Thread(target=self._relay, args=(self.conn,), name="regsurvey-relay", daemon=True)
        self.relay.start()

    def submit(self, key: Key, items: list[Item]) -> None:
        """Finish ``key`` (compiled into ``items``) after those submitted before it; answer by reply."""
        with self.lock:
            conn = self.conn
            if conn is not None:
                self.held[(key.id, key.target)] = (key, items)
        if conn is None:
            self.thread.submit(self._here, key, items)
            return
        # Sent without the lock, which the relay takes for each answer. Should the process be gone,
        # the relay hands what it held, this one too, to the thread.
        with contextlib.suppress(OSError):
            conn.send((key, items))

    def _here(self, key: Key, items: list[Item]) -> None:
        self.reply(key, _rows_answer(self.worker, self.worker.finish, key, items))

    def _relay(self, conn: Connection) -> None:
        while True:
            try:
                answer = conn.recv()
            except (EOFError, OSError):
                break
            ident = (answer.key.id, answer.key.target) if answer.key is not None else None
            with self.lock:
                if ident not in self.held:
                    continue  # cannot happen: every answer names a key the process was sent
                key, items = self.held.pop(ident)
            self.worker.finished(items)
            with contextlib.suppress(OSError):  # the survey is gone: the worker's loop sees it and ends
                self.reply(key, answer)
            with self.lock:
                if not self.held:
                    self.emptied.notify_all()
        with self.lock:  # the process is gone: what it held is finished here
            self.conn, lost = None, list(self.held.values())
            self.held.clear()
            self.emptied.notify_all()
        conn.close()
        self._reap()
        for key, items in lost:
            self.thread.submit(self._here, key, items)

    def _reap(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = None

    def close(self, wait: bool) -> None:
        """Stop finishing; ``wait``: answer every key submitted first."""
        with self.lock:
            while wait and self.held and self.conn is not None:
                self.emptied.wait(timeout=1.0)
            conn = self.conn
        if conn is not None:
            # End the process's input: it answers what it holds and exits, and the relay then reads
            # the end of its answers. (Closing the descriptor instead would wake neither: the relay's
            # read still holds the socket open.)
            with contextlib.suppress(OSError), socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM) as end:
                end.shutdown(socket.SHUT_WR)
        if self.relay is not None and wait:
            self.relay.join()
        self.thread.shutdown(wait=wait)


def _finishing_loop(worker: Worker, conn: Connection) -> None:
    """The finishing process: finish each compiled key the worker sends, answer with its rows."""
    worker.take_timing()  # only its own work from here on
    while True:
        try:
            key, items = conn.recv()
        except (EOFError, OSError):
            return
        answer = _rows_answer(worker, worker.finish_rows, key, items)
        if isinstance(answer, KeyFinished):
            answer = replace(answer, timing=worker.take_timing(), peak_rss_mb=peak_rss_mb())
        try:
            conn.send(answer)
        except OSError:  # the worker is gone
            return
