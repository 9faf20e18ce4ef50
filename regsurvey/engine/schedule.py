"""Key scheduling, once for every transport: which key each worker takes next, the copies of a key idle
workers share at the tail, successors, time-outs, lost workers, and each key's rows once its last copy ends.

The keys come longest first (:meth:`.costs.KeyCosts.longest_first`). A worker takes only keys of its own
target (it imported the checkout for it). One that is idle, with no key of its target left to take while
other targets' keys wait, is ended and a worker for the target with the most work per worker takes its
place (:func:`wanted_target`); with :attr:`Policy.successors`, that worker is started as soon as the other
takes the last key of its target, so that its start overlaps that key's compile. Once no key is left to hand
out, an idle worker helps with a key of its target in flight (the most estimated seconds per copy; each
worker once per key, and none once a copy has compiled every launch: :meth:`.copies.KeyCopies.may_help`):
each copy compiles the launches no other is compiling and reads the others' results (the build locks share
them out), and the key's rows are taken from every copy (:func:`.copies.merged_copies`) when the last one
ends. A copy lost while others go on costs nothing.

A worker that times out or is lost takes the key it was running with it (an error row, transient); the
keys it held besides are sent again, once: a key that was on two workers lost is an error too. Keys queued
behind the running one that never began go again as if never sent.

Nothing here knows which transport runs it: a :class:`Transport` (the local pool of processes,
:mod:`.transport_local`; Ray's actors, :mod:`.transport_ray`) starts workers, sends keys and ends workers
when the schedule says so, and tells the schedule what happened: :meth:`Schedule.on_answer` (a worker's
message), :meth:`~Schedule.on_left` and :meth:`~Schedule.on_rows` (a key answered, its rows taken later),
:meth:`~Schedule.on_lost`, :meth:`~Schedule.on_timeout`. The transport waits; the schedule decides.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ..model.keys import Key
from ..model.progress import Progress
from ..model.results import Row, Status
from ..model.targets import ANY_TARGET, DEFAULT_LIST_TARGET
from .copies import KeyCopies, KeyId, key_id
from .protocol import Answer, CapturedKey, Failed, KeyCaptured, KeyCompiled, KeyFinished, KeyReads, KeyWaiting


def error_row(key: Key, message: str, transient: bool = False) -> Row:
    """The one row of a key that failed as a whole (its worker lost or late, or its kind body raised)."""
    return Row(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target, kernel=None,
               status=Status.ERROR, error=message, transient=transient)


class Targeted(Protocol):
    """A transport's worker as the schedule sees it: the one target whose keys it takes."""

    @property
    def target(self) -> str: ...


W = TypeVar("W", bound=Targeted)


class Transport(Protocol[W]):
    """What runs the schedule's work: starts workers, sends them keys, ends them."""

    def start(self, target: str) -> W:
        """A new worker for ``target``'s keys (its ``target`` may be ANY_TARGET instead)."""
        ...

    def send(self, worker: W, key: Key, captured: CapturedKey | None = None) -> None:
        """Hand ``key`` to ``worker`` (``captured``: a copy of a key in flight, with its launches as its first
        copy captured them)."""
        ...

    def end(self, worker: W, idle: bool) -> None:
        """End ``worker``: ``idle``, it holds no key (it may be asked to clean up first)."""
        ...

    def room(self) -> bool:
        """Whether a worker lost may be replaced now (a cluster may have no CPU free for it yet)."""
        ...


@dataclass(frozen=True)
class Policy:
    """How a transport's workers take keys, and when an idle one may help with a key in flight."""

    depth: int = 2  # keys a worker holds at once: running, finishing, or queued behind the running one
    queued: bool = False  # whether a key may be sent while another runs (else once it has compiled)
    successors: bool = False  # a worker taking its target's last key gets its successor at once
    help_after_s: float = 0.0  # a key may be helped with once it has run this long
    help_copies: int | None = None  # copies of a key at most; None: no more than its launches (KeyCaptured)
    share_by_running: bool = False  # a key's seconds per copy count its time so far when that is longer


