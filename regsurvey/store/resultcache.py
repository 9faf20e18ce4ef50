"""Content-addressed survey results: a launch whose Triton cache key was surveyed before (on any
commit or branch, by this toolchain and this version of regsurvey's readers) is not compiled again.

Entries live at ``results/<h[:2]>/<h>.json`` beside the objects, where ``h`` hashes Triton's cache
key together with :data:`READER_REVISION`. Each entry carries a checksum of its own payload, and the
object it names is verified by sha256 on every reuse: a corrupt or truncated entry is reported and
recompiled, never reused. Writes are atomic, so concurrent surveys on one store do not corrupt it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CorruptObjectError
from ..model.results import ObjectRef, ObjectReport
from ..model.version import READER_REVISION
from .files import MiB, atomic_write, read_regular
from .objectstore import ObjectStore

MAX_ENTRY_BYTES = 64 * MiB  # an entry larger than this (or not a regular file) was not written here


@dataclass(frozen=True)
class CachedResult:
    """What a survey row keeps of one compiled launch: the kernel, its object and what the object was
    found to be (its :class:`~regsurvey.model.results.ObjectReport`: figures and lint findings)."""

    kernel: str
    report: ObjectReport
    object: ObjectRef
    compile_s: float

    @property
    def resources(self) -> dict[str, int]:
        """The object's figures."""
        return self.report.resources


class ResultCache:
    """Survey results by Triton cache hash."""

    def __init__(self, objects: ObjectStore, warn: Callable[[str], None] | None = None):
        """``warn``: where a warning goes (one line; default: stderr). A survey's worker collects them
        for the survey, whose stderr is the user's (the worker's may be a server's log)."""
        self.objects = objects
        self.warn = warn or _print_warning
        self.root = objects.root.parent / "results"

    def _path(self, triton_hash: str) -> Path:
        h = entry_name(triton_hash)
        return self.root / h[:2] / f"{h}.json"

    def get(self, triton_hash: str) -> CachedResult | None:
        """The stored result, or None (absent, or corrupt: then a warning, and the caller recompiles)."""
        path = self._path(triton_hash)
        try:
            text = read_regular(path, MAX_ENTRY_BYTES).decode()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(path, f"unreadable ({exc.strerror})")
            return None
        except UnicodeDecodeError:
            self._warn(path, "not text (corrupt)")
            return None
        try:
            entry = json.loads(text)
            payload = entry["payload"]
            if entry["sha256"] != _checksum(payload):
                self._warn(path, "checksum mismatch (corrupt or truncated)")
                return None
            ref = ObjectRef(**payload["object"])
            self.objects.get(ref.path, ref.sha256)
            return _result(payload, ref)
        except CorruptObjectError as exc:
            self._warn(path, str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            self._warn(path, f"malformed ({type(exc).__name__})")
        return None

    def has(self, triton_hash: str) -> bool:
        """Whether an entry is stored for this kernel (unchecked: :meth:`get` checks it)."""
        return self._path(triton_hash).is_file()

    def entries(self) -> dict[str, CachedResult]:
        """Every entry of this reader revision whose checksum holds and whose object file is present, by
        Triton hash (what a survey on a Ray cluster sends its nodes, which do not see this store; an entry
        is checked as :meth:`get` checks it, but the object by presence, not by sha256: a reuse on a node
        comes back here, where the object is read again)."""
        out = {}
        for path in self.root.glob("*/*.json"):
            try:
                entry = json.loads(read_regular(path, MAX_ENTRY_BYTES))
                payload = entry["payload"]
                if payload.get("reader") != READER_REVISION or entry["sha256"] != _checksum(payload):
                    continue
                ref = ObjectRef(**payload["object"])
                if not self.objects.path(ref.path).is_file():
                    continue
                out[str(payload["triton_hash"])] = _result(payload, ref)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # (get() says why, should a survey here need it)
        return out

    def _warn(self, path: Path, problem: str) -> None:
        self.warn(f"regsurvey: warning: cache entry {path.name} is {problem}; recompiling")

    def put(self, triton_hash: str, result: CachedResult) -> None:
        """Store a result (atomically)."""
        payload = {"triton_hash": triton_hash, "reader": READER_REVISION, "kernel": result.kernel,
                   "report": result.report.to_dict(),
                   "object": {"path": result.object.path, "sha256": result.object.sha256},
                   "compile_s": result.compile_s}
        atomic_write(self._path(triton_hash),
                     json.dumps({"sha256": _checksum(payload), "payload": payload}).encode())


def entry_name(triton_hash: str) -> str:
    """The name of a kernel's entry (and of its build lock, :mod:`.inflight`): its Triton hash with the
    reader revision, hashed (a new reader reads every kernel again)."""
    return hashlib.sha256(f"{triton_hash}-{READER_REVISION}".encode()).hexdigest()


def _checksum(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _print_warning(line: str) -> None:
    print(line, file=sys.stderr)


def _result(payload: dict, ref: ObjectRef) -> CachedResult:
    """A checked entry's payload as a result (its object ``ref`` already checked by the caller)."""
    return CachedResult(kernel=payload["kernel"], report=ObjectReport.from_dict(payload["report"]), object=ref,
                        compile_s=payload["compile_s"])
