"""Source paths in a kernel's line tables, named as the reader knows them, and their text.

A compiled object names its source files by the paths the compiler saw, which are rarely where the
reader stands: the temporary worktree a survey of a commit ran in (``/tmp/regsurvey-<sha>-xyz/tree/
pkg/attention.py``), the repository itself for a survey of the working tree, another checkout
altogether when Triton's own cache served a kernel compiled there first, or an installed package
(``.../site-packages/liger_kernel/ops/rms_norm.py``). The pressure keeps them as they are (it belongs to
the object); :class:`SourcePaths` names each relative to the repository of the surveyed revision (by the
longest tail of the path that is one of its files), else to the import path, and reads the text.

The paths come from the store (a kept pressure names them), which is not believed as it stands
(docs/trust.md): a text is read only from a Python source file of the repository at the surveyed revision, or of
an installed package (below a ``site-packages`` or ``dist-packages`` directory on the import path), and
only a regular file of bounded size; any other path a pressure names (``/etc/passwd``, ``~/.ssh/id_rsa``,
``../../x.py``, a FIFO) is shown by its name, without its text.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

from ..model.pressure import NO_LINE
from ..store.files import MiB, read_regular
from .checkout import file_at

MAX_SOURCE_BYTES = 16 * MiB  # a longer "source file" is not read
_WORKTREE = re.compile(r"^.*/regsurvey-[0-9a-f]{10}-[^/]+/tree/(.+)$")
_PACKAGES = re.compile(r"^.*/(?:site|dist)-packages/(.+)$")


class SourcePaths:
    """Names and texts of source files for one surveyed revision: ``root`` the repository (None outside
    one), ``commit`` the revision (None: the working tree as it is); ``checkout``: outside a repository,
    the directory surveyed (its files are read as they are)."""

    def __init__(self, root: Path | None, commit: str | None, checkout: Path | None = None):
        self.root = root
        self.commit = commit
        self.checkout = checkout if root is None else None
        self._names: dict[str, str] = {}
        self._texts: dict[str, list[str] | None] = {}

    @functools.cached_property
    def _files(self) -> frozenset[str]:
        """The repository's files at the revision."""
        if self.root is None:
            return frozenset()
        args = (["ls-tree", "-r", "--name-only", "--end-of-options", self.commit] if self.commit
                else ["ls-files", "-co", "--exclude-standard"])
        out = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True, check=False)
        return frozenset(out.stdout.splitlines()) if out.returncode == 0 else frozenset()

    def name(self, path: str) -> str:
        """``path`` as the reader names it: relative to the repository when a tail of it is one of its
        files (the longest such tail), else relative to the import path, else as it is."""
        if path not in self._names:
            self._names[path] = self._name(path)
        return self._names[path]

    def _name(self, path: str) -> str:
        m = _WORKTREE.match(path)
        if m and m[1] in self._files:
            return m[1]
        if self.root is not None and path.startswith(str(self.root).rstrip("/") + "/"):
            inside = path[len(str(self.root).rstrip("/")) + 1:]
            if inside in self._files or not self._files:
                return inside
        parts = path.split("/")
        for start in range(1, len(parts)):
            tail = "/".join(parts[start:])
            if tail in self._files:
                return tail
        m = _PACKAGES.match(path)
        if m:
            return m[1]
        return path

    def where(self, frame: tuple[str, int] | None) -> str:
        """``decode_layer/attention.py:108`` for a frame (None: ``NO_LINE``)."""
        return f"{self.name(frame[0])}:{frame[1]}" if frame else NO_LINE

    def source_line(self, frame: tuple[str, int]) -> str:
        """The frame's line of source, stripped ("" when the file or the line is not found)."""
        lines = self.read(frame[0])
        return lines[frame[1] - 1].strip() if lines is not None and 0 < frame[1] <= len(lines) else ""

    def read(self, path: str) -> list[str] | None:
        """The lines of the file ``path`` names (as the object names it) at the revision, or None."""
        if path not in self._texts:
            self._texts[path] = self._read(path)
        return self._texts[path]

    def _read(self, path: str) -> list[str] | None:
        name = self.name(path)
        if not name.endswith(".py"):  # Triton's line tables name Python files only
            return None
        if self.root is not None and name in self._files:
            text = file_at(self.root, self.commit, name) if self.commit else _text_inside(self.root, self.root / name)
            return text.splitlines() if text is not None else None
        readable = _package_dirs() + ([self.checkout.resolve()] if self.checkout is not None else [])
        candidates = [Path(path)] if Path(path).is_absolute() else []
        candidates += [directory / name for directory in readable]
        for candidate in candidates:
            for directory in readable:
                text = _text_inside(directory, candidate)
                if text is not None:
                    return text.splitlines()
        return None


def _package_dirs() -> list[Path]:
    """The directories of installed packages on the import path (where a library's kernel is read)."""
    return [Path(entry).resolve() for entry in sys.path if entry and _PACKAGE_DIR.search(entry)]


_PACKAGE_DIR = re.compile(r"/(?:site|dist)-packages/?$")


def _text_inside(directory: Path, path: Path) -> str | None:
    """The text of ``path`` when it resolves to a regular file inside ``directory`` (no ``..`` or link
    out of it) of at most MAX_SOURCE_BYTES; else None."""
    try:
        real = path.resolve()
        if not real.is_relative_to(directory.resolve()):
            return None
        return read_regular(real, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
    except (OSError, RuntimeError):  # (RuntimeError: a symlink loop, before Python 3.13)
        return None
