"""`regsurvey server`: a worker server kept warm between surveys, started by the first survey that needs
one (``REGSURVEY_SERVER=auto``) or by ``regsurvey server start``, and used by surveys while it runs.

Each test runs its own server, in a socket directory of its own, and stops it at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..commands.test_cli_run import BAD_KEYS, BROKEN_KERNELS


@pytest.fixture
def env(server_env: dict[str, str]) -> dict[str, str]:
    return server_env


def cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def survey(repo: Path, env: dict[str, str], *args: str) -> dict:
    out = cli("run", "-q", "--format", "json", *args, cwd=repo, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_surveys_use_a_running_server_and_agree_with_spawned_workers(toy_repo: Path, tmp_path: Path,
                                                                     env: dict[str, str]) -> None:
    status = cli("server", "status", env=env)
    assert status.returncode == 1 and status.stdout.startswith("no regsurvey server of this installation runs")
    started = cli("server", "start", env=env)
    assert started.returncode == 0 and started.stdout.startswith("regsurvey server started (pid "), started.stderr
    again = cli("server", "start", env=env).stdout  # already running: the same one
    assert again == started.stdout.replace("server started", "server already running")
    status = cli("server", "status", env=env)
    assert status.returncode == 0 and "0 workers now, exits after 30 idle minutes" in status.stdout

    args = ("-j", "2", "--target", "gfx950,sm90", "--kind", "scale", "--kind", "gemm")
    served = survey(toy_repo, {**env, "TRITON_CACHE_DIR": str(tmp_path / "a")}, "--store", str(tmp_path / "a"), *args)
    spawned = survey(toy_repo, {**env, "REGSURVEY_WORKER_START": "spawn", "TRITON_CACHE_DIR": str(tmp_path / "b")},
                     "--store", str(tmp_path / "b"), *args)
    # Workers per target: at least one per target, all from the server (a worker ended before it
    # answered a key is started but not counted as served).
    timing = served["timing"]
    assert timing["workers_started"] >= timing["workers_from_server"] == timing["workers_preloaded"] >= 2
    assert spawned["timing"]["workers_from_server"] == spawned["timing"]["workers_preloaded"] == 0
    strip = ("compile_s", "stage_s", "reused")  # two compiles: each its own seconds
    assert ([{k: v for k, v in r.items() if k not in strip} for r in served["rows"]]
            == [{k: v for k, v in r.items() if k not in strip} for r in spawned["rows"]])
    assert len(served["rows"]) == 12 and all(r["status"] == "ok" for r in served["rows"])
    # The survey's workers were killed at its end: none left on the server.
    assert "0 workers now" in cli("server", "status", env=env).stdout

    stopped = cli("server", "stop", env=env)
    assert stopped.stdout.strip() == "regsurvey server stopped"
    assert cli("server", "status", env=env).returncode == 1
    assert not list(Path(env["REGSURVEY_SERVER_DIR"]).rglob("*.sock"))


def test_a_served_worker_that_dies_or_hangs_is_a_row(toy_repo: Path, env: dict[str, str]) -> None:
    (toy_repo / "toykernels" / "broken.py").write_text(BROKEN_KERNELS)
    (toy_repo / "keys" / "zz_bad.py").write_text(BAD_KEYS)
    assert cli("server", "start", env=env).returncode == 0
    data = survey(toy_repo, env, "--target", "sm90", "-j", "2", "--timeout", "10", "--kind", "dies", "--kind", "hangs",
                  "--kind", "scale")
    rows = {r["key"]: r for r in data["rows"]}
    assert data["timing"]["workers_from_server"] >= 1
    assert rows["dies/n3"]["error"] == "worker process died while surveying the key (exit code 3)"
    assert rows["hangs/n3"]["error"] == "timed out after 10 s (--timeout)"
    assert all(rows[k]["status"] == "ok" for k in rows if k.startswith("scale/"))
    # The hung worker was killed through the server, which knows its children.
    deadline = time.monotonic() + 10
    while "0 workers now" not in cli("server", "status", env=env).stdout:
        assert time.monotonic() < deadline, "a worker of the survey is still running on the server"
        time.sleep(0.2)


def test_an_idle_server_exits(env: dict[str, str]) -> None:
    assert cli("server", "start", "--idle", "0.05", env=env).returncode == 0  # 3 s
    deadline = time.monotonic() + 30
    while cli("server", "status", env=env).returncode == 0:
        assert time.monotonic() < deadline, "the idle server did not exit"
        time.sleep(0.5)
    assert not list(Path(env["REGSURVEY_SERVER_DIR"]).rglob("*.sock"))


def test_the_server_holds_no_secret_variable(env: dict[str, str]) -> None:
    """The server outlives the survey that started it and forks workers that import projects' code: it is
    started without the secret variables (a later job's code on the host cannot read this job's tokens
    from its /proc/PID/environ)."""
    started = cli("server", "start", env={**env, "GITHUB_TOKEN": "ghs_server-0123456789", "PLAIN_SETTING": "1"})
    assert started.returncode == 0 and started.stdout.startswith("regsurvey server started (pid "), started.stderr
    pid = int(started.stdout.split("pid ")[1].split(",")[0].rstrip(")"))
    environ = dict(entry.split("=", 1) for entry in Path(f"/proc/{pid}/environ").read_text().split("\0") if entry)
    assert "GITHUB_TOKEN" not in environ and environ["PLAIN_SETTING"] == "1"
    assert environ["REGSURVEY_SERVER_DIR"] == env["REGSURVEY_SERVER_DIR"]


def test_a_directory_others_can_enter_is_refused(toy_repo: Path, env: dict[str, str]) -> None:
    """A socket directory anyone could have made is never used: a survey would hand a stranger's
    server its environment."""
    directory = Path(env["REGSURVEY_SERVER_DIR"]) / f"regsurvey-{os.getuid()}"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    out = cli("server", "start", env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == (f"regsurvey: error: {directory} is not a directory of this user's alone (mode 700): "
                                  "not starting a server there")
    assert cli("server", "status", env=env).returncode == 1


def test_a_socket_directory_that_is_a_symbolic_link_is_refused(env: dict[str, str]) -> None:
    """In a shared /tmp another user can plant a link where the directory would be made, pointing at a
    directory of ours (mode 700, so it passed) or anywhere: the server's socket, lock and log would go
    there, and surveys would follow the link wherever it pointed next."""
    base = Path(env["REGSURVEY_SERVER_DIR"])
    elsewhere = base / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    directory = base / f"regsurvey-{os.getuid()}"
    directory.symlink_to(elsewhere)
    out = cli("server", "start", env=env)
    assert (out.returncode, out.stderr) == (2, f"regsurvey: error: {directory} is a symbolic link (to {elsewhere}), "
                                               "not a directory of this user's: not starting a server there\n")
    assert list(elsewhere.iterdir()) == []
    directory.unlink()
    directory.symlink_to(base / "nothing")  # dangling: not made through either
    out = cli("server", "start", env=env)
    assert out.returncode == 2 and " is a symbolic link (to " in out.stderr and not (base / "nothing").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_another_users_socket_directory_is_refused(env: dict[str, str]) -> None:
    directory = Path(env["REGSURVEY_SERVER_DIR"]) / f"regsurvey-{os.getuid()}"
    directory.mkdir(mode=0o700)
    os.chown(directory, 4321, 4321)
    out = cli("server", "start", env=env)
    assert (out.returncode, out.stderr) == (2, f"regsurvey: error: {directory} belongs to another user (uid 4321): "
                                               "not starting a server there\n")


def test_a_socket_path_too_long_is_one_line(env: dict[str, str]) -> None:
    out = cli("server", "start", env={**env, "REGSURVEY_SERVER_DIR": env["REGSURVEY_SERVER_DIR"] + "/" + "d" * 90})
    assert out.returncode == 2 and out.stderr.startswith("regsurvey: error: socket path ")
    assert out.stderr.strip().endswith("is too long for a Unix socket: set REGSURVEY_SERVER_DIR shorter")


def test_the_first_survey_starts_a_server_that_the_next_one_uses(toy_repo: Path, tmp_path: Path,
                                                                 env: dict[str, str]) -> None:
    auto = {**env, "REGSURVEY_SERVER": "auto", "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    args = ("-j", "2", "--target", "sm90", "--kind", "scale", "--store", str(tmp_path / "store"))
    first = survey(toy_repo, auto, *args)
    assert first["timing"]["workers_from_server"] == 2
    status = cli("server", "status", env=env)
    assert status.returncode == 0 and "exits after 10 idle minutes" in status.stdout
    second = survey(toy_repo, auto, *args, "--force")
    assert second["timing"]["workers_from_server"] == 2
    pid = status.stdout.split("pid ")[1].split(",")[0]
    assert cli("server", "status", env=env).stdout.startswith(f"regsurvey server running: pid {pid},")  # the same
    assert [r["resources"] for r in first["rows"]] == [r["resources"] for r in second["rows"]]
    # off: a survey leaves the running server alone.
    off = survey(toy_repo, {**auto, "REGSURVEY_SERVER": "off"}, *args, "--force")
    assert off["timing"]["workers_from_server"] == 0


def test_ci_and_use_never_start_a_server(toy_repo: Path, tmp_path: Path, env: dict[str, str]) -> None:
    args = ("-j", "1", "--target", "sm90", "--kind", "scale", "--store", str(tmp_path / "store"), "--force")
    ci = {key: value for key, value in env.items() if key != "REGSURVEY_SERVER"}
    for environ in ({**ci, "CI": "true"}, {**env, "REGSURVEY_SERVER": "use"}):
        data = survey(toy_repo, {**environ, "TRITON_CACHE_DIR": str(tmp_path / "tc")}, *args)
        assert data["timing"]["workers_from_server"] == 0
        assert cli("server", "status", env=env).returncode == 1
        assert not list(Path(env["REGSURVEY_SERVER_DIR"]).rglob("*.sock"))


@pytest.mark.parametrize("name", ["REGSURVEY_SERVER", "REGSURVEY_WORKER_START", "REGSURVEY_FINISH"])
def test_an_unknown_setting_is_one_line(toy_repo: Path, tmp_path: Path, env: dict[str, str], name: str) -> None:
    out = cli("run", "-q", "--target", "sm90", "--kind", "scale", "--store", str(tmp_path / "store"), cwd=toy_repo,
              env={**env, name: "sometimes"})
    expected = {"REGSURVEY_SERVER": "auto, use, off", "REGSURVEY_WORKER_START": "server, forkserver, spawn",
                "REGSURVEY_FINISH": "process, thread"}[name]
    assert out.returncode == 2
    assert out.stderr.strip() == f"regsurvey: error: {name}='sometimes': expected one of {expected}"


def _server_process(path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "regsurvey.engine.server_process", str(path), "600"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def test_two_servers_of_one_identity_started_at_once_end_up_one(env: dict[str, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from regsurvey.engine import server

    monkeypatch.setenv("REGSURVEY_SERVER_DIR", env["REGSURVEY_SERVER_DIR"])
    path = server.address()
    path.parent.mkdir(mode=0o700, parents=True)
    a, b = _server_process(path), _server_process(path)
    try:
        status = server.wait_until_up(path, None, wait_s=120)
        assert status["pid"] in (a.pid, b.pid)
        loser = b if status["pid"] == a.pid else a
        assert loser.wait(timeout=30) == server.LOCKED_EXIT
        assert server.ping(path)["pid"] == status["pid"]
    finally:
        for p in (a, b):
            p.kill()
            p.wait()


def test_starting_a_server_retires_the_superseded_ones(toy_repo: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """A server of the same Python and regsurvey installation with another identity (regsurvey, Triton
    or torch changed since it started) is retired when a new one starts: no new survey would use it,
    and it exits once the workers of the surveys still running on it are done."""
    from regsurvey.engine import server
    from regsurvey.engine.protocol import Stop, WorkerStarted

    directory = Path(env["REGSURVEY_SERVER_DIR"]) / f"regsurvey-{os.getuid()}"
    directory.mkdir(mode=0o700)
    stale = directory / "0123456789abcdef0123.sock"
    old = _server_process(stale)
    try:
        assert server.wait_until_up(stale, None, wait_s=120)["identity"] == stale.stem
        # A survey still running on the old server: one of its workers.
        worker = server._connect(stale)
        worker.send({"op": "worker", "args": [str(toy_repo), str(toy_repo / "keys"), str(tmp_path / "objects"),
                                              None, env]})
        assert worker.poll(30) and isinstance(worker.recv(), WorkerStarted)
        assert cli("server", "start", env=env).returncode == 0
        time.sleep(1)
        assert old.poll() is None  # still serving its worker
        worker.send(Stop())
        assert old.wait(timeout=30) == 0
        assert not stale.exists()
        assert cli("server", "status", env=env).returncode == 0  # the new one runs on
    finally:
        old.kill()
        old.wait()


def test_a_served_workers_warnings_reach_the_surveys_stderr(toy_repo: Path, tmp_path: Path,
                                                           env: dict[str, str]) -> None:
    # Issue #12, defect 4: a worker the server forked writes to the server's log; what it warns of (a
    # damaged cache entry, recompiled) must reach the user running the survey, and a keys file that
    # ends its worker at import is one line there too (defect 5).
    assert cli("server", "start", env=env).returncode == 0
    env = {**env, "TRITON_CACHE_DIR": str(tmp_path / "tc")}
    args = ("--target", "gfx950", "--kind", "scale", "--store", str(tmp_path / "store"))
    first = survey(toy_repo, env, *args)
    entries = sorted((tmp_path / "store" / "results").rglob("*.json"))
    assert entries and first["timing"]["workers_from_server"] >= 1
    for entry in entries:
        entry.write_text("{damaged")
    (toy_repo / "toykernels" / "ops.py").write_text((toy_repo / "toykernels" / "ops.py").read_text() + "\n# edit\n")
    out = cli("run", "-q", "--format", "json", *args, cwd=toy_repo, env=env)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stderr.splitlines() if line.startswith("regsurvey: warning: cache entry ")]
    # Each damaged entry is named (one looked up by two keys before it is rewritten is named twice).
    assert {line.split()[4] for line in warned} == {entry.name for entry in entries}
    assert all(line.endswith("is malformed (JSONDecodeError); recompiling") for line in warned)
    (toy_repo / "keys" / "exits.py").write_text("import os\n\nos._exit(3)\n")
    ended = cli("run", "-q", *args, cwd=toy_repo, env=env)
    assert ended.returncode == 2 and ended.stderr.endswith(
        "the worker process ended while importing the keys files (exit code 3): a keys file, or what it imports, "
        "ends its process\n")


def test_a_survey_with_another_pythonpath_gets_a_server_of_its_own(env: dict[str, str], tmp_path: Path) -> None:
    """A server imports what its ``PYTHONPATH`` lets it: a survey run with a library's directory on it (vLLM's
    corpus) must not be served by one started without (every key failed, "No module named 'vllm'")."""
    code = "from regsurvey.engine import server; print(server.identity())"

    def identity(pythonpath: str | None) -> str:
        child = dict(env)
        child.pop("PYTHONPATH", None)
        if pythonpath is not None:
            child["PYTHONPATH"] = pythonpath
        return subprocess.run([sys.executable, "-c", code], env=child, capture_output=True, text=True,
                              check=True, timeout=60).stdout.strip()

    assert identity(None) == identity(None) != identity(str(tmp_path))
