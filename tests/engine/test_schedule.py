"""The one scheduler (engine/schedule.py) driven by an in-memory transport: no process, no actor, a clock of
its own. Each test plays what the workers say (the protocol's messages, or a Ray call's end and its rows)
and asserts what the schedule sends, starts, ends and finishes.

The same policies run through the real transports in tests/engine/test_transport_local.py (local processes
speaking the protocol) and tests/engine/test_ray.py (a loopback Ray cluster)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from regsurvey.engine.protocol import Failed, KeyCaptured, KeyCompiled, KeyFinished, KeyWaiting
from regsurvey.engine.schedule import Policy, Schedule, wanted_target
from regsurvey.engine.transport_local import POLICY as LOCAL
from regsurvey.engine.transport_ray import HELP_COPIES, HELP_MIN_S
from regsurvey.engine.transport_ray import POLICY as RAY
from regsurvey.model.keys import Key
from regsurvey.model.progress import Progress
from regsurvey.model.results import Row


@dataclass(eq=False)
class Worker:
    target: str
    name: str
    sent: list[str] = field(default_factory=list)  # the ids of the keys sent, in order
    ended: str = ""  # "idle" or "lost" once the schedule ended it


class Transport:
    """Workers that are names: what the schedule asks is written down."""

    def __init__(self, room: bool = True):
        self.workers: list[Worker] = []
        self.has_room = room

    def start(self, target: str) -> Worker:
        w = Worker(target, f"w{len(self.workers)}")
        self.workers.append(w)
        return w

    def send(self, worker: Worker, key: Key, captured: object = None) -> None:
        worker.sent.append(key.id)

    def end(self, worker: Worker, idle: bool) -> None:
        worker.ended = "idle" if idle else "lost"

    def room(self) -> bool:
        return self.has_room


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def key(name: str, target: str = "sm90") -> Key:
    return Key(kind=name.split("/")[0], axes=(), target=target, id=name)


def rows(k: Key, compiled: int = 0, launches: int = 1) -> tuple[Row, ...]:
    """``k``'s rows: launch ``compiled`` compiled by this copy, the others reused (found compiled)."""
    return tuple(Row(key=k.id, kind=k.kind, axes={}, target=k.target, kernel="k", status="ok", launch=i,
                     triton_hash=f"{k.id}-h{i}", reused=i != compiled, compile_s=1.0 + i) for i in range(launches))


class Run:
    """A schedule over :class:`Transport`, with ``jobs`` workers of ``target`` started before it."""

    def __init__(self, keys: list[Key], policy: Policy = LOCAL, jobs: int = 1, target: str = "sm90",
                 timeout: float = 60.0, room: bool = True):
        self.transport = Transport(room)
        self.clock = Clock()
        self.finished: list[str] = []
        for _ in range(jobs):
            self.transport.start(target)
        self.schedule = Schedule(keys, self.transport, policy=policy, timeout=timeout, clock=self.clock,
                                 progress=Progress(on_key=lambda k, _: self.finished.append(k.id)),
                                 workers=list(self.transport.workers),
                                 lost_before="an actor lost before" if policy is RAY else "a worker that failed before")

    def worker(self, i: int) -> Worker:
        return self.transport.workers[i]

    def finish(self, w: Worker, k: Key, compiled: int = 0, launches: int = 1) -> None:
        """``w`` compiled ``k`` and finished it."""
        self.schedule.on_answer(w, KeyCompiled(k))
        self.schedule.on_answer(w, KeyFinished(k, rows(k, compiled, launches)))


def test_keys_go_in_the_given_order_one_compile_at_a_time() -> None:
    a, b, c = key("a/1"), key("b/1"), key("c/1")
    run = Run([a, b, c])
    w = run.worker(0)
    assert not run.schedule.dispatch()
    assert w.sent == ["a/1"]  # the next only once the first has compiled
    run.schedule.dispatch()
    assert w.sent == ["a/1"]
    run.schedule.on_answer(w, KeyCompiled(a))
    run.schedule.dispatch()
    assert w.sent == ["a/1", "b/1"]  # a finishes while b compiles
    run.schedule.on_answer(w, KeyCompiled(b))
    run.schedule.dispatch()
    assert w.sent == ["a/1", "b/1"]  # two keys held at most
    run.schedule.on_answer(w, KeyFinished(a, rows(a)))
    run.schedule.dispatch()
    assert w.sent == ["a/1", "b/1", "c/1"]
    run.schedule.on_answer(w, KeyFinished(b, rows(b)))
    run.finish(w, c)
    assert run.schedule.done and run.finished == ["a/1", "b/1", "c/1"]
    assert run.schedule.results[("b/1", "sm90")] == list(rows(b))