@dataclass(eq=False)
class Carrier:
    """What the schedule knows of one worker: the keys it holds and since when it runs the current one."""

    target: str
    started: list[Key] = field(default_factory=list)  # keys it runs or finishes, in the order sent
    queued: list[Key] = field(default_factory=list)  # keys sent behind the running one, not begun
    running: Key | None = None  # the key it works on now (compiling, or its call running)
    since: float = 0.0  # when ``running`` began
    heard: float = 0.0  # when it last said something (or was sent a key)
    waiting: str | None = None  # who holds the build lock its key's compile waits for ("" unknown), if it waits
    succeeded: bool = False  # a worker for another target was started to take its place

    @property
    def holds(self) -> list[Key]:
        """Every key it holds: the running one first, then those it finishes, then those queued."""
        first = [self.running] if self.running is not None else []
        return first + [k for k in self.started if k != self.running] + self.queued

    def timed_out(self, timeout: float) -> str:
        """Why its key failed at the time-out: what it was doing then."""
        why = f"timed out after {timeout:g} s (--timeout)"
        if self.waiting is None:
            return why
        return (f"{why} while waiting for the build lock of one of its kernels, held by "
                f"{self.waiting or 'another process'} (compiling that kernel for another key, or another "
                "survey on this store)")

    def deadline(self, timeout: float) -> float:
        """When it has taken too long: the key it runs has ``timeout`` seconds from its start; with only
        keys to finish, it must say something within ``timeout`` seconds."""
        return (self.since if self.running is not None else self.heard) + timeout


