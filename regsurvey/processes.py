"""A survey's processes end with it, however it ends: which process a pid names, whether it still runs,
and Linux's parent-death signal.

``kill -9`` of a survey (the OOM killer, a CI runner's hard kill) runs none of its cleanup, so each of
its processes asks the kernel to kill it when its parent ends (:func:`die_with_parent`), and what a
survey leaves on disk names its owner (:class:`ProcessId`), so that a later run can tell it was
abandoned. A pid alone does not name a process for long (pids are reused): its start time goes with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, Linux's ``/proc/<pid>/stat``), or None when it is
    not running or this system does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # after the command name, which may hold spaces
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):  # a zombie has ended: only its exit status is left
        return None
    return int(fields[19])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: it has ended, and waits only to be reaped)."""
    if os.path.isdir("/proc/self"):
        return start_time(pid) is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


@dataclass(frozen=True)
class ProcessId:
    """One process, for as long as it runs: its host, pid and start time (None where the system does
    not say: then the pid alone)."""

    host: str
    pid: int
    start: int | None

    @classmethod
    def this(cls) -> ProcessId:
        """This process."""
        return cls(socket.gethostname(), os.getpid(), start_time(os.getpid()))

    def to_json(self) -> str:
        return json.dumps({"host": self.host, "pid": self.pid, "start": self.start})

    @classmethod
    def from_json(cls, text: str) -> ProcessId | None:
        """The process ``text`` (:meth:`to_json`'s) names, or None when it names none."""
        try:
            data = json.loads(text)
            pid, start = data["pid"], data["start"]
            if not (isinstance(data["host"], str) and isinstance(pid, int) and isinstance(start, int | None)):
                return None
        except (ValueError, KeyError, TypeError):
            return None
        return cls(data["host"], pid, start)

    def gone(self) -> bool:
        """Whether it has ended, as far as this host can tell: a process of another host is never gone
        (it may still be using what it named)."""
        if self.host != socket.gethostname():
            return False
        if not alive(self.pid):
            return True
        return self.start is not None and start_time(self.pid) not in (None, self.start)  # the pid reused


def die_with_parent(parent: int | None = None) -> bool:
    """Have the kernel kill this process (SIGKILL) when its parent ends: it needs no Python code to run,
    so it also ends a process stuck in a compile or holding the interpreter lock in C. False where the
    system has no such signal (:func:`watch` is the fallback). ``parent``: the pid the parent had when
    it forked this process (default: the parent now); a parent that ended before the signal was asked
    for ends this process at once."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    parent = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(1)
    return True


def watch(pid: int, interval_s: float = 0.5) -> threading.Thread:
    """Where :func:`die_with_parent` cannot be had: a thread that ends this process once ``pid`` has
    ended (polled; it needs the interpreter lock, so a process stuck in C ends when it lets go)."""

    def run() -> None:
        while alive(pid):
            time.sleep(interval_s)
        os._exit(1)

    thread = threading.Thread(target=run, name="regsurvey-lifeline", daemon=True)
    thread.start()
    return thread


class ProcessEnd:
    """Tells a selector when a process has ended: its pidfd (Linux 5.3 and later) becomes readable; without
    one (``fileno()`` None) the caller polls :meth:`ended`."""

    def __init__(self, pid: int):
        self.pid = pid
        self.start = start_time(pid)
        self._fd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._fd = os.pidfd_open(pid)  # type: ignore[attr-defined, unused-ignore]

    def fileno(self) -> int | None:
        return self._fd

    def ended(self) -> bool:
        """Whether the process has ended (or another now has its pid)."""
        if self.start is None:
            return not alive(self.pid)
        return start_time(self.pid) != self.start

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
