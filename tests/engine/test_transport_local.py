"""The one scheduler through the local transport (engine/transport_local.py) against worker processes that
die or fall silent with keys in flight (fake workers, tests/survey_fakes.py), through its public seam
(``transport_local.run_keys``).

A worker says KeyCompiled once a key is compiled and gets the next one while it still reads and stores
the first: a worker lost then takes the key it was compiling with it, and the keys it was finishing
are sent again, once.
"""

from __future__ import annotations

from pathlib import Path

from regsurvey.engine.transport_local import run_keys
from regsurvey.model.keys import Key
from regsurvey.model.options import SurveyOptions
from regsurvey.model.results import Row
from regsurvey.repo.checkout import Checkout

from .. import survey_fakes


def run(tmp_path: Path, kinds: list[str], timeout: float = 60.0, jobs: int = 1) -> dict[str, Row]:
    return {key_id: rows[0] for key_id, rows in run_all(tmp_path, kinds, timeout, jobs).items()}


def run_all(tmp_path: Path, kinds: list[str], timeout: float = 60.0, jobs: int = 1) -> dict[str, list[Row]]:
    checkout = Checkout(root=tmp_path, repo=tmp_path, commit=None, label="fake", dirty=False)
    keys = [Key(kind=kind, axes=(("n", i),), target="sm90", id=f"{kind}/n{i}") for i, kind in enumerate(kinds)]
    results = run_keys(keys, checkout, tmp_path / "objects", SurveyOptions(jobs=jobs, timeout=timeout),
                       worker_main=survey_fakes.serve)
    assert sorted(results) == sorted((k.id, k.target) for k in keys)  # every key has its rows
    return {key_id: rows for (key_id, _), rows in results.items()}


def test_keys_finishing_on_a_worker_that_dies_are_sent_again(tmp_path: Path) -> None:
    rows = run(tmp_path, ["finish_once", "dies", "ok"])
    assert rows["finish_once/n0"].ok  # it was being finished when its worker died: done again
    assert not rows["dies/n1"].ok
    assert rows["dies/n1"].error == "worker process died while surveying the key (exit code 7)"
    assert rows["dies/n1"].transient and not rows["ok/n2"].transient  # a lost worker is no verdict on a kernel
    assert rows["ok/n2"].ok


def test_a_key_in_flight_on_two_workers_that_die_is_an_error(tmp_path: Path) -> None:
    rows = run(tmp_path, ["never_finishes", "dies", "dies"])
    assert rows["dies/n1"].error == rows["dies/n2"].error == "worker process died while surveying the key (exit code 7)"
    assert rows["never_finishes/n0"].error == (
        "worker process died while surveying the key (exit code 7); it was in flight on a worker that failed before")


def test_a_key_that_never_finishes_times_out(tmp_path: Path) -> None:
    rows = run(tmp_path, ["ok", "never_finishes"], timeout=3)
    assert rows["ok/n0"].ok
    assert rows["never_finishes/n1"].error == "timed out after 3 s (--timeout)"
    assert rows["never_finishes/n1"].transient


def test_an_idle_worker_helps_with_a_key_of_several_launches(tmp_path: Path) -> None:
    """At -j 2 with one key of two launches, the second worker takes a copy of it; the key's rows are
    the first copy's, with the launch the helper compiled taken from the helper (none reused)."""
    rows = run_all(tmp_path, ["shared"], jobs=2)["shared/n0"]
    assert [(r.launch, r.reused, r.compile_s) for r in rows] == [(0, False, 1.0), (1, False, 2.0)]


def test_a_worker_helps_with_a_key_once(tmp_path: Path) -> None:
    """At -j 4 with one key of six launches whose first copy takes 1.5 s and whose helpers end at once: each
    idle worker takes one copy, and is not sent the key again when its copy ends (it would run the kind body
    again and again, for nothing, until the first copy finished: a livelock at -j 16, seen on fla)."""
    rows = run_all(tmp_path, ["long_tail"], jobs=4)["long_tail/n0"]
    assert [(r.launch, r.reused) for r in rows] == [(0, False), (1, False), *((i, True) for i in range(2, 6))]
    carriers = (tmp_path / "objects" / "long_tail-copies").read_text().split()
    assert len(carriers) == 4 and len(set(carriers)) == 4


def test_a_helper_lost_costs_the_key_nothing(tmp_path: Path) -> None:
    """A copy that dies while another carries the key: the key finishes from the one left, no error."""
    rows = run_all(tmp_path, ["helper_dies"], jobs=2)["helper_dies/n0"]
    assert [(r.launch, r.ok, r.reused) for r in rows] == [(0, True, False), (1, True, True)]


def test_a_worker_taking_its_targets_last_key_gets_its_successor_at_once(tmp_path: Path) -> None:
    """At -j 1, the worker (sm90) takes its target's only key, 3 s long, while gfx950 keys wait: a gfx950
    worker starts at once rather than after that key, so the gfx950 keys finish first."""
    from regsurvey.model.progress import Progress

    checkout = Checkout(root=tmp_path, repo=tmp_path, commit=None, label="fake", dirty=False)
    keys = [Key(kind="slow", axes=(("n", 0),), target="sm90", id="slow/n0"),
            *(Key(kind="ok", axes=(("n", i),), target="gfx950", id=f"ok/n{i}") for i in (1, 2, 3))]
    order: list[str] = []
    results = run_keys(keys, checkout, tmp_path / "objects", SurveyOptions(jobs=1, timeout=60),
                       worker_main=survey_fakes.serve, progress=Progress(on_key=lambda key, _: order.append(key.id)))
    assert all(rows[0].ok for rows in results.values())
    assert order == ["ok/n1", "ok/n2", "ok/n3", "slow/n0"]
