"""A worker server kept warm between surveys: started by the first survey that needs workers, or by
``regsurvey server start``.

Every survey otherwise starts a forkserver that imports torch and Triton (one to four seconds) before
its first key can compile: most of a small survey's time, and of the gap to the toolchain's own pace at
``-j 16``. The server is that forkserver, kept alive: a survey that finds it connects once per worker,
and the server forks a worker that already holds torch, Triton and regsurvey, and hashed Triton's
sources. The worker then imports the survey's checkout as usual, so nothing of one survey's kernels
reaches another.

``REGSURVEY_SERVER`` says what a survey does about it: ``auto`` (the default) uses the running server or
starts one, which exits after :data:`AUTO_IDLE_S` without a survey; ``use`` uses a running server but
never starts one (the default when ``CI`` is set: a CI job leaves no process behind); ``off`` never uses
one.

One server per identity: the Python interpreter, regsurvey's own sources and the installed Triton and
torch. A survey uses only a server of its own identity; starting a server retires the servers of the
same interpreter and regsurvey installation whose identity is older (an upgrade, or an edit of
regsurvey's sources): each exits once the surveys still using it are done. The socket lives in a
directory only its user can enter (itself, not a symbolic link to one); a lock file there makes two
servers of one identity started at once end up as one.

The server's own process is :mod:`.server_process`: it outlives surveys by design, their workers do not.

Protocol, one Unix stream connection per worker (multiprocessing ``Connection`` framing):
the client sends ``{"op": "worker", "args": [...]}``; the forked worker sends
:class:`~.protocol.WorkerStarted` and then speaks :func:`regsurvey.engine.worker.serve`'s protocol
(:mod:`.protocol`); when it exits, the server sends :class:`~.protocol.WorkerExited` and closes the
connection. ``{"op": "ping"}``, ``{"op": "stop"}`` (which kills the workers), ``{"op": "retire"}``
(exit once the last worker has) and ``{"op": "idle", "idle_s": S}`` (exit after S seconds without a
survey, counted from now: ``regsurvey server start --idle`` while it runs) are answered at once. The
server's requests stay plain dicts: a server of an older regsurvey must still understand the ping and
the retirement a newer one sends (the idle time goes only to a server of the same identity).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..secret_vars import without_secrets
from .protocol import WorkerExited, WorkerStarted

DEFAULT_IDLE_S = 30 * 60.0  # `regsurvey server start`
AUTO_IDLE_S = 10 * 60.0  # a server a survey started by itself
CONNECT_TIMEOUT_S = 1.0
START_WAIT_S = 120.0  # how long a starting server may take to answer (importing torch on a cold disk)
LOCKED_EXIT = 3  # a server that found another of its identity holding the lock
POLICIES = ("auto", "use", "off")


class ServerError(Exception):
    """A server that cannot be started or reached; one-line message."""


def policy() -> str:
    """``REGSURVEY_SERVER``: ``auto`` (default), ``use`` (default under CI) or ``off``; ValueError if
    it is something else."""
    value = os.environ.get("REGSURVEY_SERVER", "").strip().lower()
    if value in POLICIES:
        return value
    if value:
        raise ValueError(f"REGSURVEY_SERVER={os.environ['REGSURVEY_SERVER']!r}: expected one of {', '.join(POLICIES)}")
    return "use" if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "auto"


def socket_dir() -> Path:
    """Where this user's server sockets live (``$REGSURVEY_SERVER_DIR``, else the runtime directory)."""
    base = os.environ.get("REGSURVEY_SERVER_DIR") or os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"regsurvey-{os.getuid()}"


def _directory_problem(directory: Path) -> str | None:
    """Why ``directory`` may not hold this user's sockets, or None when it may: it must be a directory
    itself, not a symbolic link (in a shared ``/tmp`` another user can plant one where it would be made,
    pointing where they choose), this user's, and closed to everyone else (else its sockets could be
    anyone's: a survey would hand its environment to a stranger's server)."""
    try:
        st = os.lstat(directory)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        with contextlib.suppress(OSError):
            return f"is a symbolic link (to {os.readlink(directory)}), not a directory of this user's"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.getuid():
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return "is not a directory of this user's alone (mode 700)"
    return None


def _private(directory: Path) -> bool:
    """Whether ``directory`` is this user's own directory, closed to everyone else
    (:func:`_directory_problem`)."""
    return _directory_problem(directory) is None


def _trusted_socket(path: Path) -> bool:
    """Whether a server may be listening on ``path`` that a survey can trust: it exists, in this
    user's private directory."""
    return _private(path.parent) and path.exists()


