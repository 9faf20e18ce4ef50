"""The scheduler against workers that die or fall silent with keys in flight (fake workers), through its
public seam (``survey.run_keys``).

A worker says KeyCompiled once a key is compiled and gets the next one while it still reads and stores
the first: a worker lost then takes the key it was compiling with it, and the keys it was finishing
are sent again, once.
"""

from __future__ import annotations

from pathlib import Path

from regsurvey.engine.survey import SurveyOptions, run_keys
from regsurvey.model.keys import Key
from regsurvey.model.results import Row
from regsurvey.revisions.checkout import Checkout

from .. import survey_fakes


def run(tmp_path: Path, kinds: list[str], timeout: float = 60.0) -> dict[str, Row]:
    checkout = Checkout(root=tmp_path, repo=tmp_path, commit=None, label="fake", dirty=False)
    keys = [Key(kind=kind, axes=(("n", i),), target="sm90", id=f"{kind}/n{i}") for i, kind in enumerate(kinds)]
    results = run_keys(keys, checkout, tmp_path / "objects", SurveyOptions(jobs=1, timeout=timeout),
                       worker_main=survey_fakes.serve)
    assert sorted(results) == sorted((k.id, k.target) for k in keys)  # every key has its rows
    return {key_id: rows[0] for (key_id, _), rows in results.items()}


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
