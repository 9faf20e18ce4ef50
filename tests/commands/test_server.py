"""``regsurvey server start|stop|status`` in this process, each test with a socket directory of its own
(REGSURVEY_SERVER_DIR): status 1 when none runs, a real start, status and stop (0), ``start --idle`` while
it runs (the new idle time, said), and a socket place that will not do (one line, exit 2, nothing started)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from regsurvey.engine import server as srv

from .runner import assert_one_line_error, assert_usage_error, invoke


@pytest.fixture
def socket_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short directory for this test's server sockets (a Unix socket's path must stay under ~100 bytes)."""
    directory = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))
    monkeypatch.setenv("REGSURVEY_SERVER_DIR", str(directory))
    try:
        yield directory
    finally:
        invoke("server", "stop")  # whatever a failed test left running
        shutil.rmtree(directory, ignore_errors=True)


def test_no_server_runs(socket_home: Path) -> None:
    socket = socket_home / f"regsurvey-{os.getuid()}" / f"{srv.identity()}.sock"
    status = invoke("server", "status")
    assert (status.exit_code, status.stderr) == (1, "")
    assert status.stdout == f"no regsurvey server of this installation runs (it would listen on {socket})\n"
    stop = invoke("server", "stop")
    assert (stop.exit_code, stop.stdout, stop.stderr) == (0, "no regsurvey server was running\n", "")


def test_start_status_stop(socket_home: Path) -> None:
    socket = socket_home / f"regsurvey-{os.getuid()}" / f"{srv.identity()}.sock"
    started = invoke("server", "start", "--idle", "1")
    assert started.exit_code == 0, started.stderr
    assert started.stdout.startswith("regsurvey server started (pid ")
    assert started.stdout.endswith(f", socket {socket}); it exits after 1 idle minute\n")
    pid = started.stdout.split("(pid ")[1].split(",")[0]
    running = f"regsurvey server already running (pid {pid}, socket {socket});"
    again = invoke("server", "start")  # already running: the same one, which keeps its idle time
    assert (again.exit_code, again.stdout) == (0, f"{running} it exits after 1 idle minute\n")
    status = invoke("server", "status")
    assert status.exit_code == 0
    assert status.stdout.startswith(f"regsurvey server running: pid {pid}, up ")
    assert status.stdout.endswith(f"0 workers now, exits after 1 idle minute; socket {socket}\n")
    # --idle while it runs: its idle time from now on, said in the one line.
    longer = invoke("server", "start", "--idle", "5")
    assert (longer.exit_code, longer.stdout) == (0, f"{running} it now exits after 5 idle minutes (was 1)\n")
    assert invoke("server", "status").stdout.endswith(f"0 workers now, exits after 5 idle minutes; socket {socket}\n")
    stopped = invoke("server", "stop")
    assert (stopped.exit_code, stopped.stdout) == (0, "regsurvey server stopped\n")
    assert not socket.exists() and invoke("server", "status").exit_code == 1


def test_a_socket_path_too_long_is_one_line(socket_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = socket_home / ("d" * 90)
    monkeypatch.setenv("REGSURVEY_SERVER_DIR", str(deep))
    socket = deep / f"regsurvey-{os.getuid()}" / f"{srv.identity()}.sock"
    assert_one_line_error(invoke("server", "start"), f"socket path {socket} is too long for a Unix socket: set "
                                                     "REGSURVEY_SERVER_DIR shorter")
    assert not deep.exists()  # nothing made, nothing started


def test_a_socket_directory_open_to_others_is_one_line(socket_home: Path) -> None:
    shared = socket_home / f"regsurvey-{os.getuid()}"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    assert_one_line_error(invoke("server", "start"), f"{shared} is not a directory of this user's alone (mode 700): "
                                                     "not starting a server there")
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize(("args", "usage", "error"), [
    (("start", "--idle", "0"), "Usage: regsurvey server start [OPTIONS]",
     "Invalid value for '--idle': 0.0 is not in the range x>=0.05."),
    (("restart",), "Usage: regsurvey server [OPTIONS] COMMAND [ARGS]...",
     "No such command 'restart'. (Did you mean one of: 'start', 'status'?)"),
    (("status", "now"), "Usage: regsurvey server status [OPTIONS]", "Got unexpected extra argument (now)"),
])
def test_bad_arguments_are_usage_errors(args: tuple[str, ...], usage: str, error: str) -> None:
    assert_usage_error(invoke("server", *args), usage, error)
