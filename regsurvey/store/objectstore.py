"""Content-addressed storage of compiled objects: ``objects/<sha[:2]>/<sha>.<ext>``.

Writes are atomic (a temporary file in the same directory, then ``os.replace``), so two surveys on one
store never leave a half-written object; reads verify the hash.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from ..errors import CorruptObjectError
from .files import atomic_write


class ObjectStore:
    """Compiled objects by sha256, with their IR texts (gzip) beside them."""

    def __init__(self, root: Path):
        self.root = Path(root).absolute()  # workers run in the checkout: never relative to their cwd

    def relpath(self, sha: str, ext: str) -> str:
        """Path of an object relative to the store root's parent (as recorded in rows)."""
        return f"objects/{sha[:2]}/{sha}.{ext}"

    def put(self, binary: bytes, ext: str, extras: dict[str, str] | None = None) -> tuple[str, str]:
        """Store an object (and its texts, e.g. amdgcn); return (sha256, relative path)."""
        sha = hashlib.sha256(binary).hexdigest()
        rel = self.relpath(sha, ext)
        path = self.root.parent / rel
        if not (path.exists() and _sha256_file(path) == sha):
            atomic_write(path, binary)
        for name, text in (extras or {}).items():
            extra = path.with_name(f"{sha}.{name}.gz")
            if not extra.exists():
                atomic_write(extra, gzip.compress(text.encode(), compresslevel=1, mtime=0))
        return sha, rel

    def get(self, rel: str, sha: str) -> bytes:
        """Read an object back, verifying its hash (CorruptObjectError if missing or altered)."""
        path = self.root.parent / rel
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CorruptObjectError(f"stored object {rel} is missing ({exc.strerror})") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise CorruptObjectError(f"stored object {rel} does not match its sha256 (corrupt or truncated)")
        return data

    def put_text(self, rel: str, name: str, text: str) -> None:
        """Keep a text beside a stored object (e.g. its lint findings), replacing any earlier one."""
        path = self.root.parent / rel
        atomic_write(path.with_name(f"{path.name.rsplit('.', 1)[0]}.{name}.gz"),
                     gzip.compress(text.encode(), compresslevel=1, mtime=0))

    def text(self, rel: str, name: str) -> str | None:
        """An IR text stored beside an object (``amdgcn``, ``ptx``, ``llir``), or None."""
        path = self.root.parent / rel
        extra = path.with_name(f"{path.name.rsplit('.', 1)[0]}.{name}.gz")
        try:
            return gzip.decompress(extra.read_bytes()).decode()
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
            if isinstance(exc, FileNotFoundError):
                return None
            raise CorruptObjectError(f"stored {name} text of {rel} is corrupt") from None


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
