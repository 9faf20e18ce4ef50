"""The one name of a source file in every report, wherever its code was imported from.

A compiled kernel's line tables, a launch's stack and a traceback name a file by the path Python imported
it from: the checkout a survey ran in (for a commit, a temporary worktree, ``/tmp/regsurvey-<sha>-xyz/
tree/``, another on every run), or wherever a library lies: a ``site-packages`` directory, a directory on
``PYTHONPATH`` or named by a ``.pth`` file, an editable install's source tree, another machine's paths for
a survey made there. Two surveys of the same code compare their builds' source lines by name, so that name
must depend on none of these: the surveyed repository's own files are named relative to the checkout's
root (``decode/attention.py``), a library's relative to the directory its top-level package was imported
from (``liger_kernel/ops/rms_norm.py``, whether that lies in ``site-packages`` or in ``/tmp/libs``).

Each rule is a function returning the name or None; :func:`source_name` takes the first that applies.
Standard library only, importing nothing of regsurvey's: the worker names a launch's site with it
(``keys.keyfiles.shown_site``), a comparison its builds' source lines (``repo.sources.SourcePaths``), the
gate a library's frame (``check.sites``).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable

# The directories installers put packages in; a path below one is named from there on.
PACKAGE_DIRS = ("site-packages", "dist-packages")
# Where a survey of a commit checks it out (``repo.checkout.commit_checkout``: ``mkdtemp(prefix=
# f"regsurvey-{sha[:10]}-") / "tree"``), on this machine or the one that made the survey.
_WORKTREE = re.compile(r"^(?:.*/)?regsurvey-[0-9a-f]{10}-[^/]+/tree/(.+)$")


def source_name(path: str, checkout: str | os.PathLike[str] | None = None, import_path: Iterable[str] = ()) -> str:
    """``path`` (a source file as a compiled object, a stack or a traceback names it) as reports name it,
    by the first rule that applies: below a ``site-packages`` or ``dist-packages`` directory, relative to
    it (:func:`installed_name`: an installed library, even in a virtual environment inside the checkout);
    inside ``checkout`` (the surveyed repository's root), relative to it (:func:`checkout_name`); inside a
    survey's temporary worktree, relative to the worktree (:func:`worktree_name`); a module of a package,
    relative to the directory its top-level package was imported from (:func:`imported_name`, which also
    reads ``import_path``: ``sys.path`` where the code was imported); else as it is: a relative path is a
    name already, and ``<string>`` names no file."""
    if not os.path.isabs(path):
        return path
    return (installed_name(path) or (checkout_name(path, checkout) if checkout is not None else None)
            or worktree_name(path) or imported_name(path, import_path) or path)


def site_name(site: str, checkout: str | os.PathLike[str] | None = None, import_path: Iterable[str] = ()) -> str:
    """A ``file:line`` with its file named by :func:`source_name` (anything else as it is)."""
    file, sep, line = site.rpartition(":")
    if not sep or not line.isdigit() or not file:
        return site
    return f"{source_name(file, checkout, import_path)}:{line}"


def checkout_name(path: str, checkout: str | os.PathLike[str]) -> str | None:
    """``path`` relative to ``checkout`` when inside it, ``checkout`` taken as given and resolved (a
    temporary directory behind a symbolic link), ``path`` (absolute) as given and resolved; else None."""
    if not os.path.isabs(path):
        return None
    roots = {os.path.abspath(checkout), os.path.realpath(checkout)}
    for candidate in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
        for root in roots:
            inside = _below(candidate, root)
            if inside is not None:
                return inside
    return None


def worktree_name(path: str) -> str | None:
    """``path`` relative to the temporary worktree a survey of a commit ran in (this machine's or
    another's, since removed) when inside one; else None."""
    m = _WORKTREE.match(posixpath.normpath(path))
    return m[1] if m else None


def installed_name(path: str) -> str | None:
    """``path`` relative to the last ``site-packages`` or ``dist-packages`` directory it lies below (an
    installed package's file, on any machine); else None."""
    parts = posixpath.normpath(path).split("/")
    below = [i for i, part in enumerate(parts[:-1]) if part in PACKAGE_DIRS]
    return "/".join(parts[below[-1] + 1:]) if below else None


def imported_name(path: str, import_path: Iterable[str] = ()) -> str | None:
    """``path`` relative to the directory its module was imported from: for a module of a package found
    here, the directory holding its top-level package (the outermost directory up from the file's that
    holds an ``__init__.py``); else (a top-level module, a namespace package) the longest directory of
    ``import_path`` holding it. None when neither says."""
    root = package_root(path)
    if root is not None:
        return _below(os.path.normpath(path), root)
    entries = [os.path.normpath(e) for e in import_path if e and os.path.isabs(e) and os.path.dirname(e) != e]
    found = [inside for entry in entries if (inside := _below(os.path.normpath(path), entry)) is not None]
    return min(found, key=len) if found else None


def package_root(path: str) -> str | None:
    """The directory ``path``'s top-level package lies in, as Python found it when importing the module:
    the parent of the outermost directory, up from the file's own, that holds an ``__init__.py``. None
    when the file's directory holds none (a top-level module, a namespace package, a file not here)."""
    directory = os.path.dirname(os.path.normpath(path))
    if not os.path.isfile(os.path.join(directory, "__init__.py")):
        return None
    while (parent := os.path.dirname(directory)) != directory and os.path.isfile(os.path.join(parent, "__init__.py")):
        directory = parent
    return os.path.dirname(directory)


def _below(path: str, root: str) -> str | None:
    """``path`` relative to the directory ``root`` (both absolute and normalized), as a POSIX path, when
    strictly inside it; else None."""
    prefix = root.rstrip("/") + "/"
    return posixpath.normpath(path[len(prefix):]) if path.startswith(prefix) and len(path) > len(prefix) else None
