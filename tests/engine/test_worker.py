"""The worker's two halves: compiling a key, then finishing it (reading, storing, linting its objects).

While one key is finished (in the worker's finishing process, or on its second thread), the next
compiles: a launch of the same kernel as one still being finished must take that one's row, not compile
again (toy project, gfx950). A finishing process that dies loses nothing.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from regsurvey.engine.protocol import Failed, KeyFinished
from regsurvey.engine.worker import Compiled, Duplicate, Finishing, Worker
from regsurvey.keys.keyfiles import expand_keys
from regsurvey.model.keys import Key
from regsurvey.model.results import Row

from ..conftest import TOY


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Worker:
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    return Worker(TOY, TOY / "keys", tmp_path / "store" / "objects", "gfx950")


def gfx950_keys(worker: Worker) -> dict[str, Key]:
    """The toy project's keys on gfx950, by id."""
    return {k.id: k for k in expand_keys(list(worker.kinds().values()), ["gfx950"])}


class Replies:
    """What a :class:`Finishing` answers, by key id."""

    def __init__(self) -> None:
        self.answers: dict[str, KeyFinished | Failed] = {}
        self.arrived = threading.Condition()

    def __call__(self, key: Key, answer: KeyFinished | Failed) -> None:
        with self.arrived:
            self.answers[key.id] = answer
            self.arrived.notify_all()

    def wait(self, *ids: str) -> list[KeyFinished]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: all(i in self.answers for i in ids), timeout=120), self.answers
        answers = [self.answers[i] for i in ids]
        assert all(isinstance(a, KeyFinished) for a in answers), answers
        return answers  # type: ignore[return-value]


def test_a_kernel_still_being_finished_is_taken_from_it(worker: Worker) -> None:
    keys = gfx950_keys(worker)
    # The row width only sizes the grid: both keys launch one kernel.
    first = worker.compile_key(keys["scale/w2/stop"])
    second = worker.compile_key(keys["scale/w8/stop"])
    assert isinstance(first[0], Compiled) and isinstance(second[0], Duplicate)
    (a,), (b,) = worker.finish(first), worker.finish(second)
    assert a.ok and not a.reused and b.ok and b.reused
    assert (b.object, b.resources, b.triton_hash, b.compile_s) == (a.object, a.resources, a.triton_hash, a.compile_s)
    assert a.lint == () and b.lint == ()  # linted once; AMD rows always carry their findings
    # The compile's stages, measured once: the reused row says it is reused, and keeps that measurement.
    assert a.stage_s is not None and b.stage_s == a.stage_s and "lld" in a.stage_s
    assert a.stage_s.total <= a.compile_s + 0.01
    # Finished, it is in the result cache: a third key reuses it from there, with its measurement.
    (third,) = worker.compile_key(keys["scale/w2/stop"])
    assert isinstance(third, Row) and third.reused and third.object == a.object
    assert (third.compile_s, third.stage_s) == (a.compile_s, a.stage_s)
    timing = worker.take_timing()
    assert timing["compile_s"] > 0 and timing["analyze_s"] > 0 and timing["store_s"] > 0


def test_survey_key_compiles_and_finishes(worker: Worker) -> None:
    keys = gfx950_keys(worker)
    rows = worker.survey_key(keys["gemm/w8"])
    assert [r.status for r in rows] == ["ok"]
    assert rows[0].resources["vgpr"] > 0 and rows[0].object is not None


@pytest.mark.parametrize("use_process", [True, False], ids=["process", "thread"])
def test_finishing_answers_every_key_in_order(worker: Worker, use_process: bool) -> None:
    keys = gfx950_keys(worker)
    replies = Replies()
    finishing = Finishing(worker, replies, use_process=use_process)
    try:
        assert (finishing.pid is not None) == use_process
        ids = ["scale/w2/stop", "scale/w8/stop", "gemm/w8"]
        for i in ids:  # scale/w8/stop compiles while scale/w2/stop is still being finished: a Duplicate
            finishing.submit(keys[i], worker.compile_key(keys[i]))
        first, second, gemm = replies.wait(*ids)
    finally:
        finishing.close(wait=True)
    (a,), (b,), (g,) = first.rows, second.rows, gemm.rows
    assert a.status == b.status == g.status == "ok" and not a.reused and b.reused
    assert (b.object, b.resources, b.triton_hash) == (a.object, a.resources, a.triton_hash)
    assert g.resources["vgpr"] > 0
    if use_process:  # the finishing process's own seconds and memory came with each answer
        assert first.timing["analyze_s"] > 0 and first.peak_rss_mb > 100
    assert not worker._in_flight  # every kernel finished: later launches find them in the result cache


