"""Where in the repository a build comes from, for code scanning: the kernel's launch site, else the keys
file that defines its kind.

A survey records the launch site relative to its checkout when inside it (``Row.where``); surveys made
before recorded the path the worker saw, under a temporary worktree (since removed) for a commit. Either
is mapped back to the repository by the longest trailing part of the path that names a file there. A
launch made in a library outside the repository (an installed package's launcher) is located at the
project's call into it (``Row.project_where``: the kind body's line), the library's frame said beside it,
named as every report names a source file (``source_names``): relative to the directory the library was
imported from, so that the SARIF of one machine's run says what another's says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from ..model.comparison import RowComparison
from ..model.results import Row
from ..source_names import checkout_name, site_name, source_name, worktree_name

# "kind body raised at f:12: ..." or, after launching, "kind body raised after 2 launches at f:12: ...".
_RAISED_AT = re.compile(r"raised (?:after \d+ launch(?:es)? )?at (\S+?):(\d+)")


@dataclass(frozen=True)
class Site:
    """A file of the repository (a POSIX path relative to its root) and a line (None: the whole file);
    ``via``: where the launch is in a library outside the repository, the library's frame (``file:line``)
    that the line called into."""

    path: str
    line: int | None = None
    via: str | None = None


def repository_path(path: str, repo: Path) -> str | None:
    """``path`` as a POSIX path relative to ``repo``, when it names a file of the repository."""
    # Inside the checkout or a survey's worktree of a commit: relative to it.
    named = PurePath(checkout_name(path, repo) or worktree_name(path) or path)
    if not named.is_absolute() and (repo / named).is_file():
        return named.as_posix()
    parts = PurePath(path).parts
    for i in range(1, len(parts)):  # longest suffix first
        candidate = PurePath(*parts[i:])
        if (repo / candidate).is_file():
            return candidate.as_posix()
    return None


def _split(where: str) -> tuple[str, int | None]:
    path, _, line = where.rpartition(":")
    if path and line.isdigit():
        return path, int(line)
    return where, None


def _keys_file(kind: str, repo: Path) -> str | None:
    # The file that defines the kind: a body named like it, or a kind(name="...") naming it.
    pattern = re.compile(rf"^\s*def\s+{re.escape(kind)}\s*\(|name\s*=\s*[\"']{re.escape(kind)}[\"']", re.M)
    keys = repo / "keys"
    files = sorted(p for p in keys.glob("*.py") if not p.name.startswith("_")) if keys.is_dir() else []
    for path in files:
        try:
            if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                return path.relative_to(repo).as_posix()
        except OSError:
            continue
    return files[0].relative_to(repo).as_posix() if len(files) == 1 else None


def library_frame(where: str) -> str:
    """A frame in a library as messages name it: relative to the directory the library was imported from
    (``vllm/model_executor/layers/fused_moe/fused_moe.py:512``, from ``site-packages`` or a ``PYTHONPATH``
    directory alike: ``source_names.source_name``; a survey's row already names it so, an older one's
    full path is named here), else as it is."""
    return site_name(where) if _split(where)[1] is not None else source_name(where)


def _launch_sites(row: Row | None) -> list[tuple[str, int | None, str | None]]:
    # A launch in a library: the project's call into it, the library's frame beside it.
    if row is None or not row.where:
        return []
    if row.project_where:
        return [(*_split(row.project_where), library_frame(row.where))]
    return [(*_split(row.where), None)]


def build_site(row: RowComparison, repo: Path) -> Site:
    """The launch site of the head's build (for a launch in a library outside the repository: the
    project's call into it, the library's frame as ``via``); else where its kind body raised; else the
    base's launch site; else the keys file of its kind; else the ``keys`` directory."""
    candidates = _launch_sites(row.after)
    raised = _RAISED_AT.search(row.error or "")
    if raised:
        candidates.append((raised[1], int(raised[2]), None))
    candidates += _launch_sites(row.before)
    for path, line, via in candidates:
        found = repository_path(path, repo)
        if found is not None:
            return Site(found, line, via)
    keys_file = _keys_file(row.kind, repo)
    return Site(keys_file) if keys_file else Site("keys")