@functools.cache
def identity() -> str:
    """What a server must share with a survey to compile the same kernels: interpreter, where it imports
    from (``PYTHONPATH``: a survey run with a library's own directory on it, as vLLM's corpus is, imports
    what a server started without it cannot), regsurvey's sources, Triton's and torch's installed versions
    and places."""
    h = hashlib.sha256()
    h.update(f"{sys.executable}\0{sys.version}\0{import_path()}\0".encode())
    package = Path(__file__).resolve().parents[1]  # all of regsurvey's sources
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in ("triton", "torch"):
        try:
            found = importlib.metadata.distribution(dist)
            h.update(f"{dist}={found.version}@{found.locate_file('')}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist}=none\0".encode())
    return h.hexdigest()[:20]


def import_path() -> str:
    """``PYTHONPATH`` as this process was started with it: part of a server's identity."""
    return os.environ.get("PYTHONPATH", "")


def address() -> Path:
    """The socket of the server of this identity."""
    return socket_dir() / f"{identity()}.sock"


def _connect(path: Path, timeout: float = CONNECT_TIMEOUT_S) -> Connection:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    sock.settimeout(None)
    return Connection(sock.detach())


def _tell(path: Path, message: dict[str, Any]) -> None:
    """Send the server on ``path`` a request and wait briefly for its acknowledgement (none: gone)."""
    with contextlib.suppress(OSError, EOFError), _connect(path) as conn:
        conn.send(message)
        conn.poll(CONNECT_TIMEOUT_S)


def ping(path: Path | None = None) -> dict[str, Any] | None:
    """The running server's status, or None when there is none (of this identity)."""
    path = path or address()
    answer = _ping_any(path)
    return answer if answer is not None and answer.get("identity") == path.stem else None


def _ping_any(path: Path) -> dict[str, Any] | None:
    """The status of whatever server listens on ``path`` (of any identity), or None."""
    return _ask(path, {"op": "ping"})


def _ask(path: Path, message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer of the server on ``path`` to a request, or None (no trusted server there, or no answer)."""
    if not _trusted_socket(path):
        return None
    try:
        with _connect(path) as conn:
            conn.send(message)
            if not conn.poll(CONNECT_TIMEOUT_S):
                return None
            answer = conn.recv()
    except (OSError, EOFError):
        return None
    return answer if isinstance(answer, dict) else None


def _log(path: Path) -> Path:
    """Where the server on ``path`` writes what it prints (beside its socket)."""
    return path.with_suffix(".log")


def package() -> str:
    """The directory of this regsurvey's sources (a server's ping says its own: see :func:`start`)."""
    return str(Path(__file__).resolve().parents[1])


def start(idle_s: float = DEFAULT_IDLE_S, wait_s: float = START_WAIT_S, keep_idle: bool = False) -> dict[str, Any]:
    """Start this identity's server (if it is not running) and wait until it answers; its status, and
    ``started``: whether this call started it. A server already running takes ``idle_s`` as its idle time
    from now on (its status then holds ``idle_was_s``, the one it had), unless ``keep_idle``."""
    path = address()
    status = ping(path)
    if status is not None:
        if keep_idle:
            return {**status, "started": False}
        answer = _ask(path, {"op": "idle", "idle_s": idle_s})
        if answer is not None:
            if not answer.get("ok"):
                raise ServerError(f"the running worker server refused the idle time {idle_s:g} s")
            return {**status, "idle_s": answer["idle_s"], "idle_was_s": status["idle_s"], "started": False}
        # No answer: it exited since the ping (its idle time was up); a new one starts.
    return {**wait_until_up(path, launch(idle_s), wait_s), "started": True}


def launch(idle_s: float) -> subprocess.Popen:
    """Start a server of this identity in the background (its own session, so a terminal's Ctrl-C
    does not reach it), without waiting for it; first stop the superseded servers of this
    installation. ServerError when the socket cannot live where it would."""
    path = address()
    if len(os.fsencode(path)) > 100:  # sun_path holds 104 to 108 bytes, depending on the system
        raise ServerError(f"socket path {path} is too long for a Unix socket: set REGSURVEY_SERVER_DIR shorter")
    directory = path.parent
    with contextlib.suppress(FileExistsError):  # a directory, or whatever else is there, is judged below
        directory.mkdir(mode=0o700, parents=True)
    problem = _directory_problem(directory)
    if problem is not None:
        raise ServerError(f"{directory} {problem}: not starting a server there")
    _retire_superseded(path)
    log = open(_log(path), "ab")  # noqa: SIM115 - handed to the server process
    with log:
        # Without secret variables: its workers import projects' code, and it outlives the survey that
        # started it (a later job's survey on the same host must not find this one's tokens in it).
        return subprocess.Popen([sys.executable, "-m", "regsurvey.engine.server_process", str(path), str(idle_s)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                cwd=directory, close_fds=True, env=without_secrets(os.environ))


def wait_until_up(path: Path, process: subprocess.Popen | None, wait_s: float = START_WAIT_S) -> dict[str, Any]:
    """Wait until the server on ``path`` answers; its status. ``process``: the server this process
    launched; if it exits, only a server of the same identity started at the same moment (which
    holds the lock) can still answer."""
    log = _log(path)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        status = ping(path)
        if status is not None:
            return status
        if process is not None and process.poll() not in (None, LOCKED_EXIT):
            raise ServerError(f"the worker server exited while starting (exit code {process.returncode}; log: {log})")
        time.sleep(0.05)
    raise ServerError(f"the worker server did not answer within {wait_s:g} s (log: {log})")


def _retire_superseded(path: Path) -> None:
    """Retire the servers of this interpreter, regsurvey installation and ``PYTHONPATH`` that have another
    identity: regsurvey (or Triton, torch) changed since they started, and no new survey will use them. Each
    exits once the workers of the surveys still running on it are done. (A server of another
    ``PYTHONPATH`` serves the surveys run with that one, and stays.)"""
    for other in path.parent.glob("*.sock"):
        if other == path:
            continue
        status = _ping_any(other)
        if (status is not None and status.get("python") == sys.executable and status.get("package") == package()
                and status.get("import_path", "") == import_path()):
            _tell(other, {"op": "retire"})


def stop() -> bool:
    """Stop this identity's server; False if none was running."""
    path = address()
    if ping(path) is None:
        return False
    _tell(path, {"op": "stop"})
    deadline = time.monotonic() + 10
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


