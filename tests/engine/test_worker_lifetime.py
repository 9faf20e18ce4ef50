"""A survey's processes end with it, however it ends (engine/worker.py, engine/server.py, processes.py).

A survey killed outright (``kill -9``: the OOM killer, a CI runner's hard kill) runs none of its cleanup:
its workers, their finishing processes and its forkserver must still end at once, whether the workers
came from the survey's forkserver or from a worker server (which lives on, by design, but not for
them), and the next run removes the worktree it registered. A worker whose survey has gone ends
quietly; kind bodies' locks leave no "leaked semaphore" warning behind, and a survey leaves no semaphore,
shared memory segment, process or temporary file (its workers' temporary directory is one of its own).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ..conftest import commit_all, git

SLOW_KEYS = '''
import os
import time
from pathlib import Path

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[2, 8])


@matrix.kind(axes=["width"])
def slow(width):
    Path(os.environ["MARKS"], f"{os.getpid()}-{width}").write_text("")  # this worker is in the kind body
    time.sleep(600)
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''

LOCKING_KEYS = '''
import multiprocessing

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[2, 8])
held = []


@matrix.kind(axes=["width"])
def locking(width):
    held.extend(multiprocessing.Lock() for _ in range(20))  # FlagGems makes hundreds as it runs
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''


def running(pid: int) -> bool:
    """Whether ``pid`` runs: not ended, nor a zombie (this container's init reaps nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


def children() -> dict[int, list[int]]:
    """Each running process's children, by pid."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and running(int(entry.name)):
            with_name = (entry / "stat").read_bytes()
            parent = int(with_name[with_name.rfind(b")") + 2:].split()[1])
            tree.setdefault(parent, []).append(int(entry.name))
    return tree


def descendants(roots: list[int]) -> set[int]:
    tree, found, todo = children(), set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += tree.get(pid, [])
    return found


def wait_for(condition, seconds: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def worktrees(repo: Path) -> list[str]:
    return [line[len("worktree "):] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


@pytest.mark.parametrize("start", ["forkserver", "server"])
def test_a_survey_killed_mid_kind_body_leaves_no_process_and_no_worktree(toy_repo: Path, tmp_path: Path,
                                                                       server_env: dict[str, str],
                                                                       start: str) -> None:
    (toy_repo / "keys" / "slow.py").write_text(SLOW_KEYS)
    commit_all(toy_repo, "a kind body that takes ten minutes")
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**server_env, "MARKS": str(marks)} if start == "server" else {**os.environ, "MARKS": str(marks)}
    cli = [sys.executable, "-m", "regsurvey"]
    if start == "server":
        assert subprocess.run([*cli, "server", "start"], env=env, capture_output=True, timeout=300).returncode == 0
    stderr = tmp_path / "stderr"
    with open(stderr, "wb") as err:
        survey = subprocess.Popen([*cli, "run", "--commit", "HEAD", "--kind", "slow", "-j", "2", "--store",
                                   str(tmp_path / "store")], cwd=toy_repo, env=env, stdout=subprocess.DEVNULL,
                                  stderr=err, start_new_session=True)
    try:
        wait_for(lambda: len(list(marks.iterdir())) == 2 or survey.poll() is not None, 300,
                 "the workers did not reach the kind body")
        assert survey.poll() is None, stderr.read_text()
        workers = [int(m.name.split("-")[0]) for m in marks.iterdir()]
        # Its processes: the survey's own (its forkserver, resource tracker, workers, finishing processes)
        # and the workers a server forked for it, with their finishing processes.
        processes = descendants([survey.pid, *workers]) - {survey.pid}
        assert set(workers) <= processes and len(processes) >= 4, processes  # each worker has its finishing process
        assert len(worktrees(toy_repo)) == 2  # the checkout of HEAD the survey reads
    finally:
        os.kill(survey.pid, signal.SIGKILL)
        survey.wait()
    wait_for(lambda: not any(running(p) for p in processes), 10,
             f"processes of the killed survey still run: {sorted(p for p in processes if running(p))}")
    assert "Traceback" not in stderr.read_text()
    if start == "server":  # the server lives on, by design, but none of the survey's workers
        status = subprocess.run([*cli, "server", "status"], env=env, capture_output=True, text=True, timeout=60)
        assert " 0 workers now" in status.stdout, status.stdout

    # The killed survey could not remove its worktree: the next run in the repository does.
    assert len(worktrees(toy_repo)) == 2
    after = subprocess.run([*cli, "run", "--commit", "HEAD", "--kind", "scale", "--target", "gfx950", "-q",
                            "--store", str(tmp_path / "store")], cwd=toy_repo, env=env, capture_output=True,
                           text=True, timeout=600)
    assert after.returncode == 0, after.stderr
    assert worktrees(toy_repo) == [str(toy_repo)]
    assert not list(Path(tempfile.gettempdir()).glob(f"regsurvey-{git(toy_repo, 'rev-parse', 'HEAD')[:10]}-*"))


# A worker whose survey has gone before its answer: the survey asks for a key and ends at once.
SURVEY_GONE = """
import multiprocessing, sys
from regsurvey.engine.protocol import SurveyKey
from regsurvey.engine.worker import serve
from regsurvey.model.keys import Key

if __name__ == "__main__":
    root, objects = sys.argv[1], sys.argv[2]
    ctx = multiprocessing.get_context("forkserver")  # the child holds its end of the pipe alone
    survey, worker = ctx.Pipe()
    process = ctx.Process(target=serve, args=(worker, root, root + "/keys", objects, None, None, "gfx950"))
    process.start()
    worker.close()
    survey.send(SurveyKey(Key(kind="gemm", axes=(("width", 2),), target="gfx950", id="gemm/w2")))
    survey.close()
    process.join()
    print(process.exitcode)
"""


def test_a_worker_whose_survey_has_gone_ends_quietly(toy_repo: Path, tmp_path: Path) -> None:
    """Nothing to answer, and nothing to print on the terminal the survey left (a BrokenPipeError
    traceback, each time a worker of a killed survey finished its kind body)."""
    out = subprocess.run([sys.executable, "-c", SURVEY_GONE, str(toy_repo), str(tmp_path / "objects")],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton")})
    assert (out.stdout.strip(), out.stderr) == ("0", "")


def test_kind_bodies_locks_leave_no_leaked_semaphore_warning(toy_repo: Path, tmp_path: Path) -> None:
    """A worker the survey's forkserver forked made its locks as named semaphores, registered with the
    survey's resource tracker and unlinked by finalizers that a worker killed at the survey's end never
    runs: the tracker unlinked them itself, warning of "leaked semaphore objects" after every survey."""
    (toy_repo / "keys" / "locking.py").write_text(LOCKING_KEYS)
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "--kind", "locking", "-j", "2", "-q",
                          "--format", "json", "--store", str(tmp_path / "store")], cwd=toy_repo,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert [r["status"] for r in json.loads(out.stdout)["rows"]] == ["ok", "ok"]
    assert "semaphore" not in out.stderr, out.stderr


def _own_processes_with(marker: str) -> list[int]:
    """The live processes (this user's) whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:  # another user's, or gone
            continue
    return found


def _shared_memory() -> set[str]:
    """The names in /dev/shm (POSIX semaphores ``sem.*`` and shared memory segments)."""
    return {p.name for p in Path("/dev/shm").iterdir()} if Path("/dev/shm").is_dir() else set()


@pytest.mark.parametrize("server", ["off", "auto"])
def test_a_survey_leaves_nothing_behind(toy_repo: Path, tmp_path: Path, server: str,
                                        server_env: dict[str, str]) -> None:
    """Issue 37: a FlagGems survey at -j 16 once ended with "3936 leaked semaphore objects". After a survey
    whose kind bodies make locks (as FlagGems' do), there is no new semaphore or shared memory segment in
    /dev/shm, no process of the survey's (but the warm worker server, which lives on by design, and its
    workers are gone), and nothing in its temporary directory."""
    (toy_repo / "keys" / "locking.py").write_text(LOCKING_KEYS)
    marker = f"REGSURVEY_LEAK_TEST={os.getpid()}-{server}-{time.monotonic_ns()}"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**server_env, "TMPDIR": str(temporary), "REGSURVEY_SERVER": server,
           marker.split("=")[0]: marker.split("=")[1]}
    before = _shared_memory()
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "--kind", "locking", "-j", "2", "-q",
                          "--format", "json", "--store", str(tmp_path / "store")], cwd=toy_repo,
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    assert [r["status"] for r in json.loads(out.stdout)["rows"]] == ["ok", "ok"]
    try:
        deadline = time.monotonic() + 10  # the finishing processes exit as the survey does, not before it
        while True:
            left = [pid for pid in _own_processes_with(marker) if not _is_server(pid)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert left == [], [_command_line(pid) for pid in left]
        new = sorted(name for name in _shared_memory() - before if name.startswith(("sem.", "psm_", "mp-")))
        assert new == [], new
        assert sorted(p.name for p in temporary.iterdir()) == []
    finally:
        if server == "auto":
            subprocess.run([sys.executable, "-m", "regsurvey", "server", "stop"], env=env, capture_output=True,
                           timeout=60)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid} (gone)"


def _is_server(pid: int) -> bool:
    """The warm worker server's own process (``auto`` starts it; it outlives the survey by design)."""
    return "regsurvey.engine.server_process" in _command_line(pid)
