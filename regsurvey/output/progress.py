"""Survey progress on stderr: what is surveyed (the revision's label), keys done of its total, builds compiled
and reused, failures, elapsed time and an estimate of what is left; then the work a command does after its
surveys, where it takes a while (the changed builds' source-line pressure): what it does, items done of its
total, the time.

In a terminal, a rich bar per survey: a command that surveys several revisions (``diff``, ``stack``,
``history``, ``bisect``, ``rebuild-check``, ``demo``) shows one bar for each, named after its revision, each
counting to its own total, and one for the work after them. Elsewhere (a CI log, a pipe), plain lines that
read on their own in a log: one as a survey starts, one as its keys are listed, then one every
:data:`LOG_INTERVAL_S` seconds while keys finish (every :data:`QUIET_INTERVAL_S` when none did: the survey is
alive, compiling long keys), and one as it ends; the work after them alike. No carriage return, no colour.
``--quiet``: neither.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

from ..model.keys import Key
from ..model.progress import Progress
from ..model.results import Row
from ..model.words import count, plural
from . import progress_lines

LOG_INTERVAL_S = 10.0  # the most often a line is printed while keys finish
QUIET_INTERVAL_S = 30.0  # the least often, while none does


@dataclass
class SurveyCount:
    """What one survey has done so far: keys finished of its total, its builds compiled, reused and failed."""

    label: str
    began: float = field(default_factory=time.monotonic)
    listed: float | None = None  # when its keys were listed
    total: int | None = None  # keys to survey, once listed
    keys: int = 0
    compiled: int = 0
    reused: int = 0
    failed: int = 0  # builds that failed (flaky ones included); a skipped key is no build

    def start(self, total: int) -> None:
        """The survey listed its keys: ``total`` of them."""
        self.total, self.listed = total, time.monotonic()

    def add(self, rows: list[Row]) -> None:
        """A key finished with ``rows``."""
        self.keys += 1
        self.compiled += sum(r.ok and not r.reused for r in rows)
        self.reused += sum(r.ok and r.reused for r in rows)
        self.failed += sum(r.failed or r.is_flaky for r in rows)

    @property
    def finished(self) -> bool:
        """Every key is done."""
        return self.total is not None and self.keys >= self.total

    @property
    def done(self) -> int:
        """Keys finished (what a log line's progress is counted in)."""
        return self.keys

    def builds_text(self) -> str:
        """``30 builds compiled, 22 reused, 1 failed``."""
        return f"{count(self.compiled, 'build')} compiled, {self.reused} reused, {self.failed} failed"

    def left_s(self, now: float) -> float | None:
        """Seconds left at the rate keys finished so far (slowest keys go first: an overestimate early on);
        None before the first key, or once done."""
        if self.listed is None or self.total is None or not self.keys or self.finished:
            return None
        return (now - self.listed) / self.keys * (self.total - self.keys)

    def line(self, now: float) -> str:
        """One self-contained line for a log: the survey's label, then where it is."""
        if self.total is None:
            return progress_lines.listing(self.label, clock(now - self.began))
        if not self.keys and not self.finished:
            return progress_lines.to_survey(self.label, count(self.total, 'key'), clock(now - self.began))
        done = f"{self.keys}/{count(self.total, 'key')}, {self.builds_text()}"
        if self.finished:
            return progress_lines.finished_keys(self.label, done, f"done in {clock(now - self.began)}")
        left = self.left_s(now)
        estimate = f", about {clock(left)} left" if left is not None else ""
        return progress_lines.finished_keys(self.label, done, f"{clock(now - self.began)} elapsed{estimate}")


@dataclass
class WorkCount:
    """The work after the surveys (``Progress.on_work``) so far: what it does (``source-line pressure of 98
    changed builds``), its items (``cubin``) done of their total."""

    what: str
    noun: str
    total: int
    began: float = field(default_factory=time.monotonic)
    done: int = 0

    @property
    def finished(self) -> bool:
        """Every item is done."""
        return self.done >= self.total

    def first_line(self) -> str:
        """The line as it begins: what it does, and how much."""
        return progress_lines.working(self.what, count(self.total, self.noun))

    def line(self, now: float) -> str:
        """One self-contained line for a log: what it does, items done, the time (and an estimate of what is
        left, at the rate items were done so far)."""
        done = f"{self.done}/{count(self.total, self.noun)}"
        if self.finished:
            return progress_lines.finished_items(self.what, done, f"done in {clock(now - self.began)}")
        estimate = ""
        if self.done:
            estimate = f", about {clock((now - self.began) / self.done * (self.total - self.done))} left"
        return progress_lines.finished_items(self.what, done, f"{clock(now - self.began)} elapsed{estimate}")


def clock(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@contextlib.contextmanager
def survey_progress(enabled: bool = True, stream: TextIO | None = None,
                    interval: float = LOG_INTERVAL_S) -> Iterator[Progress]:
    """A :class:`Progress` that shows the surveys it follows on ``stream`` (stderr): bars in a terminal,
    else a line at most every ``interval`` seconds; one that does nothing when not ``enabled``."""
    out = stream if stream is not None else sys.stderr
    if not enabled:
        yield Progress()
    elif out.isatty():
        with _bars(out) as progress:
            yield progress
    else:
        log = LogLines(out, interval)
        try:
            yield log.progress()
        finally:
            log.close()


class LogLines:
    """Progress as plain lines on a stream that is not a terminal (a CI log): a line as each survey starts,
    as its keys are listed and as it ends, and between, from a thread of its own, a line every ``interval``
    seconds where keys finished since the last (every ``QUIET_INTERVAL_S`` seconds where none did)."""

    def __init__(self, out: TextIO, interval: float = LOG_INTERVAL_S):
        self.out = out
        self.interval = interval
        self.quiet_interval = max(interval, QUIET_INTERVAL_S)
        self.current: SurveyCount | WorkCount | None = None
        self._lock = threading.Lock()
        self._said_at = 0.0  # when the last line was printed
        self._said_done = -1  # the current survey's keys (or the work's items) done then
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="regsurvey-progress", daemon=True)
        self._ticker.start()

    def progress(self) -> Progress:
        """The callbacks that feed these lines."""
        return Progress(on_start=self._listed, on_key=self._key_done, on_survey=self._began, on_work=self._work,
                        on_item=self._item_done)

    def close(self) -> None:
        """Stop the ticker (a survey cut short says no more)."""
        self._stop.set()
        self._ticker.join()

    def _say(self, count: SurveyCount | WorkCount) -> None:
        # (under the lock)
        now = time.monotonic()
        print(count.line(now), file=self.out, flush=True)
        self._said_at, self._said_done = now, count.done

    def _survey(self) -> SurveyCount:
        # A survey whose start nobody announced (the scheduler driven by itself) still counts.
        if not isinstance(self.current, SurveyCount):
            self.current = SurveyCount("survey")
        return self.current

    def _began(self, label: str) -> None:
        with self._lock:
            self.current = SurveyCount(label)
            print(progress_lines.surveying(label), file=self.out, flush=True)
            self._said_at, self._said_done = time.monotonic(), -1

    def _listed(self, total: int) -> None:
        with self._lock:
            count = self._survey()
            count.start(total)
            self._say(count)

    def _key_done(self, key: Key, rows: list[Row]) -> None:
        with self._lock:
            count = self._survey()
            count.add(rows)
            if count.finished:
                self._say(count)
                self.current = None

    def _work(self, what: str, noun: str, total: int) -> None:
        with self._lock:
            work = self.current = WorkCount(what, noun, total)
            print(work.first_line(), file=self.out, flush=True)
            self._said_at, self._said_done = time.monotonic(), 0

    def _item_done(self) -> None:
        with self._lock:
            work = self.current
            if not isinstance(work, WorkCount):
                return
            work.done += 1
            if work.finished:
                self._say(work)
                self.current = None

    def _tick(self) -> None:
        while not self._stop.wait(min(self.interval, 1.0)):
            with self._lock:
                count = self.current
                if count is None:
                    continue
                since = time.monotonic() - self._said_at
                if (since >= self.interval and count.done != self._said_done) or since >= self.quiet_interval:
                    self._say(count)


@contextlib.contextmanager
def _bars(out: TextIO) -> Iterator[Progress]:
    """A rich bar per survey, named after what it surveys, counting its keys to its own total; the last key
    done beside it. The bars go when the command's surveys are done."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    counts: dict[TaskID, SurveyCount] = {}
    # Not markup: a revision's name or a key id may hold brackets.
    with Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
             TextColumn("{task.fields[builds]}", markup=False), TimeRemainingColumn(),
             TextColumn("{task.fields[last]}", style="dim", markup=False),
             console=Console(file=out), transient=True) as bar:
        current: list[TaskID] = []  # the bar of the survey in progress

        def began(label: str) -> None:
            task = bar.add_task(label, total=None, builds="listing keys", last="")
            counts[task] = SurveyCount(label)
            current[:] = [task]

        def task() -> TaskID:
            if not current:
                began("survey")
            return current[0]

        def on_start(total: int) -> None:
            counts[task()].start(total)
            bar.update(task(), total=total, builds=counts[task()].builds_text())

        def on_key(key: Key, rows: list[Row]) -> None:
            count = counts[task()]
            count.add(rows)
            bar.update(task(), completed=count.keys, builds=count.builds_text(), last=key.id)

        work: list[TaskID] = []  # the bar of the work after the surveys

        def on_work(what: str, noun: str, total: int) -> None:
            work[:] = [bar.add_task(what, total=total, builds=plural(noun), last="")]

        def on_item() -> None:
            if work:
                bar.advance(work[0])

        yield Progress(on_start=on_start, on_key=on_key, on_survey=began, on_work=on_work, on_item=on_item)
