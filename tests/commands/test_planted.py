"""What a writer of the store directory can plant, through the commands (issue 31, items 3, 4 and 7): a
FIFO or a link to /dev/zero in any file's place, an object path out of the store, a text swapped from
another object, a pressure naming a file outside the checkout, a failure record dated in the future, a
stored row on another target or with a negative figure, ``costs.json`` holding NaN. Each is refused or
ignored (a warning, then surveyed or computed again), never a hang or a traceback, and nothing is read or
written outside the store. On the tiny project's real sm90 survey (tests/commands/conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from regsurvey.store.inflight import InFlight
from regsurvey.store.objectstore import ObjectStore

from ..conftest import reseal
from .conftest import Tiny
from .runner import invoke

VARYING = ("compile_s", "stage_s", "reused")  # what differs between a survey and its reuse (timings)


@pytest.fixture
def store(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the tiny project's store, holding its survey (each test damages its own)."""
    copy = tmp_path / "store"
    shutil.copytree(tiny.store, copy, symlinks=True)
    return copy


def args(tiny: Tiny, store: Path) -> tuple[str, ...]:
    return ("-C", str(tiny.repo), "--store", str(store), "-q")


def rows(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.stderr
    return [{k: v for k, v in r.items() if k not in VARYING} for r in json.loads(result.stdout)["rows"]]


def lines_are_ours(stderr: str) -> None:
    """No traceback: every line said is one of regsurvey's own."""
    assert "Traceback" not in stderr, stderr
    assert all(line.startswith("regsurvey: ") for line in stderr.splitlines() if line.strip()), stderr


@contextlib.contextmanager
def no_hang(seconds: int = 600) -> Iterator[None]:
    """A command that blocks for ever fails the test instead of hanging it (a limit, not a timing)."""
    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def edit_survey(store: Path, sha: str, edit: Any) -> None:
    """Edit the stored sm90 survey as a writer of the store can: the checksum beside it made to match."""
    path = store / "surveys" / sha / "sm90.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_bytes(json.dumps(data).encode())
    reseal(path)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_a_device_in_every_files_place_neither_hangs_nor_breaks_run_and_lint(
        tiny: Tiny, tiny_survey: dict[str, Any], store: Path, kind: str) -> None:
    """Every file of the store (survey, checksum, index, result-cache entry, object, texts, build lock,
    costs.json) replaced by a FIFO (``run`` and ``lint`` waited for a writer for ever) or by a link to
    /dev/zero (read until memory ran out): each is reported or ignored, and the survey made again equals
    the clean one."""
    replaced = [p for p in store.rglob("*") if p.is_file() and p.name != ".gitignore"]
    assert {p.suffix for p in replaced} >= {".json", ".sha256", ".cubin", ".gz", ".lock"}
    for path in replaced:
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    with no_hang():
        again = invoke("run", *args(tiny, store), "--format", "json")
        linted = invoke("lint", *args(tiny, store))
    lines_are_ours(again.stderr)
    assert rows(again) == [{k: v for k, v in r.items() if k not in VARYING} for r in tiny_survey["data"]["rows"]]
    shown = "a FIFO" if kind == "fifo" else "a character device"
    assert again.stderr.startswith("regsurvey: surveying the working tree again: ")
    assert f"is unreadable (not a regular file ({shown})); recompiling" in again.stderr  # the result-cache entry
    assert linted.exit_code == 0, linted.stderr
    lines_are_ours(linted.stderr)
    assert "1 kernel linted" in linted.stdout


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_an_object_path_out_of_the_store_is_neither_read_nor_written(tiny: Tiny, tiny_survey: dict[str, Any],
                                                                     store: Path, tmp_path: Path, where: str) -> None:
    """A stored row whose ``object.path`` points out of the store, where a copy of its very object lies:
    ``explain`` read it and wrote ``<sha>.pressure.gz`` beside it. Now the path is refused, the commit
    surveyed again, and nothing is written out there."""
    row = tiny_survey["data"]["rows"][0]
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = outside / Path(row["object"]["path"]).name
    shutil.copy(store / row["object"]["path"], planted)
    path = os.path.relpath(planted, store) if where == "relative" else str(planted)

    def point_out(data: dict[str, Any]) -> None:
        data["rows"][0]["object"]["path"] = path

    edit_survey(store, tiny.sha, point_out)
    explained = invoke("explain", "scale/width2", *args(tiny, store), "--format", "json")
    assert explained.exit_code == 0, explained.stderr
    assert explained.stderr.startswith(f"regsurvey: warning: stored object path {path[:80]!r} is not an object "
                                       "of this store; surveying ")
    lines_are_ours(explained.stderr)
    assert sorted(p.name for p in outside.iterdir()) == [planted.name]
    (build,) = json.loads(explained.stdout)["builds"]
    assert build["kernel"] == "scale_rows"


def test_a_pressure_naming_a_file_outside_the_checkout_shows_none_of_its_lines(
        tiny: Tiny, tiny_survey: dict[str, Any], store: Path, tmp_path: Path) -> None:
    """A kept pressure rewritten (as a writer of the store can, header and all) to name a file outside the
    checkout on the kernel's lines: ``explain`` embedded that file's lines. Now it names the path and
    shows no text of it."""
    secret = tmp_path / "secret.py"
    secret.write_text("".join(f"TOKEN_{n} = 'glpat-planted-{n}'\n" for n in range(1, 200)))
    assert invoke("explain", "scale/width2", *args(tiny, store)).exit_code == 0  # the pressure, kept
    rel = tiny_survey["data"]["rows"][0]["object"]["path"]
    objects = ObjectStore(store / "objects")
    kept = objects.text(rel, "pressure") or ""
    forged, count = re.subn(r'"[^"]*toykernels/ops\.py"', json.dumps(str(secret)), kept)
    assert count > 0
    objects.put_text(rel, "pressure", forged)
    for fmt in ("text", "markdown", "html", "json"):
        out = invoke("explain", "scale/width2", *args(tiny, store), "--format", fmt, "-o", tmp_path / f"e.{fmt}")
        assert out.exit_code == 0, out.stderr
        report = (tmp_path / f"e.{fmt}").read_text()
        assert "glpat-planted" not in report and "TOKEN_" not in report
    assert str(secret) in (tmp_path / "e.text").read_text()  # named, as the pressure names it


def test_a_pressure_swapped_from_another_object_is_computed_again(tiny: Tiny, tiny_survey: dict[str, Any],
                                                                  store: Path) -> None:
    """Another object's kept pressure copied over this one's: ``explain`` described another kernel. Each
    text names its object, so the copy is refused and the pressure computed again from the object."""
    clean = invoke("explain", "scale/width2", *args(tiny, store), "--format", "json")
    assert clean.exit_code == 0, clean.stderr
    rel = tiny_survey["data"]["rows"][0]["object"]["path"]
    objects = ObjectStore(store / "objects")
    other_sha, other_rel = objects.put(b"another kernel's object", "cubin")
    pressure = json.loads(objects.text(rel, "pressure") or "")
    objects.put_text(other_rel, "pressure", json.dumps({**pressure, "kernel": "another_kernel"}))
    mine = store / rel
    (mine.parent / f"{mine.stem}.pressure.gz").write_bytes(
        (store / other_rel).with_name(f"{other_sha}.pressure.gz").read_bytes())
    again = invoke("explain", "scale/width2", *args(tiny, store), "--format", "json")
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(clean.stdout)
    assert json.loads(objects.text(rel, "pressure") or "")["kernel"] == "scale_rows"  # kept again, its own


def test_a_failure_record_dated_in_the_future_does_not_fail_the_build(tiny: Tiny, tiny_survey: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    """A ``.failed`` record planted in a fresh store with a time ahead failed ``scale/width2`` without
    compiling it, and the failure was stored and reused after the record was gone."""
    built = tiny_survey["data"]["rows"][0]
    store = tmp_path / "fresh"
    record = InFlight(store / "objects")._base(built["triton_hash"]).with_suffix(".failed")
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"error": "CompilationError: planted"}))
    ahead = time.time() + 3600
    os.utime(record, (ahead, ahead))
    surveyed = invoke("run", *args(tiny, store), "--format", "json")
    assert rows(surveyed) == [{k: v for k, v in r.items() if k not in VARYING} for r in tiny_survey["data"]["rows"]]
    assert not record.exists()


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda d: d["rows"][1].update(target="gfx950"), "row idle/width2 is on target 'gfx950', not one of the "
                                                     "survey's (sm90)"),
    (lambda d: d["rows"][1].update(target="gfx1234"), "row idle/width2 is on target 'gfx1234', not one of the "
                                                      "survey's (sm90)"),
    (lambda d: d["rows"][0]["resources"].update(regs=-30), "row scale/width2 (sm90): figure regs is -30, not a "
                                                           "whole number of zero or more"),
], ids=["other-target", "unknown-target", "negative-figure"])
def test_a_stored_row_no_survey_writes_is_reported_and_surveyed_again(tiny: Tiny, tiny_survey: dict[str, Any],
                                                                     store: Path, edit: Any, problem: str) -> None:
    """A row on a target its survey does not list made ``run``'s table raise (UnknownTargetError's
    traceback), or showed an AMD row among NVIDIA's; a negative figure was believed."""
    edit_survey(store, tiny.sha, edit)
    again = invoke("run", *args(tiny, store), "--format", "json")
    lines_are_ours(again.stderr)
    assert f"is unusable: malformed survey (ValueError: {problem})" in again.stderr
    assert rows(again) == [{k: v for k, v in r.items() if k not in VARYING} for r in tiny_survey["data"]["rows"]]


@pytest.mark.parametrize("costs", ['{"sm90:scale/width2": NaN, "sm90:idle/width2": Infinity}',
                                   '{"sm90:scale/width2": -Infinity}', '{"sm90:scale/width2": 1e308, '
                                                                       '"sm90:idle/width2": 1e308}'])
def test_costs_that_are_no_seconds_only_lose_the_order(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path,
                                                       costs: str) -> None:
    """Python's JSON reads NaN and Infinity: sharing the workers out by them raised (int(nan))."""
    store = tmp_path / "fresh"  # (nothing stored: the survey is made, and schedules by the costs)
    store.mkdir()
    (store / "costs.json").write_text(costs)
    again = invoke("run", *args(tiny, store), "-j", "3", "--format", "json")
    lines_are_ours(again.stderr)
    assert rows(again) == [{k: v for k, v in r.items() if k not in VARYING} for r in tiny_survey["data"]["rows"]]
    assert all(0 <= v < 1e7 for v in json.loads((store / "costs.json").read_text()).values())