def test_a_finishing_process_that_dies_loses_nothing(worker: Worker, tmp_path: Path) -> None:
    """Keys it held, and later ones, are finished on the worker's thread; a launch of a kernel the dead
    process finished takes its row from the result cache it was stored in."""
    keys = gfx950_keys(worker)
    replies = Replies()
    finishing = Finishing(worker, replies, use_process=True)
    try:
        first = worker.compile_key(keys["scale/w2/stop"])
        duplicate = worker.compile_key(keys["scale/w8/stop"])  # a Duplicate of the first, in flight
        assert isinstance(duplicate[0], Duplicate)
        finishing.submit(keys["scale/w2/stop"], first)
        (a,) = replies.wait("scale/w2/stop")[0].rows
        assert finishing.pid is not None
        os.kill(finishing.pid, signal.SIGKILL)
        finishing.submit(keys["scale/w8/stop"], duplicate)  # sent to a dead process, or after it was seen gone
        gemm = worker.compile_key(keys["gemm/w8"])
        finishing.submit(keys["gemm/w8"], gemm)
        (b,), (g,) = (answer.rows for answer in replies.wait("scale/w8/stop", "gemm/w8"))
        deadline = time.monotonic() + 30
        while finishing.conn is not None:  # the relay noticed
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        finishing.close(wait=True)
    assert b.status == "ok" and b.reused and b.object == a.object and b.resources == a.resources
    assert g.status == "ok" and g.resources["vgpr"] > 0
    # The same rows as a worker that finished everything itself.
    fresh = Worker(TOY, TOY / "keys", tmp_path / "fresh" / "objects", "gfx950")
    rows = [fresh.survey_key(keys[i])[0] for i in ("scale/w2/stop", "scale/w8/stop", "gemm/w8")]
    assert [(r.status, r.resources, r.object) for r in rows] == [(x.status, x.resources, x.object) for x in (a, b, g)]


def test_a_worker_that_cannot_fork_finishes_on_its_thread(worker: Worker, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    keys = gfx950_keys(worker)
    replies = Replies()
    finishing = Finishing(worker, replies, use_process=True)
    try:
        assert finishing.pid is None and finishing.conn is None
        finishing.submit(keys["gemm/w8"], worker.compile_key(keys["gemm/w8"]))
        (answer,) = replies.wait("gemm/w8")
    finally:
        finishing.close(wait=True)
    assert answer.rows[0].status == "ok"


@pytest.mark.parametrize("failures", [1, 2])
def test_an_intermittent_link_failure_is_retried_once(worker: Worker, monkeypatch: pytest.MonkeyPatch,
                                                       failures: int) -> None:
    """Triton 3.6's in-process LLD sometimes fails a link it does the next time (issue #10, item 10):
    the failure is injected in front of the real compile, which then runs."""
    from regsurvey.compile import toolchain

    real = toolchain.compile_launch
    left = [failures]

    def flaky_compile(launch: Any, target: Any) -> Any:
        if left[0]:
            left[0] -= 1
            raise RuntimeError("LLD failed to link hsaco source /tmp/a into object file /tmp/b because ")
        return real(launch, target)

    monkeypatch.setattr(toolchain, "compile_launch", flaky_compile)
    (row,) = worker.survey_key(gfx950_keys(worker)["gemm/w8"])
    if failures == 1:  # built on the retry: a result like any other, with the first failure noted
        assert row.ok and row.resources["vgpr"] > 0
        assert row.flaky == ("first attempt failed, built on retry: RuntimeError: LLD failed to link hsaco "
                             "source /tmp/a into object file /tmp/b because")
    else:  # failed twice: flaky, not a compile error of the kernel
        assert row.status == "flaky" and not row.ok and "failed the same way on a retry" in (row.error or "")


def test_a_failure_record_is_a_hint_until_the_survey_compiles_the_kernel(worker: Worker, tmp_path: Path) -> None:
    """Issue 31: a ``.failed`` record (planted, or left by a host whose clock runs ahead) failed a build
    without compiling it, and that failure was stored and reused. Dated in the future, it is no record now:
    the kernel is compiled. Dated within the survey, it is taken, but as a failure of the moment (transient:
    the stored survey is surveyed again), unless the survey compiled the kernel itself and it failed so."""
    import json
    from dataclasses import replace

    from regsurvey.engine.survey import settled_failures
    from regsurvey.store.inflight import InFlight

    key = gfx950_keys(worker)["gemm/w8"]
    (built,) = worker.survey_key(key)
    assert built.ok and built.triton_hash

    def planted(name: str, ahead_s: float) -> Row:
        other = Worker(TOY, TOY / "keys", tmp_path / name / "objects", "gfx950")  # (started before the record)
        when = time.time() + ahead_s
        record = InFlight(other.objects.root)._base(built.triton_hash or "").with_suffix(".failed")
        record.parent.mkdir(parents=True)
        record.write_text(json.dumps({"error": "CompilationError: planted"}))
        os.utime(record, (when, when))
        (row,) = other.survey_key(key)
        return row

    ahead = planted("ahead", 3600)
    assert ahead.ok and ahead.resources == built.resources and not ahead.reused
    fresh = planted("fresh", 0)
    assert (fresh.status, fresh.error, fresh.transient) == ("error", "CompilationError: planted", True)
    assert settled_failures([fresh]) == [fresh]  # nothing in the survey compiled it
    compiled_here = replace(fresh, key="gemm/w2", compile_s=0.4, transient=False)
    assert settled_failures([compiled_here, fresh])[1].transient is False
    other_error = replace(compiled_here, error="CompilationError: another")
    assert settled_failures([other_error, fresh])[1].transient is True
