"""Source paths in a kernel's line tables, named as the reader knows them, and their text.

A compiled object names its source files by the paths the compiler saw, which are rarely where the
reader stands: the temporary worktree a survey of a commit ran in (``/tmp/regsurvey-<sha>-xyz/tree/
pkg/attention.py``), the repository itself for a survey of the working tree, another checkout
altogether when Triton's own cache served a kernel compiled there first, or a library wherever it was
imported from (``.../site-packages/liger_kernel/ops/rms_norm.py``, a ``PYTHONPATH`` directory, another
machine's). The pressure keeps them as they are (it belongs to the object); :class:`SourcePaths` names
each the way every report does (:mod:`regsurvey.source_names`): the repository's own files relative to its
root (a path of another checkout by the longest tail of it that is one of the repository's files at the
surveyed revision), a library's relative to the directory it was imported from; and reads the text.
Two surveys' builds are compared on these names (``where``), so a line is the same line whichever
directory each side imported it from.

The paths come from the store (a kept pressure names them), which is not believed as it stands
(docs/trust.md): a text is read only from a Python source file of the repository at the surveyed revision, or of
an installed package (below a ``site-packages`` or ``dist-packages`` directory on the import path), and
only a regular file of bounded size; any other path a pressure names (``/etc/passwd``, ``~/.ssh/id_rsa``,
``../../x.py``, a FIFO) is shown by its name, without its text.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from ..model.pressure import NO_LINE
from ..source_names import PACKAGE_DIRS, checkout_name, imported_name, installed_name, worktree_name
from ..store.files import MiB, read_regular
from .checkout import file_at

MAX_SOURCE_BYTES = 16 * MiB  # a longer "source file" is not read


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
        """``path`` as every report names it (``source_names.source_name``): an installed library's
        below its ``site-packages``; inside the repository (or, outside one, the surveyed directory) or a
        survey's worktree, relative to it; else the longest tail of it that is one of the repository's
        files (another checkout's); else relative to the directory it was imported from; else as it is."""
        if path not in self._names:
            self._names[path] = self._name(path)
        return self._names[path]

    def _name(self, path: str) -> str:
        if not os.path.isabs(path):
            return path
        root = self.root if self.root is not None else self.checkout
        named = (installed_name(path) or (checkout_name(path, root) if root is not None else None)
                 or worktree_name(path))
        if named is not None:
            return named
        parts = path.split("/")
        for start in range(1, len(parts)):
            tail = "/".join(parts[start:])
            if tail in self._files:
                return tail
        return imported_name(path, sys.path) or path

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
    return [Path(entry).resolve() for entry in sys.path if entry and Path(entry).name in PACKAGE_DIRS]


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
