"""Fault injection (issue #12's campaign): the processes of a survey killed mid-survey, a disk that
fills during the store's writes, and surveys and a check running at once on one store. Whatever
happens: nothing computed is lost, nothing damaged is kept (a later run is identical to a clean one),
and each fault is one line, never a traceback.

The worker killed mid-key and the finishing process killed mid-finish are tested where those are
(tests/engine/test_server.py, tests/engine/test_worker.py); here the faults that cross processes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ..conftest import commit_all, privileged_or_skip

GATED_KEYS = '''
import os
import time
from pathlib import Path

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[2, 8], labels={"width": "w"})
GATE = Path(os.environ["FAULT_GATE"])


@matrix.kind(axes=["width"])
def gated(width):
    # Says which worker runs it, then waits for the test's go (so the test can strike mid-key).
    (GATE / f"started-{width}-{os.getpid()}").touch()
    while not (GATE / "go").exists():
        time.sleep(0.05)
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5, stop=False)
'''

STRIP = ("compile_s", "stage_s", "reused")


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def rows_of(stdout: str) -> list[dict]:
    """A JSON survey's rows without what differs between two runs of the same survey."""
    return [{k: v for k, v in r.items() if k not in STRIP} for r in json.loads(stdout)["rows"]]


def one_line_each(stderr: str) -> None:
    """Every line regsurvey wrote is its own ("regsurvey: ..."): no traceback, no stray output."""
    assert "Traceback" not in stderr, stderr
    assert all(line.startswith("regsurvey: ") for line in stderr.splitlines() if line.strip()), stderr


def no_leftovers(store: Path) -> None:
    """No temporary file of an atomic write is left, and every stored survey has its checksum."""
    assert not [p for p in store.rglob("*.tmp")], "a half-written file was left in the store"
    for survey in (store / "surveys").rglob("*.json"):
        if survey.name != "index.json":
            assert survey.with_name(survey.name + ".sha256").exists(), survey


# --- the worker server killed mid-survey -------------------------------------------------------------

