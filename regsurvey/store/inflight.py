"""Builds in flight: a kernel one process compiles is awaited by the others, never compiled twice.

A process about to compile a kernel (a Triton cache hash) takes ``objects/inflight/<h>.lock`` with
``flock``, where ``h`` hashes the Triton hash with :data:`READER_REVISION` as the result cache does; it
holds the lock until the kernel's result is in the result cache (:mod:`.resultcache`), or its compile
failed. Another process (a worker of the same survey, or of another survey on the same store) that finds
the lock held waits for it and then reads the result cache instead of compiling.

``flock`` belongs to the open file, and the kernel drops it with the last descriptor: a holder killed at
a time-out or by Ctrl-C releases it by dying, and the waiter then finds no result and compiles the kernel
itself. A holder whose compile failed (not for want of disk space, and not the toolchain's intermittent
failure) leaves the error in ``<h>.failed`` before releasing: a process that waited for that holder, or
that started its survey before the failure, takes the failure rather than compile a kernel that just
failed (the same Triton hash is the same source, options and toolchain); a survey started later builds
it again (failures are not results: the result cache keeps none), and removes the old record first. Lock
files stay (one per kernel ever compiled here, holding the process id and host of the last holder: what a
waiter that times out names): removing one under a waiter would let a third process lock a new file.

A record is a hint, not a result (docs/trust.md): anyone who can write the store can plant one, and a
host whose clock runs ahead, sharing the directory, writes them "in the future". A record dated after now
(beyond :data:`CLOCK_SLACK_S`), or, for a waiter, dated before it began to wait, is stale: removed, and the
kernel compiled. A failure taken from a record is the caller's to mark as of the moment (the worker's row
is ``transient``) until the survey has compiled the kernel itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path

from .files import atomic_write, read_regular
from .resultcache import entry_name

CLOCK_SLACK_S = 5.0  # how far a record's time may run ahead of this host's clock (a shared file system's)


class HeldElsewhere(Exception):
    """:meth:`InFlight.take` without waiting: another process holds the kernel's build lock."""


class BuildLock:
    """The lock of one kernel's build, held by this process; ``waited``: another process held it first;
    ``began``: time.time() when this process asked for it."""

    def __init__(self, fd: int, base: Path, waited: bool, began: float = 0.0):
        self.fd: int | None = fd
        self.base = base
        self.waited = waited
        self.began = began

    def failure(self, since: float) -> str | None:
        """The error of this kernel's build that failed in another process (or earlier in this one): the
        holder this one waited for (a record written since it began to wait), or any holder since ``since``
        (time.time(): when the caller's survey started). None when there is none; a record that is older,
        or dated in the future, is removed (this one builds again)."""
        path = self.base.with_suffix(".failed")
        try:
            written = path.stat().st_mtime
            # (a file's time is the kernel's coarse clock: a record written just after began may seem before)
            oldest = self.began - 1.0 if self.waited else since
            if not oldest <= written <= time.time() + CLOCK_SLACK_S:
                path.unlink()
                return None
            error = json.loads(read_regular(path, 16 << 20))["error"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return error if isinstance(error, str) else None

    def fail(self, error: str) -> None:
        """Record that this build failed (for the processes waiting for it); best effort."""
        with contextlib.suppress(OSError):
            atomic_write(self.base.with_suffix(".failed"), json.dumps({"error": error}).encode())

    def release(self) -> None:
        """Let the next waiter (if any) go: the result is in the result cache, or the build failed."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # drops the flock with it


class InFlight:
    """The build locks of one store (``objects/inflight/``)."""

    def __init__(self, objects_root: Path):
        self.root = Path(objects_root).absolute() / "inflight"
        # Told (Triton hash, holder) when this process starts to wait for another's lock, and (hash, None)
        # when it has it: the worker tells its survey, whose time-out then says what the key waited for.
        self.on_wait: Callable[[str, str | None], None] | None = None

    def _base(self, triton_hash: str) -> Path:
        return self.root / entry_name(triton_hash)

    def take(self, triton_hash: str, wait: bool = True) -> BuildLock | None:
        """This kernel's build lock: at once when no process holds it, else once the holder released it
        (blocking; with ``wait`` False, HeldElsewhere at once instead). None when the lock file cannot
        be made (a read-only or full store): then build without it."""
        base = self._base(triton_hash)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # (O_NONBLOCK: a FIFO planted in its place does not block the open; it is no lock file then)
            fd = os.open(base.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                         0o666)  # the umask decides, as for open()
        except OSError:
            return None
        began = time.time()
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{base.with_suffix('.lock')} is not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                waited = False
            except BlockingIOError:
                if not wait:
                    raise HeldElsewhere(triton_hash) from None
                if self.on_wait is not None:
                    self.on_wait(triton_hash, holder_of(fd))
                fcntl.flock(fd, fcntl.LOCK_EX)  # until the holder releases it, or dies
                waited = True
                if self.on_wait is not None:
                    self.on_wait(triton_hash, None)
            _say_holder(fd)
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError):  # a file system without locks (or no lock file): build without it
                return None
            raise
        return BuildLock(fd, base, waited=waited, began=began)


def holder_of(fd: int) -> str:
    """Who holds the lock open at ``fd``, as its holder wrote it (``process 1234 on host``; "" when
    unknown: a lock file of a regsurvey before this one)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        said = os.pread(fd, 200, 0).decode().strip()
        pid, _, host = said.partition(" ")
        if pid.isdigit() and host:
            return f"process {pid} on {host}" if host != socket.gethostname() else f"process {pid}"
    return ""


def _say_holder(fd: int) -> None:
    """Write who holds the lock into its file (best effort: only a waiter's message needs it)."""
    with contextlib.suppress(OSError):
        said = f"{os.getpid()} {socket.gethostname()}\n".encode()
        os.pwrite(fd, said, 0)
        os.ftruncate(fd, len(said))
