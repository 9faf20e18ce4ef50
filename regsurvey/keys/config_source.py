"""Where a launch's config came from, when the launcher read it from a JSON file: vLLM's and SGLang's tuned
MoE configs (``E=256,N=256,device_name=NVIDIA_H200,....json``: an entry per token count, each with the block
sizes, ``num_warps`` and ``num_stages`` the launcher passes as they are).

While ``regsurvey fix`` surveys a variant, ``json.load`` hands the launcher documents whose mappings note
when their items are read (:class:`_NotingDict`); the entry the launcher read whose values the changed
launch was passed, unchanged, is the launch's config (:func:`source_of`), and the variant is written as a
patch to that file (:func:`patch_text`). Nothing else changes: every other ``json.load`` returns what it
returns, and the documents are mappings as before (``**config``, ``dict(config)`` and ``json.dumps`` work).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..source_names import source_name

PathPart = str | int  # a key of a JSON object, or an index of an array


@dataclass(frozen=True)
class ConfigSource:
    """A launch's config entry in a JSON file, and that entry with a variant's settings: ``file`` as reports
    name it (:func:`regsurvey.source_names.source_name`), ``opened`` as the launcher opened it, ``path`` the
    keys from the document's root to the entry, ``patch`` a unified diff of the file ("" where the file
    cannot be rewritten with its own layout)."""

    file: str
    opened: str
    path: tuple[PathPart, ...]
    entry: dict[str, Any]
    changed: dict[str, Any]
    patch: str

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (a row's ``config_source``)."""
        return {"file": self.file, "opened": self.opened, "path": list(self.path), "entry": self.entry,
                "changed": self.changed, "patch": self.patch}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfigSource:
        """Parse :meth:`to_dict`'s form."""
        return cls(str(data["file"]), str(data["opened"]), tuple(data["path"]), dict(data["entry"]),
                   dict(data["changed"]), str(data["patch"]))


class _NotingDict(dict):
    """A JSON object that notes, in the document's ``reads``, when its items are read."""

    def __init__(self, items: dict[str, Any], file: str, path: tuple[PathPart, ...], reads: list[_NotingDict]):
        super().__init__(items)
        self.file, self.path, self._reads = file, path, reads

    def _note(self) -> None:
        if not self._reads or self._reads[-1] is not self:
            self._reads.append(self)

    def __getitem__(self, key: Any) -> Any:
        self._note()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note()
        return super().get(key, default)

    def __iter__(self) -> Iterator[Any]:  # also what ``**entry`` and ``dict(entry)`` read through
        self._note()
        return super().__iter__()

    def keys(self) -> Any:
        self._note()
        return super().keys()

    def items(self) -> Any:
        self._note()
        return super().items()

    def values(self) -> Any:
        self._note()
        return super().values()

    def copy(self) -> dict[str, Any]:
        self._note()
        return dict(super().items())

    def __reduce__(self) -> Any:  # pickled (a launcher's cache on disk) as the plain dict it reads as
        return (dict, (dict(super().items()),))


def _noting(value: Any, file: str, path: tuple[PathPart, ...], reads: list[_NotingDict]) -> Any:
    if isinstance(value, dict):
        return _NotingDict({k: _noting(v, file, (*path, k), reads) for k, v in value.items()}, file, path, reads)
    if isinstance(value, list):
        return [_noting(v, file, (*path, i), reads) for i, v in enumerate(value)]
    return value


@contextlib.contextmanager
def noting_json_reads(reads: list[Any]) -> Iterator[None]:
    """While inside, a ``json.load`` of a file (an object with a ``name`` naming a file) returns a document
    whose objects note their reads in ``reads``, in order."""
    original = json.load

    def load(fp: Any, *args: Any, **kwargs: Any) -> Any:
        document = original(fp, *args, **kwargs)
        name = getattr(fp, "name", None)
        if not isinstance(name, str) or not os.path.isfile(name) or args or kwargs:
            return document
        return _noting(document, os.path.abspath(name), (), reads)

    json.load = load
    try:
        yield
    finally:
        json.load = original


def source_of(reads: list[Any], passed: dict[str, Any], settings: tuple[tuple[str, Any], ...]) -> _NotingDict | None:
    """The entry, of those read (latest first), that holds the launch's config: at least two of its items
    are arguments the launch was ``passed`` (by name) and every such item equals the value passed; None
    where no entry does. ``settings`` (the variant's) must not all be absent from it."""
    for entry in reversed(reads):
        shared = [name for name in dict.keys(entry) if name in passed]
        if len(shared) < 2 or any(dict.__getitem__(entry, name) != passed[name] for name in shared):
            continue
        if settings and not any(name in dict.keys(entry) for name, _ in settings):
            continue
        return entry
    return None


def config_source(entry: _NotingDict, settings: tuple[tuple[str, Any], ...], checkout: str,
                  import_path: list[str]) -> ConfigSource:
    """``entry`` (a launch's config, :func:`source_of`) with ``settings`` written into it, and the patch."""
    plain = {k: _plain(v) for k, v in dict.items(entry)}
    changed = dict(settings)
    name = source_name(entry.file, checkout, import_path)
    return ConfigSource(name, entry.file, entry.path, plain, changed, patch_text(entry.file, name, entry.path,
                                                                                 changed))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def patch_text(file: str, name: str, path: tuple[PathPart, ...], changed: dict[str, Any]) -> str:
    """A unified diff of ``file`` (``a/NAME``, ``b/NAME``) with ``changed`` written into the object at
    ``path``: the document written again with the layout it has (an indentation of 1 to 8 spaces, or
    none), so that only the changed lines differ; "" where no such layout writes the file as it is."""
    try:
        with open(file, encoding="utf-8") as f:
            text = f.read()
        document = json.loads(text)
    except (OSError, ValueError):
        return ""
    layout = _layout(document, text)
    if layout is None:
        return ""
    indent, ending = layout
    target = document
    for part in path:
        target = target[part]
    target.update(changed)
    new = json.dumps(document, indent=indent) + ending
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))


def _layout(document: Any, text: str) -> tuple[int | None, str] | None:
    """The indentation and the ending that write ``document`` as ``text`` exactly, or None."""
    for indent in (4, 2, None, 1, 3, 8):
        written = json.dumps(document, indent=indent)
        if text.startswith(written) and text[len(written):].strip() == "":
            return indent, text[len(written):]
    return None
