"""Keys not run again: each key's rows kept with what its kind body read (:mod:`.key_reads`), and taken as
they were by a later survey where everything it read still holds.

Kept in the store, ``keyreads/<namespace>/<target>/<key>.json``, per *namespace*: the interpreter, where
it imports from, regsurvey's own sources, the installed Triton and torch (``server.identity``), the
survey's toolchain block and the reader revision; any of them changed, no record applies. The module
entries many keys share are kept once, ``keyreads/modules/<digest>.json``, by the digest of their content.
With ``REGSURVEY_CACHE_KEY`` set, a record is signed and one without this key's signature is not taken (a
shared store written by others: ``store.signing``). A record that cannot be read is not taken either: the
key runs, and its record is written again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import CorruptObjectError
from ..model.keys import Key
from ..model.results import Row, SaidOnce, Status
from ..model.version import READER_REVISION
from ..store.files import WriteError, atomic_write, read_regular
from ..store.objectstore import ObjectStore
from ..store.signing import SigningKeyError, cache_key, canonical, sign, signature_holds
from . import server
from .copies import key_id
from .key_reads import FileHashes, KeyReads, entries_digest, still_holds

MAX_RECORD_BYTES = 64 << 20


def namespace(toolchain: Mapping[str, Any]) -> str:
    """What every record of a survey with ``toolchain`` (its toolchain block) shares."""
    text = json.dumps([server.identity(), toolchain, READER_REVISION], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class KeyRecords:
    """The records of one namespace in a store (``root``: the store's directory)."""

    def __init__(self, root: Path, space: str):
        self.root = root / "keyreads"
        self.space = space
        try:
            self.signing = cache_key()
        except SigningKeyError:
            self.signing = None
        self._entries: dict[str, dict[str, str] | None] = {}

    def _path(self, key: Key) -> Path:
        name = hashlib.sha256(key.id.encode()).hexdigest()[:32]
        return self.root / self.space / key.target / f"{name}.json"

    def _what(self, key: Key) -> str:
        return f"key record {self.space} {key.target} {key.id}"

    def get(self, key: Key) -> tuple[KeyReads, list[Row], list[SaidOnce]] | None:
        """``key``'s record: what its body read, its rows, and what its kind said once per process on its
        target in the survey that ran it; None (none, damaged, unsigned where signing is on, another key's)."""
        try:
            data = json.loads(read_regular(self._path(key), MAX_RECORD_BYTES))
            body = data["body"]
            if body["key"] != key.id or body["target"] != key.target:
                return None
            if self.signing is not None and not signature_holds(self.signing, self._what(key), canonical(body),
                                                                data.get("signature")):
                return None
            entries = self._module_entries(str(body["reads"]["modules"]))
            if entries is None:
                return None
            reads = KeyReads.from_json(body["reads"], entries)
            rows = [Row.from_dict(r, [key.target]) for r in body["rows"]]
            said = [SaidOnce.from_dict(s) for s in body.get("said_once") or ()]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (reads, rows, said) if rows else None

    def _module_entries(self, digest: str) -> dict[str, str] | None:
        if digest not in self._entries:
            try:
                entries = json.loads(read_regular(self.root / "modules" / f"{digest[:64]}.json", MAX_RECORD_BYTES))
                ok = isinstance(entries, dict) and entries_digest(entries) == digest
                self._entries[digest] = {str(k): str(v) for k, v in entries.items()} if ok else None
            except (OSError, ValueError):
                self._entries[digest] = None
        return self._entries[digest]

    def put(self, key: Key, reads: KeyReads, rows: list[Row], said_once: Iterable[SaidOnce] = ()) -> None:
        """Keep ``key``'s rows with what its body read and what its kind said once per process on its target
        (``said_once``: the survey's; a key taken later brings them back). A store that cannot be written
        keeps none."""
        body = {"key": key.id, "target": key.target, "reads": reads.to_json(), "rows": [r.to_dict() for r in rows],
                "said_once": [s.to_dict() for s in said_once if (s.kind, s.target) == (key.kind, key.target)]}
        record: dict[str, Any] = {"body": body}
        if self.signing is not None:
            record["signature"] = sign(self.signing, self._what(key), canonical(body))
        try:
            modules = self.root / "modules" / f"{reads.modules}.json"
            if not modules.exists():
                atomic_write(modules, json.dumps(reads.module_entries, sort_keys=True).encode())
            atomic_write(self._path(key), json.dumps(record).encode())
        except (WriteError, OSError):
            return


def recordable(rows: Iterable[Row]) -> bool:
    """Whether a key's rows are what its inputs make: none failed for a cause of the moment (a time-out, a
    worker lost, a full disk) or is a known-intermittent failure."""
    rows = list(rows)
    return bool(rows) and not any(r.transient or r.status is Status.FLAKY or r.flaky for r in rows)


def reused_rows(records: KeyRecords, keys: list[Key], root: Path, environ: Mapping[str, str],
                objects: ObjectStore) -> tuple[dict[tuple[str, str], list[Row]], set[SaidOnce]]:
    """The keys whose record still holds for the checkout at ``root`` and ``environ`` (the workers'), and
    whose builds' objects are in ``objects`` whole, with their rows as recorded (``reused``: the builds are
    an earlier compile's), and what their kinds said once per process."""
    hashes = FileHashes()
    modules_hold: dict[str, bool] = {}
    taken: dict[tuple[str, str], list[Row]] = {}
    said: set[SaidOnce] = set()
    for key in keys:
        found = records.get(key)
        if found is None:
            continue
        reads, rows, once = found
        if still_holds(reads, root, environ, hashes, modules_hold) is None and all(_whole(objects, r) for r in rows):
            taken[key_id(key)] = [replace(r, reused=r.ok or r.reused) for r in rows]
            said.update(once)
    return taken, said


def _whole(objects: ObjectStore, row: Row) -> bool:
    """Whether a row's object is in the store as it was made (a damaged one: the key runs and makes it again)."""
    if row.object is None:
        return True
    try:
        objects.get(row.object.path, row.object.sha256)
    except CorruptObjectError:
        return False
    return True