def test_idle_helpers_share_a_key_of_several_launches() -> None:
    """At -j 2 with one key of two launches: once it is captured, the idle worker takes a copy; the key's rows
    are the first copy's, the launch the helper compiled taken from the helper; the key finishes once."""
    k = key("moe/1")
    run = Run([k], jobs=2)
    first, helper = run.worker(0), run.worker(1)
    run.schedule.dispatch()
    assert (first.sent, helper.sent) == (["moe/1"], [])  # its launches are not known yet
    run.schedule.on_answer(first, KeyCaptured(k, 2))
    run.schedule.dispatch()
    assert helper.sent == ["moe/1"]
    run.finish(helper, k, compiled=1, launches=2)
    assert run.finished == []  # a copy is still out
    run.finish(first, k, compiled=0, launches=2)
    assert run.finished == ["moe/1"]
    assert [(r.launch, r.reused, r.compile_s) for r in run.schedule.results[("moe/1", "sm90")]] == [
        (0, False, 1.0), (1, False, 2.0)]
    assert (run.schedule.copies.keys_shared, run.schedule.copies.launches_shared) == (1, 1)


def test_no_copy_is_helped_with_when_force_takes_no_build_locks() -> None:
    k = key("moe/1")
    run = Run([k], jobs=2)
    run.schedule.reuse = False
    run.schedule.dispatch()
    run.schedule.on_answer(run.worker(0), KeyCaptured(k, 2))
    run.schedule.dispatch()
    assert run.worker(1).sent == []


def test_a_worker_helps_with_a_key_once_and_none_once_a_copy_compiled_it_all() -> None:
    """The livelock fixed in c7b0dc3: a helper whose copy ended was sent the same key again at once, over and
    over while the key's slowest launch compiled elsewhere (each copy running the kind body again). Now each
    worker takes a copy once, and none is sent once any copy has compiled every launch."""
    k = key("tail/1")
    run = Run([k], jobs=4)
    run.schedule.dispatch()
    run.schedule.on_answer(run.worker(0), KeyCaptured(k, 6))
    run.schedule.dispatch()
    assert [w.sent for w in run.transport.workers] == [["tail/1"]] * 4
    helper = run.worker(1)
    run.schedule.on_answer(helper, Failed("the kind body raised", k))  # its copy ended early, compiling nothing
    for _ in range(3):
        run.schedule.dispatch()
    assert helper.sent == ["tail/1"]  # not again, though launches are left for a copy
    run.schedule.start_one()  # a worker that never took a copy does
    run.schedule.dispatch()
    assert run.worker(4).sent == ["tail/1"]
    run.schedule.on_answer(run.worker(2), KeyCompiled(k))  # a copy has every launch compiled
    run.schedule.start_one()
    run.schedule.dispatch()
    assert run.worker(5).sent == []  # nothing is left to take
    for i in (2, 3, 4, 0):
        run.finish(run.worker(i), k, compiled=i, launches=6)
    assert run.finished == ["tail/1"] and run.schedule.done


def test_a_lost_workers_running_key_fails_and_its_finishing_key_goes_again() -> None:
    a, b, c = key("a/1"), key("b/1"), key("c/1")
    run = Run([a, b, c])
    w = run.worker(0)
    run.schedule.dispatch()
    run.schedule.on_answer(w, KeyCompiled(a))
    run.schedule.dispatch()  # b compiles while a finishes
    run.schedule.on_lost(w, "worker process died while surveying the key (exit code 7)")
    assert w.ended == "lost"
    [replacement] = run.transport.workers[1:]  # started at once, keys remain
    assert run.schedule.results[("b/1", "sm90")][0].error == "worker process died while surveying the key (exit code 7)"
    assert run.schedule.results[("b/1", "sm90")][0].transient
    run.schedule.dispatch()
    assert replacement.sent == ["a/1"]  # sent again, first
    run.schedule.on_lost(replacement, "worker process died while surveying the key (exit code 7)")
    assert run.schedule.results[("a/1", "sm90")][0].error == "worker process died while surveying the key (exit code 7)"
    third = run.transport.workers[2]
    run.schedule.dispatch()
    run.finish(third, c)
    assert run.schedule.done and sorted(run.finished) == ["a/1", "b/1", "c/1"]