def _wait_for(condition, what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie has ended (whoever adopted it reaps it)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the server's workers die with it on Linux")
def test_a_server_killed_mid_survey_loses_no_key(toy_repo: Path, tmp_path: Path,
                                                  server_env: dict[str, str]) -> None:
    """The workers the server forked die with it; the survey says so in one line and surveys their keys
    again on workers of its own: every row builds, and none is a stored failure."""
    gate = tmp_path / "gate"
    gate.mkdir()
    (toy_repo / "keys" / "gated.py").write_text(GATED_KEYS)
    env = {**server_env, "FAULT_GATE": str(gate), "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    started = cli("server", "start", cwd=toy_repo, env=env)
    assert started.returncode == 0, started.stderr
    server_pid = int(started.stdout.split("pid ")[1].split(",")[0])
    survey = subprocess.Popen([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--kind", "gated",
                               "-j", "2", "--store", str(tmp_path / "store")], cwd=toy_repo, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(list(gate.glob("started-*"))) == 2, "both keys to start on the server's workers")
        first_workers = [int(p.name.rsplit("-", 1)[1]) for p in gate.glob("started-*")]
        os.kill(server_pid, signal.SIGKILL)
        _wait_for(lambda: all(_gone(pid) for pid in first_workers), "the server's workers to end with it", 30)
        (gate / "go").touch()
        out, err = survey.communicate(timeout=600)
    finally:
        survey.kill()
    assert survey.returncode == 0, err
    one_line_each(err)
    assert "regsurvey: warning: the worker server ended mid-survey; its keys are surveyed again" in err
    data = json.loads(out)
    assert [(r["key"], r["status"]) for r in data["rows"]] == [("gated/w2", "ok"), ("gated/w8", "ok")]
    assert data["timing"]["workers_from_server"] == 0  # those lost answered nothing
    assert len(list(gate.glob("started-*"))) == 4  # each key began again on a worker of the survey's own
    no_leftovers(tmp_path / "store")


# --- a full disk --------------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[callable]:
    """Mount a tmpfs of the given size (KiB) at a fresh directory (root only; skipped elsewhere)."""
    mounted: list[Path] = []

    def mount(kib: int) -> Path:
        point = tmp_path / f"disk{len(mounted)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            privileged_or_skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
        mounted.append(point)
        return point

    if os.geteuid() != 0 or shutil.which("mount") is None:
        privileged_or_skip("mounting a small tmpfs needs root")
    try:
        yield mount
    finally:
        for point in mounted:
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


# Sizes that fill the disk at different points of the toy survey's writes (objects, result entries, the
# survey itself) as stored by this toolchain: 4 KiB holds nothing, 40 and 120 some of the objects, 180 all
# but the survey. The default run takes two (some objects kept, then every one but the survey); -m slow the
# other two.
DISK_KIB = (40, 180)
DISK_KIB_MORE = (4, 120)


@pytest.mark.parametrize("sizes", [DISK_KIB, pytest.param(DISK_KIB_MORE, marks=pytest.mark.slow)])
def test_a_disk_that_fills_keeps_nothing_damaged(toy_repo: Path, tmp_path: Path, small_disk,
                                                 sizes: tuple[int, ...]) -> None:
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    args = ("run", "-q", "--format", "json", "--target", "gfx950,sm90", "-j", "2")
    clean = cli(*args, "--store", str(tmp_path / "clean"), cwd=toy_repo, env=env)
    assert clean.returncode == 0, clean.stderr
    hit_rows = hit_survey = False
    for kib in sizes:
        disk = small_disk(kib)
        full = cli(*args, "--store", str(disk / "store"), cwd=toy_repo, env=env)
        # The survey is shown, whole: each key built, or an error row saying what could not be kept.
        assert full.returncode == 0, full.stderr
        one_line_each(full.stderr)
        rows = json.loads(full.stdout)["rows"]
        assert len(rows) == len(json.loads(clean.stdout)["rows"])
        for row in rows:
            if row["status"] != "ok":
                hit_rows = True
                assert row["transient"] is True, row
                assert row["error"].startswith("not stored: cannot write ") and row["error"].endswith(
                    ": No space left on device"), row["error"]
        if "regsurvey: warning: the survey is not stored (cannot write " in full.stderr:
            hit_survey = True
        no_leftovers(disk / "store")
        # Given room, the same store gives the clean survey: what was kept is sound, what was not is redone.
        roomy = tmp_path / f"roomy{kib}"
        shutil.copytree(disk / "store", roomy, symlinks=True)
        again = cli(*args, "--store", str(roomy), cwd=toy_repo, env=env)
        assert again.returncode == 0, again.stderr
        one_line_each(again.stderr)
        assert rows_of(again.stdout) == rows_of(clean.stdout), kib
    assert hit_rows and hit_survey  # each set of sizes did strike both kinds of write


def test_a_report_or_baseline_that_cannot_be_written_is_one_line(toy_repo: Path, tmp_path: Path,
                                                                  small_disk) -> None:
    """The disk fills while a report is written: one line, exit 2, and no half report (nor a baseline
    cut short) left behind."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    disk = small_disk(8)
    baseline = disk / "regsurvey.baseline.toml"
    baseline.write_text("# kept as it was\n" * 300)  # fills most of the disk
    report = disk / "report.html"
    out = cli("diff", "HEAD", "--target", "sm90", "--kind", "scale", "--format", "html", "-o", str(report),
              "--store", str(tmp_path / "store"), cwd=toy_repo, env=env)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1] == f"regsurvey: error: cannot write {report}: No space left on device"
    one_line_each(out.stderr)
    assert not report.exists() and not list(disk.glob(".*.tmp"))
    assert baseline.read_text() == "# kept as it was\n" * 300


# --- surveys and a check at once on one store ----------------------------------------------------------

def test_two_surveys_and_a_check_at_once_on_one_store(toy_repo: Path, tmp_path: Path) -> None:
    """Two surveys of different commits and a check of both, started together on one store: each gives
    what it gives alone, and the store they leave serves all three again unchanged."""
    ops = toy_repo / "toykernels" / "ops.py"
    ops.write_text(ops.read_text() + "\n# a change\n")
    commit_all(toy_repo, "a change")
    store = tmp_path / "store"
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    common = ("--target", "gfx950,sm90", "-j", "1", "--store", str(store))
    commands = {
        "base": ("run", "-q", "--format", "json", "--commit", "HEAD~1", *common),
        "head": ("run", "-q", "--format", "json", "--commit", "HEAD", *common),
        "check": ("check", "-q", "--base", "HEAD~1", "--head", "HEAD", *common),
    }
    running = {name: subprocess.Popen([sys.executable, "-m", "regsurvey", *argv], cwd=toy_repo, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name, argv in commands.items()}
    done = {name: (p.communicate(timeout=900), p.returncode) for name, p in running.items()}
    for name, ((_, err), code) in done.items():
        assert code == 0, (name, err)
        one_line_each(err)
    no_leftovers(store)
    # Again, one at a time, from what they stored: the same answers, and nothing surveyed again. (The
    # check surveyed the same commits at the same time, in worktrees of its own, and whichever survey was
    # stored last is the one served. Its objects hold that worktree's path in their line tables: other
    # bytes, the same figures.)
    for name in ("base", "head"):
        asked = datetime.now(timezone.utc)
        alone = cli(*commands[name], cwd=toy_repo, env=env)
        assert alone.returncode == 0 and alone.stderr == "", alone.stderr
        assert datetime.fromisoformat(json.loads(alone.stdout)["created"]) < asked  # the stored survey
        assert ([{k: v for k, v in r.items() if k != "object"} for r in rows_of(alone.stdout)]
                == [{k: v for k, v in r.items() if k != "object"} for r in rows_of(done[name][0][0])])
    check = cli(*commands["check"], cwd=toy_repo, env=env)
    assert check.returncode == 0 and check.stdout == done["check"][0][0]
