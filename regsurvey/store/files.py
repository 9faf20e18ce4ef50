"""Writing files so that nothing half-written is ever kept: what the store and the reports use."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import stat
import tempfile
from pathlib import Path


class WriteError(OSError):
    """A file that could not be written (a full disk, a quota, a read-only directory): one line naming
    the file and the system's reason. Nothing of it is left behind."""

    def __str__(self) -> str:
        return str(self.args[0])


class NotAStoreFile(OSError):
    """A file of the store that is not one regsurvey could have written: not a regular file (a FIFO, a
    device, a symlink to ``/dev/zero``), or larger than anything it writes there. ``strerror`` says which
    in a few words, so that the callers' ``unreadable (...)`` lines name it."""


MiB = 1 << 20


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; NotAStoreFile when it is not a
    regular file or is larger (other OSErrors as ``open`` raises them).

    What the store holds may have been planted or damaged: reading a FIFO blocks for ever, a symlink to
    ``/dev/zero`` never ends. ``O_NONBLOCK`` keeps the open itself from blocking on a FIFO, and the
    descriptor's own ``fstat`` (not the path's, which could be swapped between the two) decides."""
    fd = _open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise NotAStoreFile(errno.EFBIG, f"larger than {_size(limit)} ({_size(size)})", str(path))
        data = _read_up_to(fd, limit + 1)  # a file growing while read stops one byte past the limit
    finally:
        os.close(fd)
    if len(data) > limit:
        raise NotAStoreFile(errno.EFBIG, f"larger than {_size(limit)}", str(path))
    return data


def read_head(path: Path, count: int) -> bytes:
    """The first ``count`` bytes (or fewer) of the regular file ``path``; NotAStoreFile as for
    :func:`read_regular`."""
    fd = _open_regular(path)
    try:
        return _read_up_to(fd, count)
    finally:
        os.close(fd)


def _open_regular(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotAStoreFile(errno.EINVAL, f"not a regular file ({_file_kind(mode)})", str(path))
    return fd


def _read_up_to(fd: int, count: int) -> bytes:
    chunks = []
    while count > 0 and (chunk := os.read(fd, min(count, 8 * MiB))):
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def _size(count: int) -> str:
    return f"{count / MiB:.0f} MiB" if count >= MiB else f"{count} bytes"


@functools.cache
def new_file_mode() -> int:
    """The mode ``open()`` would give a new file (0o666 less the process's umask). ``mkstemp`` makes
    its files 0o600, which would keep a results directory shared by CI jobs of several users, or a
    report, from anyone else."""
    with contextlib.suppress(OSError):
        found = re.search(r"^Umask:\s*([0-7]+)", Path("/proc/self/status").read_text(), re.M)
        if found:
            return 0o666 & ~int(found[1], 8)
    mask = os.umask(0o022)  # no /proc: read the umask by setting it, and put it back at once
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one, never a part, with
    the mode a new file gets from ``open()``; WriteError when it cannot be written."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), new_file_mode())
            f.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            error = WriteError(f"cannot write {path}: {exc.strerror or exc}")
            error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(path)
            raise error from exc
        raise


def write_text(path: Path, text: str) -> None:
    """``path`` holds ``text`` (UTF-8), whole, or is left as it was; WriteError when it cannot be written."""
    atomic_write(path, text.encode("utf-8"))


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a full disk or an exhausted quota: a failure of the moment,
    which a survey never stores as a key's result."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _NO_SPACE:
            return True
        if any(os.strerror(code) in str(current) for code in _NO_SPACE):  # a compiler's own words
            return True
        current = current.__cause__ or current.__context__
    return False
