"""Content-addressed storage of compiled objects: ``objects/<sha[:2]>/<sha>.<ext>``.

Writes are atomic (a temporary file in the same directory, then ``os.replace``), so two surveys on one
store never leave a half-written object; reads verify the hash.

What the store holds is not believed as it stands (docs/trust.md): a path read from a row or a cache
entry names an object of this store (``objects/<sha[:2]>/<sha>.<ext>`` and nothing else, resolving inside
it) or is refused, so a row cannot make regsurvey read or write elsewhere; and every text kept beside an
object (its IR, its pressure, ...) starts with a header naming that object's sha256 and the text's name,
so a text swapped from another object, or kept without one, is refused (and, where it can be, made again
from the object) rather than describing another kernel.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from pathlib import Path

from ..errors import CorruptObjectError
from .files import MiB, NotAStoreFile, WriteError, atomic_write, read_head, read_regular

OBJECT_EXTS = ("hsaco", "cubin")
# Larger than any kernel object or text a compile makes (the largest seen: a few MB); what is larger was
# not written by regsurvey, and is not read into memory whole.
MAX_OBJECT_BYTES = 256 * MiB
MAX_TEXT_BYTES = 512 * MiB  # decompressed
_OBJECT_PATH = re.compile(r"objects/([0-9a-f]{2})/([0-9a-f]{64})\.(" + "|".join(OBJECT_EXTS) + r")")
_TEXT_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_HEADER = "regsurvey-text 1 {sha} {name}\n"  # the first line of every text kept beside an object


class ObjectStore:
    """Compiled objects by sha256, with their IR texts (gzip) beside them."""

    def __init__(self, root: Path):
        self.root = Path(root).absolute()  # workers run in the checkout: never relative to their cwd

    def relpath(self, sha: str, ext: str) -> str:
        """Path of an object relative to the store root's parent (as recorded in rows)."""
        return f"objects/{sha[:2]}/{sha}.{ext}"

    def path(self, rel: str) -> Path:
        """Where the object ``rel`` (a row's ``object.path``) is: CorruptObjectError unless ``rel`` is an
        object path this store makes (``objects/<sha[:2]>/<sha>.<ext>``) and resolves inside the store (not
        through a link out of it)."""
        path = self._place(rel)
        self._inside(path, f"stored object {rel}")
        return path

    def _place(self, rel: str) -> Path:
        """Where ``rel`` would be, its folder inside the store (the object itself may be anything)."""
        m = _OBJECT_PATH.fullmatch(rel) if isinstance(rel, str) else None
        if m is None or m[1] != m[2][:2]:
            raise CorruptObjectError(f"stored object path {str(rel)[:80]!r} is not an object of this store")
        path = self.root.parent / rel
        self._inside(path.parent, f"stored object {rel}")
        return path

    def _inside(self, path: Path, what: str) -> None:
        """CorruptObjectError unless ``path`` resolves inside the store (``what`` names it)."""
        real = path.resolve()
        if not real.is_relative_to(self.root.resolve()):
            raise CorruptObjectError(f"{what} resolves outside the store ({real})")

    def put(self, binary: bytes, ext: str, extras: dict[str, str] | None = None) -> tuple[str, str]:
        """Store an object (and its texts, e.g. amdgcn); return (sha256, relative path). An object or a
        text already there is written again unless it is this object's, a regular file (a link planted in
        its place is replaced, never written through)."""
        sha = hashlib.sha256(binary).hexdigest()
        rel = self.relpath(sha, ext)
        try:
            path = self._place(rel)
        except CorruptObjectError as exc:  # its folder is a link out of the store: nothing is written there
            raise WriteError(f"cannot write {rel}: {exc}") from None
        if path.is_symlink() or _sha256_file(path) != sha:
            atomic_write(path, binary)
        for name, text in (extras or {}).items():
            extra = path.with_name(f"{sha}.{_checked_name(name)}.gz")
            if extra.is_symlink() or _stored_header(extra) != _header(sha, name):
                atomic_write(extra, _packed(sha, name, text))
        return sha, rel

    def get(self, rel: str, sha: str) -> bytes:
        """Read an object back, verifying its hash (CorruptObjectError if missing or altered, or if ``rel``
        is not the path of the object ``sha``)."""
        path = self.path(rel)
        if path.stem != sha:
            raise CorruptObjectError(f"stored object {rel} is not the object {str(sha)[:16]}... its row names")
        try:
            data = read_regular(path, MAX_OBJECT_BYTES)
        except OSError as exc:
            what = "unusable" if isinstance(exc, NotAStoreFile) else "missing"
            raise CorruptObjectError(f"stored object {rel} is {what} ({exc.strerror})") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise CorruptObjectError(f"stored object {rel} does not match its sha256 (corrupt or truncated)")
        return data

    def put_text(self, rel: str, name: str, text: str) -> None:
        """Keep a text beside a stored object (e.g. its pressure), replacing any earlier one."""
        path = self._place(rel)
        atomic_write(path.with_name(f"{path.stem}.{_checked_name(name)}.gz"), _packed(path.stem, name, text))

    def put_packed(self, rel: str, name: str, data: bytes) -> None:
        """Keep a text as another store packed it (:meth:`packed`: a Ray node's), unless one of this
        object's is there already; CorruptObjectError (nothing written) when ``data`` is not ``rel``'s
        object's ``name`` text."""
        path = self._place(rel)
        _unpacked(data, path.stem, name, rel)  # checked before anything is written
        extra = path.with_name(f"{path.stem}.{_checked_name(name)}.gz")
        if extra.is_symlink() or _stored_header(extra) != _header(path.stem, name):
            atomic_write(extra, data)

    def packed(self, rel: str) -> dict[str, bytes]:
        """The texts kept beside the object ``rel``, by name, as stored (to send to another store); those
        that are not this object's are left out."""
        path = self.path(rel)
        out = {}
        for beside in path.parent.glob(f"{path.stem}.*.gz"):
            name = beside.name[len(path.stem) + 1:-3]
            if _TEXT_NAME.fullmatch(name) and not beside.is_symlink() \
                    and _stored_header(beside) == _header(path.stem, name):
                try:
                    out[name] = read_regular(beside, MAX_TEXT_BYTES)
                except OSError:
                    continue
        return out

    def has_text(self, rel: str, name: str) -> bool:
        """Whether a text ``name`` is kept beside the object ``rel`` (whole or not: :meth:`text` checks it)."""
        try:
            path = self._place(rel)
        except CorruptObjectError:
            return False
        return path.with_name(f"{path.stem}.{_checked_name(name)}.gz").is_file()

    def text(self, rel: str, name: str) -> str | None:
        """An IR text stored beside an object (``amdgcn``, ``ptx``, ``llir``), or None when there is none.
        CorruptObjectError when it is damaged, or is not this object's (another object's text, or one
        kept without the header that ties it to its object)."""
        path = self.path(rel)
        extra = path.with_name(f"{path.stem}.{_checked_name(name)}.gz")
        try:
            self._inside(extra, f"stored {name} text of {rel}")
            data = read_regular(extra, MAX_TEXT_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CorruptObjectError(f"stored {name} text of {rel} is unusable ({exc.strerror})") from None
        return _unpacked(data, path.stem, name, rel)


def _checked_name(name: str) -> str:
    if not _TEXT_NAME.fullmatch(name):
        raise ValueError(f"not a text name: {name!r}")
    return name


def _header(sha: str, name: str) -> bytes:
    return _HEADER.format(sha=sha, name=name).encode()


def _packed(sha: str, name: str, text: str) -> bytes:
    """A text as it is kept beside the object ``sha``: its header, then the text, gzipped."""
    return gzip.compress(_header(sha, name) + text.encode(), compresslevel=1, mtime=0)


def _unpacked(data: bytes, sha: str, name: str, rel: str) -> str:
    """The text of a kept ``data`` (see :func:`_packed`); CorruptObjectError when it is damaged, larger
    than MAX_TEXT_BYTES, or not the object ``sha``'s ``name``."""
    try:
        inflater = zlib.decompressobj(wbits=31)  # gzip; bounded, so that a small planted file cannot fill memory
        raw = inflater.decompress(data, MAX_TEXT_BYTES + 1)
        if len(raw) > MAX_TEXT_BYTES or not inflater.eof:
            raise CorruptObjectError(f"stored {name} text of {rel} is corrupt (cut, or larger than any text kept)")
    except zlib.error:
        raise CorruptObjectError(f"stored {name} text of {rel} is corrupt") from None
    header = _header(sha, name)
    if not raw.startswith(header):
        raise CorruptObjectError(f"stored {name} text of {rel} is not its object's (another object's, or kept "
                                 "without the header naming its object)")
    try:
        return raw[len(header):].decode()
    except UnicodeDecodeError:
        raise CorruptObjectError(f"stored {name} text of {rel} is corrupt") from None


def _stored_header(path: Path) -> bytes | None:
    """The header line of the text kept at ``path`` (None when there is none to read)."""
    try:
        head = zlib.decompressobj(wbits=31).decompress(read_head(path, 4096), 256)
    except (OSError, zlib.error):
        return None
    return head[:head.index(b"\n") + 1] if b"\n" in head else None


def _sha256_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_regular(path, MAX_OBJECT_BYTES)).hexdigest()
    except OSError:
        return None
