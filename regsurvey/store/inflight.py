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
files stay (empty files, one per kernel ever compiled here): removing one under a waiter would let a third
process lock a new file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path

from .files import atomic_write
from .resultcache import entry_name


class HeldElsewhere(Exception):
    """:meth:`InFlight.take` without waiting: another process holds the kernel's build lock."""


class BuildLock:
    """The lock of one kernel's build, held by this process; ``waited``: another process held it first."""

    def __init__(self, fd: int, base: Path, waited: bool):
        self.fd: int | None = fd
        self.base = base
        self.waited = waited

    def failure(self, since: float) -> str | None:
        """The error of this kernel's build that failed in another process (or earlier in this one): the
        holder this one waited for, or any holder since ``since`` (time.time(): when the caller's survey
        started). None when there is none; an older record is removed (this one builds again)."""
        path = self.base.with_suffix(".failed")
        try:
            if not self.waited and path.stat().st_mtime < since:
                path.unlink()
                return None
            error = json.loads(path.read_text())["error"]
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

    def _base(self, triton_hash: str) -> Path:
        return self.root / entry_name(triton_hash)

    def take(self, triton_hash: str, wait: bool = True) -> BuildLock | None:
        """This kernel's build lock: at once when no process holds it, else once the holder released it
        (blocking; with ``wait`` False, HeldElsewhere at once instead). None when the lock file cannot
        be made (a read-only or full store): then build without it."""
        base = self._base(triton_hash)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(base.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o666)  # the umask decides, as for open()
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                waited = False
            except BlockingIOError:
                if not wait:
                    raise HeldElsewhere(triton_hash) from None
                fcntl.flock(fd, fcntl.LOCK_EX)  # until the holder releases it, or dies
                waited = True
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError):  # a file system without locks: build without it
                return None
            raise
        return BuildLock(fd, base, waited=waited)