def test_a_key_in_flight_on_two_workers_lost_is_an_error() -> None:
    a, b, c = key("a/1"), key("b/1"), key("c/1")
    run = Run([a, b, c])
    w = run.worker(0)
    run.schedule.dispatch()
    run.schedule.on_answer(w, KeyCompiled(a))
    run.schedule.dispatch()
    run.schedule.on_lost(w, "died")  # b fails, a goes again
    second = run.transport.workers[1]
    run.schedule.dispatch()
    run.schedule.on_answer(second, KeyCompiled(a))
    run.schedule.dispatch()
    run.schedule.on_lost(second, "died again")  # c fails; a was lost before
    assert run.schedule.results[("a/1", "sm90")][0].error == (
        "died again; it was in flight on a worker that failed before")
    assert run.schedule.results[("c/1", "sm90")][0].error == "died again"


def test_a_worker_whose_server_ended_loses_no_key() -> None:
    a, b = key("a/1"), key("b/1")
    run = Run([a, b])
    w = run.worker(0)
    run.schedule.dispatch()
    run.schedule.on_answer(w, KeyCompiled(a))
    run.schedule.dispatch()
    run.schedule.on_lost(w, "the worker server ended mid-survey", blame=False)
    assert run.schedule.results == {}
    second = run.transport.workers[1]
    run.schedule.dispatch()
    assert second.sent == ["a/1"]  # b next: both go again


def test_a_copy_lost_while_another_carries_the_key_costs_it_nothing() -> None:
    k = key("moe/1")
    run = Run([k], jobs=2)
    run.schedule.dispatch()
    run.schedule.on_answer(run.worker(0), KeyCaptured(k, 2))
    run.schedule.dispatch()
    run.schedule.on_lost(run.worker(1), "died")
    assert run.finished == [] and len(run.transport.workers) == 2  # no key left to start a worker for
    run.finish(run.worker(0), k, launches=2)
    assert [r.ok for r in run.schedule.results[("moe/1", "sm90")]] == [True, True]


def test_a_key_past_the_timeout_fails_saying_what_it_waited_for() -> None:
    a, b = key("a/1"), key("b/1")
    run = Run([a, b], timeout=5)
    w = run.worker(0)
    run.schedule.dispatch()
    assert run.schedule.deadline(w) == 105.0
    run.schedule.on_answer(w, KeyWaiting(a, "process 1234"))
    run.clock.now = 105.0
    run.schedule.on_timeout(w)
    assert run.schedule.results[("a/1", "sm90")][0].error == (
        "timed out after 5 s (--timeout) while waiting for the build lock of one of its kernels, held by process 1234 "
        "(compiling that kernel for another key, or another survey on this store)")
    assert w.ended == "lost"
    run.schedule.dispatch()
    assert run.transport.workers[1].sent == ["b/1"]


def test_a_worker_only_finishing_must_say_something_within_the_timeout() -> None:
    a = key("a/1")
    run = Run([a], timeout=5)
    w = run.worker(0)
    run.schedule.dispatch()
    run.clock.now = 103.0
    run.schedule.on_answer(w, KeyCompiled(a))
    assert run.schedule.deadline(w) == 108.0  # from its last word, not from the key's start
    run.clock.now = 108.0
    run.schedule.on_timeout(w)
    assert run.schedule.results[("a/1", "sm90")][0].error == "timed out after 5 s (--timeout)"


def test_a_failed_key_is_an_error_row() -> None:
    a = key("a/1")
    run = Run([a])
    run.schedule.dispatch()
    run.schedule.on_answer(run.worker(0), Failed("keys file keys/a.py:3 raised", a, transient=True))
    [row] = run.schedule.results[("a/1", "sm90")]
    assert (row.ok, row.error, row.transient) == (False, "keys file keys/a.py:3 raised", True)


def test_a_worker_taking_its_targets_last_key_gets_its_successor_at_once() -> None:
    """One sm90 worker, one sm90 key and three gfx950 keys: as it takes its target's last key, a gfx950
    worker starts (and imports the checkout) while that key compiles; when the sm90 worker is then idle it is
    ended, and no second successor is started in its place."""
    slow = key("slow/1")
    oks = [key(f"ok/{i}", "gfx950") for i in (1, 2, 3)]
    run = Run([slow, *oks])
    w = run.worker(0)
    assert run.schedule.dispatch()  # a worker started: dispatch again before waiting
    assert w.sent == ["slow/1"] and [x.target for x in run.transport.workers] == ["sm90", "gfx950"]
    run.schedule.dispatch()
    successor = run.worker(1)
    assert successor.sent == ["ok/1"]
    run.finish(w, slow)
    assert run.schedule.dispatch() is True  # the sm90 worker, with nothing of its target left, is ended
    assert w.ended == "idle" and len(run.transport.workers) == 2


