"""Build locks (store.inflight) between real processes: a waiter goes on when the holder releases or dies;
a failure is taken by those that waited for it and by the survey it happened in, never by a later one."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from regsurvey.store.inflight import InFlight

HASH = "a" * 64


def hold(objects: str, ready: multiprocessing.synchronize.Event, go: multiprocessing.synchronize.Event,
         error: str | None) -> None:
    """A holder in another process: take the lock, say so, wait for ``go``, record ``error`` (if any),
    release."""
    lock = InFlight(Path(objects)).take(HASH)
    assert lock is not None and not lock.waited
    ready.set()
    go.wait(60)
    if error is not None:
        lock.fail(error)
    lock.release()


def holder(tmp_path: Path, error: str | None = None) -> tuple[Any, multiprocessing.synchronize.Event]:
    ctx = multiprocessing.get_context("fork")
    ready, go = ctx.Event(), ctx.Event()
    process = ctx.Process(target=hold, args=(str(tmp_path / "objects"), ready, go, error))
    process.start()
    assert ready.wait(60)
    return process, go


def release_in(seconds: float, go: multiprocessing.synchronize.Event) -> None:
    threading.Timer(seconds, go.set).start()


def test_a_free_lock_is_taken_at_once_and_released(tmp_path: Path) -> None:
    inflight = InFlight(tmp_path / "objects")
    lock = inflight.take(HASH)
    assert lock is not None and not lock.waited and lock.failure(since=0.0) is None
    assert (tmp_path / "objects" / "inflight").is_dir()
    lock.release()
    lock.release()  # twice is harmless
    again = inflight.take(HASH)
    assert again is not None and not again.waited
    again.release()


def test_a_waiter_goes_on_when_the_holder_releases(tmp_path: Path) -> None:
    process, go = holder(tmp_path)
    release_in(0.5, go)
    start = time.monotonic()
    lock = InFlight(tmp_path / "objects").take(HASH)
    waited = time.monotonic() - start
    process.join(60)
    assert lock is not None and lock.waited and waited >= 0.4
    assert lock.failure(since=0.0) is None  # the holder succeeded: its result would be in the result cache
    lock.release()


def test_a_failure_is_taken_by_its_waiters_and_its_own_survey_only(tmp_path: Path) -> None:
    survey_started = time.time()
    process, go = holder(tmp_path, error="CompilationError: at 3:4: static_assert failed")
    release_in(0.2, go)
    lock = InFlight(tmp_path / "objects").take(HASH)
    process.join(60)
    assert lock is not None and lock.waited
    assert lock.failure(since=time.time() + 60) == "CompilationError: at 3:4: static_assert failed"  # waited for it
    lock.release()
    # Taken free later by the survey it failed in: the failure, not another compile.
    same = InFlight(tmp_path / "objects").take(HASH)
    assert same is not None and not same.waited
    assert same.failure(since=survey_started) == "CompilationError: at 3:4: static_assert failed"
    same.release()
    # A survey started after it builds again: the old failure is removed, not reused.
    later = InFlight(tmp_path / "objects").take(HASH)
    assert later is not None and not later.waited and later.failure(since=time.time() + 1) is None
    assert not list((tmp_path / "objects" / "inflight").glob("*.failed"))
    later.release()


def test_a_holder_that_dies_releases_its_lock(tmp_path: Path) -> None:
    process, _ = holder(tmp_path)  # never told to go on
    pid = process.pid
    assert pid is not None
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    lock = InFlight(tmp_path / "objects").take(HASH)  # not forever: the kernel drops a dead process's flock
    process.join(60)
    assert process.exitcode == -signal.SIGKILL
    assert lock is not None and lock.waited and lock.failure(since=0.0) is None
    lock.release()


def test_a_store_where_no_lock_can_be_made_builds_without_one(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    objects.mkdir()
    (objects / "inflight").write_text("a file where the directory would be")
    assert InFlight(objects).take(HASH) is None


def test_a_record_dated_in_the_future_is_no_failure(tmp_path: Path) -> None:
    """Issue 31: a ``.failed`` record planted with a time ahead (or written by a host whose clock runs
    ahead, on a shared directory) failed every later survey's build without compiling it. Now it is stale:
    removed, and the kernel compiled."""
    inflight = InFlight(tmp_path / "objects")
    lock = inflight.take(HASH)
    assert lock is not None
    lock.fail("CompilationError: planted")
    lock.release()
    record = tmp_path / "objects" / "inflight" / f"{lock.base.name}.failed"
    assert record.exists()
    ahead = time.time() + 3600
    os.utime(record, (ahead, ahead))
    later = inflight.take(HASH)
    assert later is not None and not later.waited
    assert later.failure(since=time.time() - 60) is None and not record.exists()
    later.release()


def test_a_waiter_takes_no_record_older_than_its_wait(tmp_path: Path) -> None:
    """A holder that dies leaves no record of its own: an older record (another survey's) is not its."""
    inflight = InFlight(tmp_path / "objects")
    first = inflight.take(HASH)
    assert first is not None
    first.fail("CompilationError: an old failure")
    first.release()
    record = tmp_path / "objects" / "inflight" / f"{first.base.name}.failed"
    old = time.time() - 600
    os.utime(record, (old, old))
    process, _ = holder(tmp_path)
    assert process.pid is not None
    threading.Timer(0.3, os.kill, (process.pid, signal.SIGKILL)).start()
    lock = inflight.take(HASH)
    process.join(60)
    assert lock is not None and lock.waited and lock.failure(since=0.0) is None and not record.exists()
    lock.release()


def test_a_waiter_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    """What a survey's time-out names: the holder's process (and host, when it is another)."""
    process, go = holder(tmp_path)
    told: list[tuple[str, str | None]] = []
    inflight = InFlight(tmp_path / "objects")
    inflight.on_wait = lambda triton_hash, who: told.append((triton_hash, who))
    release_in(0.3, go)
    lock = inflight.take(HASH)
    process.join(60)
    assert lock is not None and lock.waited
    assert told == [(HASH, f"process {process.pid}"), (HASH, None)]
    lock.release()