class Schedule(Generic[W]):
    """The keys of one survey scheduled over a transport's workers (see the module's text).

    ``keys`` in the order to hand them out; ``cost`` estimates a key's seconds; ``reuse``: copies of a key
    may share its launches (through build locks, which ``--force`` takes none of); ``workers``: those the
    transport started before (the one listing the keys ...). ``on_rows`` is given each key's rows as it
    finishes, and whether every key has been handed out; ``lost_before`` ends the error of a key lost twice
    ("... it was in flight on <lost_before>")."""

    def __init__(self, keys: Sequence[Key], transport: Transport[W], *, policy: Policy, timeout: float,
                 cost: Callable[[Key], float] = lambda key: 1.0, reuse: bool = True,
                 progress: Progress | None = None, on_rows: Callable[[list[Row], bool], None] | None = None,
                 workers: Iterable[W] = (), lost_before: str = "a worker that failed before",
                 clock: Callable[[], float] = time.monotonic):
        self.transport = transport
        self.policy = policy
        self.timeout = timeout
        self.cost = cost
        self.reuse = reuse
        self.progress = progress or Progress()
        self.on_keys_rows = on_rows
        self.lost_before = lost_before
        self.clock = clock
        self.pending = list(reversed(keys))  # pop() from the end keeps the given order
        self.left = Counter(k.target for k in self.pending)  # pending keys per target
        self.results: dict[KeyId, list[Row]] = {}
        self.copies = KeyCopies()
        self.launches: dict[KeyId, int] = {}  # each key's launches, as its first copy captured them
        self.reads: dict[KeyId, KeyReads] = {}  # what each key's kind body read, as its first copy recorded it
        # Each key in flight's launches as its first copy captured them: what a copy sent to help takes instead
        # of running the kind body again.
        self.captured: dict[KeyId, CapturedKey] = {}
        self.resent: set[KeyId] = set()  # keys sent again after a worker holding them was lost
        self.carriers: dict[W, Carrier] = {w: Carrier(w.target) for w in workers}

    # -- what the transport asks

    @property
    def done(self) -> bool:
        """Whether every key has been handed out and no worker holds one."""
        return not self.pending and not any(c.holds for c in self.carriers.values())

    def busy(self) -> list[W]:
        """The workers holding keys, in the order they started."""
        return [w for w, c in self.carriers.items() if c.holds]

    def deadline(self, worker: W) -> float:
        """When ``worker`` times out (:meth:`Carrier.deadline`)."""
        return self.carriers[worker].deadline(self.timeout)

    def since(self, worker: W) -> float:
        """When the key ``worker`` runs now began."""
        return self.carriers[worker].since

    def fill(self, jobs: int) -> None:
        """Start workers until there are ``jobs``, each for the target that wants one most."""
        while len(self.carriers) < jobs:
            self.start_one()

    def start_one(self) -> None:
        """Start a worker for the target with the most pending seconds per worker."""
        self._start(wanted_target(self.pending, [c.target for c in self.carriers.values()], self.cost))

    def dispatch(self) -> bool:
        """Send keys to the workers that have room, help at the tail, end and replace idle workers, start
        successors. True when a worker was started or ended (the transport dispatches again before it
        waits: the new worker gets its key now, not after the busy ones next say something)."""
        replaced = False
        for w in list(self.carriers):
            replaced = self._feed(w) or replaced
        if self.policy.successors and self.pending:
            replaced = self._successors() or replaced
        if replaced:
            return True
        if self.pending and not self.carriers:  # every worker was lost: start one
            self.start_one()
            return True
        return False

    def next_for(self, worker: W) -> Key | None:
        """Send ``worker`` the key it should take now, and say which (None: none, or no room on it): a
        pending key of its target, else (every key handed out, and it runs none) a copy of a key in flight
        to help with."""
        c = self.carriers[worker]
        if not self._room(c):
            return None
        if self.pending:
            nxt = self._take(c.target)
        else:
            nxt = self._helped(c) if c.running is None else None
        if nxt is not None:
            self._send(worker, nxt)
        return nxt

    # -- events

    def on_answer(self, worker: W, message: Answer) -> None:
        """``worker`` said ``message`` (:mod:`.protocol`): a key captured, waiting for a build lock,
        compiled, finished or failed."""
        c = self.carriers.get(worker)
        if c is None:
            return
        c.heard = self.clock()
        match message:
            case KeyWaiting(key=key, holder=holder):
                if c.running == key:
                    c.waiting = holder
            case KeyCaptured(key=key, launches=n, reads=reads, captured=captured):
                self.launches.setdefault(key_id(key), n)
                if reads is not None:
                    self.reads.setdefault(key_id(key), reads)
                if captured is not None and self.copies.out(key):
                    self.captured.setdefault(key_id(key), captured)
            case KeyCompiled(key=key):
                self.copies.compiled(key)
                if c.running == key:  # it finishes the key now, and may take the next
                    c.running = None
            case KeyFinished(key=key, rows=rows):
                if self._leave(c, key):
                    self.on_rows(key, list(rows))
            case Failed(key=Key() as key):
                if self._leave(c, key):
                    self.on_rows(key, [error_row(key, message.error, transient=message.transient)])

    def on_left(self, worker: W, key: Key) -> None:
        """``worker`` answered ``key``, whose rows come later (:meth:`on_rows`); the key queued behind it
        begins."""
        c = self.carriers.get(worker)
        if c is not None:
            self._leave(c, key)

    def on_rows(self, key: Key, rows: list[Row]) -> None:
        """A copy of ``key`` ended with ``rows``: the key is done when no other copy is out."""
        last, merged = self.copies.ended(key, rows)
        if last and merged is not None:
            self._finish(key, merged)

    def on_lost(self, worker: W, why: str, blame: bool = True) -> None:
        """``worker`` is gone: the key it ran fails with ``why``; the others it held go again, once, to a
        worker started in its place while keys remain. With ``blame`` False (it died of no key's doing: the
        server that forked it ended, its node was lost) every key it held goes again. A key another copy
        still carries (or one already finished) is left to it."""
        c = self.carriers.pop(worker, None)
        if c is None:
            return
        blamed = c.holds[0] if blame and c.holds else None
        for k in c.holds:
            self._lost_key(k, why, blamed)
        self._replace(worker)

    def on_timeout(self, worker: W) -> None:
        """``worker`` ran past the time-out: the key it runs fails (saying what it was doing), those it
        finishes go again once, and those queued behind it, never begun, go again as if never sent."""
        c = self.carriers.pop(worker, None)
        if c is None:
            return
        holds = c.holds
        begun = holds[:len(holds) - len(c.queued)]
        why = c.timed_out(self.timeout)
        for k in begun:
            self._lost_key(k, why, begun[0])
        for k in reversed(c.queued):
            last, merged = self.copies.ended(k)
            if merged is not None:
                self._finish(k, merged)
            elif last:
                self._requeue(k)
        self._replace(worker)

    # -- the policy

    def _room(self, c: Carrier) -> bool:
        return len(c.holds) < self.policy.depth and (self.policy.queued or c.running is None)

    def _feed(self, w: W) -> bool:
        """Send ``w`` what it should take now; True when it was ended for lack of keys of its target."""
        c = self.carriers[w]
        while self._room(c):
            if self.next_for(w) is not None:
                continue
            if not self.pending or c.holds:
                return False
            # Nothing of its target left: a worker for a target with work takes its place.
            del self.carriers[w]
            self.transport.end(w, idle=True)
            if not c.succeeded:
                self.start_one()
            return True
        return False

    def _successors(self) -> bool:
        """A worker running the last key of its target while other targets' keys wait gets its successor
        now: a worker for the target with the most work left starts, and imports the checkout, while that
        key compiles (rather than after it: a worker's start is 0.5 to 1 s, a demo key's compile less)."""
        started = False
        for c in list(self.carriers.values()):
            if c.running is not None and not c.succeeded and c.target != ANY_TARGET and not self.left[c.target]:
                c.succeeded = True
                serving = [x.target for x in self.carriers.values() if not x.succeeded]
                self._start(wanted_target(self.pending, serving, self.cost))
                started = True
        return started

    def _take(self, target: str) -> Key | None:
        """The next pending key of ``target`` (pending is in reverse order: the next is last)."""
        if target != ANY_TARGET and not self.left[target]:
            return None
        for i in range(len(self.pending) - 1, -1, -1):
            if self.pending[i].target == target or target == ANY_TARGET:
                self.left[self.pending[i].target] -= 1
                return self.pending.pop(i)
        return None

    def _helped(self, c: Carrier) -> Key | None:
        """A key running on another worker that ``c`` can help with: of its target, not already on it, with
        fewer copies than it may have; the one with the most estimated seconds per copy."""
        if not self.reuse:  # copies share launches through build locks, which --force takes none of
            return None
        now = self.clock()
        held = {key_id(k) for k in c.holds}
        best: tuple[float, Key] | None = None
        for other in self.carriers.values():
            k = other.running
            if k is None or key_id(k) in held or (k.target != c.target and c.target != ANY_TARGET):
                continue
            running = now - other.since
            copies = self.copies.out(k)
            most = self.policy.help_copies
            if most is None:
                most = self.launches.get(key_id(k), 1)
            if most <= copies or running < self.policy.help_after_s or not self.copies.may_help(k, c):
                continue
            share = (max(self.cost(k), running) if self.policy.share_by_running else self.cost(k)) / copies
            if best is None or share > best[0]:
                best = (share, k)
        return best[1] if best is not None else None

    def _send(self, w: W, key: Key) -> None:
        c = self.carriers[w]
        now = self.clock()
        c.heard = now
        if c.running is None:
            c.started.append(key)
            c.running, c.since, c.waiting = key, now, None
        else:
            c.queued.append(key)
        helping = self.copies.out(key) > 0
        self.copies.sent(key, c)
        self.transport.send(w, key, self.captured.get(key_id(key)) if helping else None)

    def _start(self, target: str) -> None:
        w = self.transport.start(target)
        self.carriers[w] = Carrier(w.target)

    def _leave(self, c: Carrier, key: Key) -> bool:
        """``key`` is off ``c`` (False: it was not on it); the key queued next begins."""
        if key not in c.started:
            return False
        c.started.remove(key)
        if c.running == key:
            c.running = None
        if c.running is None and c.queued:
            c.running = c.queued.pop(0)
            c.started.append(c.running)
            c.since = self.clock()
        return True

    def _lost_key(self, k: Key, why: str, blamed: Key | None) -> None:
        last, merged = self.copies.ended(k)
        if not last:
            return
        if merged is not None:
            self._finish(k, merged)
        elif k == blamed:
            self._finish(k, [error_row(k, why, transient=True)])
        elif key_id(k) in self.resent:
            self._finish(k, [error_row(k, f"{why}; it was in flight on {self.lost_before}", transient=True)])
        else:
            self.resent.add(key_id(k))
            self._requeue(k)

    def _requeue(self, k: Key) -> None:
        self.pending.append(k)  # next to go
        self.left[k.target] += 1

    def _replace(self, worker: W) -> None:
        """End ``worker`` (lost or late) and, while keys remain, start another when there is room."""
        self.transport.end(worker, idle=False)
        if self.pending and self.transport.room():
            self.start_one()

    def _finish(self, done: Key, rows: list[Row]) -> None:
        self.captured.pop(key_id(done), None)
        self.results[key_id(done)] = rows
        self.progress.on_key(done, rows)
        if self.on_keys_rows is not None:
            self.on_keys_rows(rows, not self.pending)  # then every key has been handed out


def wanted_target(pending: Sequence[Key], serving: Sequence[str], cost: Callable[[Key], float]) -> str:
    """The target a new worker should take, given the targets of the workers ``serving`` already: the one
    with the most pending compile seconds per worker on it (a target with none pending is never chosen
    while another has some)."""
    load: dict[str, float] = {}
    for k in pending:
        load[k.target] = load.get(k.target, 0.0) + max(cost(k), 1e-3)
    if not load:
        return serving[0] if serving else DEFAULT_LIST_TARGET
    workers = Counter(serving)
    return max(load, key=lambda t: load[t] / (1 + workers.get(t, 0)))