def test_an_idle_worker_of_a_target_without_keys_is_replaced() -> None:
    keys = [key("a/1", "gfx950"), key("a/2", "gfx950")]
    run = Run(keys, jobs=2, target="sm90")
    assert run.schedule.dispatch()
    assert [w.ended for w in run.transport.workers[:2]] == ["idle", "idle"]
    assert [w.target for w in run.transport.workers[2:]] == ["gfx950", "gfx950"]
    run.schedule.dispatch()
    assert [w.sent for w in run.transport.workers[2:]] == [["a/1"], ["a/2"]]


def test_every_worker_lost_starts_one() -> None:
    a, b = key("a/1"), key("b/1")
    run = Run([a, b], room=False)  # a cluster with no CPU free: the lost worker is not replaced at once
    run.schedule.dispatch()
    run.schedule.on_lost(run.worker(0), "lost", blame=False)
    assert len(run.transport.workers) == 1
    assert run.schedule.dispatch()
    assert run.worker(1).target == "sm90"


def test_ray_calls_queue_behind_the_running_one() -> None:
    a, b, c = key("a/1"), key("b/1"), key("c/1")
    run = Run([a, b, c], policy=RAY)
    w = run.worker(0)
    run.schedule.dispatch()
    assert w.sent == ["a/1", "b/1"]  # the second queued behind the first
    run.clock.now = 130.0
    run.schedule.on_left(w, a)  # answered: b begins now; a's rows come once stored
    assert run.schedule.since(w) == 130.0 and run.finished == []
    run.schedule.on_rows(a, list(rows(a)))
    assert run.finished == ["a/1"]
    run.schedule.dispatch()
    assert w.sent == ["a/1", "b/1", "c/1"]


def test_ray_timeout_fails_the_running_call_and_sends_the_queued_one_again_as_new() -> None:
    a, b, c = key("a/1"), key("b/1"), key("c/1")
    run = Run([a, b, c], policy=RAY, timeout=12)
    w = run.worker(0)
    run.schedule.dispatch()
    run.clock.now = 112.0
    run.schedule.on_timeout(w)
    assert run.schedule.results[("a/1", "sm90")][0].error == "timed out after 12 s (--timeout)"
    assert run.schedule.resent == set()  # b never began: it is not counted as sent
    run.schedule.dispatch()
    assert run.worker(1).sent == ["b/1", "c/1"]


def test_a_ray_actor_lost_sends_every_call_again_once() -> None:
    a, b, c = key("a/1"), key("b/1"), key("c/1")
    run = Run([a, b, c], policy=RAY, jobs=1)
    w = run.worker(0)
    run.schedule.dispatch()
    run.schedule.on_lost(w, "Ray actor lost (ActorDiedError: node gone)", blame=False)
    assert run.schedule.resent == {("a/1", "sm90"), ("b/1", "sm90")}
    run.schedule.dispatch()
    second = run.worker(1)
    assert second.sent == ["b/1", "a/1"]  # each sent again in the order held: the last next
    run.schedule.on_lost(second, "Ray actor lost again", blame=False)
    assert run.schedule.results[("a/1", "sm90")][0].error == (
        "Ray actor lost again; it was in flight on an actor lost before")


@pytest.mark.parametrize("running_s", [HELP_MIN_S - 0.5, HELP_MIN_S])
def test_idle_ray_actors_help_with_a_key_running_long(running_s: float) -> None:
    k = key("sweep/1")
    run = Run([k], policy=RAY, jobs=HELP_COPIES + 2)
    run.schedule.dispatch()
    run.clock.now += running_s
    run.schedule.dispatch()
    helping = [w for w in run.transport.workers[1:] if w.sent]
    if running_s < HELP_MIN_S:
        assert helping == []
    else:
        assert len(helping) == HELP_COPIES - 1  # copies at most, the first among them


def test_wanted_target_is_the_one_with_most_work_per_worker() -> None:
    pending = [key("a/1", "sm90"), key("b/1", "gfx950"), key("b/2", "gfx950")]
    cost = {"a/1": 10.0, "b/1": 4.0, "b/2": 4.0}
    assert wanted_target(pending, [], lambda k: cost[k.id]) == "sm90"
    assert wanted_target(pending, ["sm90"], lambda k: cost[k.id]) == "gfx950"
    assert wanted_target([], ["gfx942"], lambda k: 1.0) == "gfx942"