class ServerWorker:
    """A worker the server forked, as a survey's pool sees it (the subset of ``multiprocessing.Process``
    it uses). The worker is the server's child, not the survey's: the server kills it on request (it
    knows its children, so a reused pid is never hit) and sends its exit code as the connection's last
    message."""

    def __init__(self, pid: int, conn: Connection, path: Path):
        self.pid = pid
        self.exitcode: int | None = None
        self._conn = conn
        self._path = path

    def is_alive(self) -> bool:
        if self.exitcode is not None:
            return False
        try:
            os.kill(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill(self) -> None:
        if self.exitcode is not None:
            return
        _tell(self._path, {"op": "kill", "pid": self.pid})

    def join(self, timeout: float | None = None) -> None:
        """Wait for the exit code (the connection's last message); only at the end of the worker's
        use, since it reads what is left on the connection."""
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        with contextlib.suppress(OSError, EOFError):
            while self.exitcode is None and self._conn.poll(max(0.0, deadline - time.monotonic())):
                message = self._conn.recv()
                if isinstance(message, WorkerExited):
                    self.exitcode = message.code


_launched: list[subprocess.Popen] = []  # the server this process launched, until it has answered


def launch_for_survey() -> bool:
    """Start a server (without waiting) for the survey this process is about to make, which then
    takes its workers from it; False, with a warning, when none can be started there."""
    try:
        _launched.append(launch(AUTO_IDLE_S))
    except (ServerError, OSError) as exc:
        print(f"regsurvey: warning: not starting a worker server: {exc}", file=sys.stderr)
        return False
    return True


def connect_worker(args: tuple[Any, ...]) -> tuple[ServerWorker, Connection] | None:
    """A worker forked by the running server for ``args`` (:func:`regsurvey.engine.worker.serve`'s after the
    connection), or None when no server of this identity runs. Waits for a server this process
    launched to answer first."""
    path = address()
    if _launched:
        try:
            wait_until_up(path, _launched[0])
        except ServerError as exc:
            print(f"regsurvey: warning: {exc}; starting workers without it", file=sys.stderr)
            return None
        finally:
            _launched.clear()
    if not _trusted_socket(path):
        return None
    try:
        conn = _connect(path)
    except OSError:
        return None
    try:
        conn.send({"op": "worker", "args": list(args)})
        if not conn.poll(CONNECT_TIMEOUT_S * 10):
            raise EOFError
        first = conn.recv()
    except (OSError, EOFError):
        conn.close()
        return None
    if not isinstance(first, WorkerStarted):
        conn.close()
        return None
    return ServerWorker(first.pid, conn, path), conn

