"""The worker server's own process (:mod:`.server` is the surveys' side: where it listens, how it is
started, stopped and asked for a worker): it holds its identity's lock, listens, forks a worker per
request, and tells each survey how its workers ended.

The server outlives surveys by design; their workers do not. A worker dies with the server (Linux's
parent-death signal), and the server kills the workers of a survey that has ended (:class:`_Surveys`):
a survey killed outright cannot, and a worker busy in a kind body would not notice it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NoReturn

from ..processes import ProcessEnd, die_with_parent
from .protocol import WorkerExited, WorkerStarted
from .server import CONNECT_TIMEOUT_S, LOCKED_EXIT, import_path, package


def _lock(path: Path, wait_s: float = 5.0) -> int | None:
    """Hold the identity's lock file for this process's life; None if another server holds it for
    ``wait_s`` (a server that is exiting lets go within that; one that runs or starts keeps it)."""
    import fcntl

    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


class _Surveys:
    """The surveys the server's workers serve, each watched so that its workers end with it: a survey
    killed (``kill -9``, the OOM killer) cannot kill them itself, and a worker busy in a kind body or a
    compile would not notice its connection end. The survey is the process at the other end of the
    worker's connection (``SO_PEERCRED``); its pidfd wakes the server's selector when it ends (without
    pidfds, the server polls)."""

    def __init__(self, selector: selectors.BaseSelector):
        self.selector = selector
        self.watches: dict[int, ProcessEnd] = {}  # survey pid -> its watch
        self.workers: dict[int, int] = {}  # worker pid -> its survey's pid

    def add(self, worker: int, survey: int | None) -> None:
        """``worker`` serves ``survey`` (None: the peer is not known; nothing to watch)."""
        if survey is None:
            return
        self.workers[worker] = survey
        if survey not in self.watches:
            watch = self.watches[survey] = ProcessEnd(survey)
            fd = watch.fileno()
            if fd is not None:
                self.selector.register(fd, selectors.EVENT_READ, ("survey", survey))

    def polled(self) -> bool:
        """Whether some survey is watched by polling (the selector must wake now and then)."""
        return any(w.fileno() is None for w in self.watches.values())

    def ended(self, only: int | None = None) -> list[int]:
        """The workers of the surveys that have ended, which are no longer watched; ``only``: of that
        survey, whose pidfd woke the selector (a pidfd is readable once its process has ended)."""
        gone = [only] if only is not None else [pid for pid, w in self.watches.items() if w.ended()]
        orphans = [worker for worker, survey in self.workers.items() if survey in gone]
        for pid in gone:
            self._unwatch(pid)
        return orphans

    def forget(self, worker: int) -> None:
        """``worker`` has exited: its survey is unwatched once none of its workers is left."""
        survey = self.workers.pop(worker, None)
        if survey is not None and survey not in self.workers.values():
            self._unwatch(survey)

    def _unwatch(self, survey: int) -> None:
        watch = self.watches.pop(survey, None)
        if watch is not None:
            fd = watch.fileno()
            if fd is not None:
                self.selector.unregister(fd)
            watch.close()


def _peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process at the other end of a Unix socket (Linux), or None."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except OSError:
        return None
    return pid or None


def serve_forever(path: Path, idle_s: float) -> None:
    """Serve on the socket ``path`` until stopped, retired with no worker left, or ``idle_s`` seconds
    without a worker."""
    lock = _lock(path)
    if lock is None:  # a server of this identity is running or starting: it serves
        sys.exit(LOCKED_EXIT)
    from . import worker_preload  # noqa: F401 - torch, Triton, regsurvey, Triton's source hash

    server = _Server(path, idle_s, lock)
    try:
        server.run()
    finally:
        server.close()


class _Server:
    """The server's loop: a worker forked per request on the socket, each survey watched, children reaped."""

    def __init__(self, path: Path, idle_s: float, lock: int):
        self.path = path
        self.idle_s = idle_s
        self.lock = lock
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale socket of a server that died
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        path.chmod(0o600)
        self.listener.listen(64)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self.children: dict[int, Connection] = {}
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "child")
        self.surveys = _Surveys(self.selector)
        self.started = self.last_busy = time.monotonic()
        self.retiring = False  # superseded by a newer server: exit once the workers of running surveys are done

    def run(self) -> None:
        """Serve until stopped, retired with no worker left, or idle for ``idle_s``."""
        while True:
            if not self.children and (self.retiring or time.monotonic() - self.last_busy >= self.idle_s):
                return
            timeout = 0.5 if self.surveys.polled() else max(1.0, self.idle_s / 10)
            for key, _ in self.selector.select(timeout=timeout):
                if key.data == "child":
                    os.read(self.wake_r, 4096)
                elif isinstance(key.data, tuple):  # ("survey", pid): a survey ended; its workers go too
                    _kill(self.children, self.surveys.ended(only=key.data[1]))
                elif not self.accept():
                    return
            if self.surveys.polled():
                _kill(self.children, self.surveys.ended())
            for pid in _reap(self.children):
                self.surveys.forget(pid)
            if self.children:
                self.last_busy = time.monotonic()

    def accept(self) -> bool:
        """Answer a request on a new connection; False when it says stop."""
        sock, _ = self.listener.accept()
        peer = _peer_pid(sock)
        conn = Connection(sock.detach())
        try:
            if not conn.poll(CONNECT_TIMEOUT_S * 10):
                raise EOFError
            request = conn.recv()
        except (OSError, EOFError):
            conn.close()
            return True
        op = request.get("op") if isinstance(request, dict) else None
        if op == "ping":
            _reply(conn, {"ok": True, "pid": os.getpid(), "identity": self.path.stem, "workers": len(self.children),
                          "idle_s": self.idle_s, "up_s": round(time.monotonic() - self.started, 1),
                          "python": sys.executable, "package": package(),
                          "import_path": import_path()})
        elif op == "kill":
            _kill(self.children, [request.get("pid")])
            _reply(conn, {"ok": True})
        elif op == "stop":
            _reply(conn, {"ok": True})
            return False
        elif op == "retire":
            _reply(conn, {"ok": True})
            self.retiring = True
        elif op == "idle":  # `regsurvey server start --idle` while this server runs
            wanted = request.get("idle_s")
            if isinstance(wanted, (int, float)) and wanted > 0:
                self.idle_s, self.last_busy = float(wanted), time.monotonic()  # counted from now
            _reply(conn, {"ok": self.idle_s == wanted, "idle_s": self.idle_s})
        elif op == "worker":
            self.fork(conn, request["args"], peer)
        else:
            conn.close()
        return True

    def fork(self, conn: Connection, args: list[Any], peer: int | None) -> None:
        """A worker for the survey ``peer`` on ``conn``, forked from this process."""
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            # Killed when the server ends: a server killed mid-survey takes its workers along, and each
            # survey sees its connections end (and surveys their keys again) rather than orphans that
            # nobody can kill.
            die_with_parent(server_pid)
            _be_worker(conn, args, inherited=[
                self.selector.close, self.listener.close, lambda: os.close(self.wake_r),
                lambda: os.close(self.wake_w), lambda: os.close(self.lock),
                *(w.close for w in self.surveys.watches.values()),
                *(other.close for other in self.children.values())])
        self.children[pid] = conn
        self.surveys.add(pid, peer)
        self.last_busy = time.monotonic()

    def close(self) -> None:
        """Kill the workers left (they die with the server anyway) and remove the socket."""
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _kill(children: dict[int, Connection], pids: list[Any]) -> None:
    """Kill those of ``pids`` that are this server's workers (only its own: an unreaped child's pid is
    never another process's)."""
    for pid in pids:
        if pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _reply(conn: Connection, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.send(message)
    conn.close()


def _be_worker(conn: Connection, args: list[Any], inherited: list[Callable[[], None]]) -> NoReturn:
    """In the child the server just forked: let go of the server's descriptors (``inherited``
    closes them) and signal handlers, then serve one survey as its worker."""
    from . import worker

    code = 1
    try:
        for close in inherited:
            close()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        conn.send(WorkerStarted(os.getpid()))
        worker.serve(conn, *args)
        code = 0
    finally:
        os._exit(code)


def _reap(children: dict[int, Connection]) -> list[int]:
    """Collect exited workers and tell each one's survey how it ended; their pids."""
    reaped: list[int] = []
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        conn = children.pop(pid, None)
        if conn is None:
            continue
        reaped.append(pid)
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.send(WorkerExited(code))
        conn.close()
    return reaped


if __name__ == "__main__":
    serve_forever(Path(sys.argv[1]), float(sys.argv[2]))
