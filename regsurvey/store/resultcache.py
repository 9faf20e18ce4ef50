"""Content-addressed survey results: a launch whose Triton cache key was surveyed before (on any
commit or branch, by this toolchain and this version of regsurvey's readers) is not compiled again.

Entries live at ``results/<h[:2]>/<h>.json`` beside the objects, where ``h`` hashes Triton's cache
key together with :data:`READER_REVISION`. Each entry carries the question it answers (that Triton hash
and reader revision) and a checksum of its payload; the object it names is verified by sha256 on every
reuse. An entry that is corrupt, truncated, or the answer to another question (an entry file copied over
another's) is reported and recompiled, never reused. With ``REGSURVEY_CACHE_KEY`` set, entries are also
signed and only entries carrying this key's signature are believed (:mod:`.signing`: the checksum is for
accidents, the signature for writers who mean harm). Writes are atomic, so concurrent surveys on one store
do not corrupt it.
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
from ..model.compile_time import StageTimes
from ..model.figures import Figures
from ..model.results import ObjectRef, ObjectReport
from ..model.version import READER_REVISION
from .files import MiB, atomic_write, read_regular
from .objectstore import ObjectStore
from .signing import Unsigned, cache_key, canonical, sign, signature_holds, unsigned_warning

MAX_ENTRY_BYTES = 64 * MiB  # an entry larger than this (or not a regular file) was not written here


@dataclass(frozen=True)
class CachedResult:
    """What a survey row keeps of one compiled launch: the kernel, its object and what the object was
    found to be (its :class:`~regsurvey.model.results.ObjectReport`: figures and lint findings)."""

    kernel: str
    report: ObjectReport
    object: ObjectRef
    compile_s: float
    # The seconds of each stage of that compile (None: not measured, or an entry written before they were):
    # a reused build keeps the measurement of the compile that made it.
    stage_s: StageTimes | None = None

    @property
    def resources(self) -> Figures:
        """The object's figures."""
        return self.report.resources


class ResultCache:
    """Survey results by Triton cache hash."""

    def __init__(self, objects: ObjectStore, warn: Callable[[str], None] | None = None,
                 unsigned: Callable[[Unsigned], None] | None = None):
        """``warn``: where a warning goes (one line; default: stderr). A survey's worker collects them
        for the survey, whose stderr is the user's (the worker's may be a server's log). ``unsigned``:
        told of each entry ignored for its signature (default: a warning each), which a survey counts
        and names in one warning (:func:`~.signing.unsigned_warning`): a key newly set on a cache of
        unsigned entries would otherwise give a line per build. ``REGSURVEY_CACHE_KEY`` is read here
        (SigningKeyError when unusable)."""
        self.objects = objects
        self.warn = warn or _print_warning
        self.unsigned = unsigned or (lambda entry: self.warn(unsigned_warning([entry])))
        self.root = objects.root.parent / "results"
        self.key = cache_key()

    def _path(self, triton_hash: str) -> Path:
        h = entry_name(triton_hash)
        return self.root / h[:2] / f"{h}.json"

    def get(self, triton_hash: str) -> CachedResult | None:
        """The stored result, or None (absent, or unusable: then a warning, and the caller recompiles)."""
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
            payload = self._payload(json.loads(text), path.name)
            if payload["triton_hash"] != triton_hash:  # an entry file copied over another's
                self._warn(path, f"the entry of another build (Triton hash {_short(payload['triton_hash'])}, "
                                 f"not {_short(triton_hash)})")
                return None
            ref = ObjectRef(**payload["object"])
            self.objects.get(ref.path, ref.sha256)
            return _result(payload, ref)
        except _Refused as exc:
            self._warn(path, exc.problem)
        except _NotSigned as exc:
            self.unsigned(exc.entry)
        except CorruptObjectError as exc:
            self._warn(path, str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            self._warn(path, f"malformed ({type(exc).__name__})")
        return None

    def _payload(self, entry: Any, name: str) -> dict[str, Any]:
        """``entry``'s payload once it holds: its checksum (accidents), this reader revision, and this key's
        signature over the question it answers with the answer (when a key is set); else _Refused or
        _NotSigned (or KeyError, TypeError, ValueError for an entry of another shape)."""
        payload = entry["payload"]
        covered = canonical(payload)
        if entry["sha256"] != hashlib.sha256(covered).hexdigest():
            raise _Refused("checksum mismatch (corrupt or truncated)")
        if payload["reader"] != READER_REVISION:
            raise _OtherReaders(f"the entry of readers {payload['reader']} (these are {READER_REVISION})")
        if self.key is not None and not signature_holds(self.key, _question(payload["triton_hash"]), covered,
                                                        entry.get("hmac")):
            raise _NotSigned(Unsigned(name, signed="hmac" in entry))
        return payload

    def has(self, triton_hash: str) -> bool:
        """Whether an entry is stored for this kernel (unchecked: :meth:`get` checks it)."""
        return self._path(triton_hash).is_file()

    def entries(self) -> dict[str, CachedResult]:
        """Every entry of this reader revision that holds as :meth:`get` checks it (checksum, signature)
        and whose object file is present, by the Triton hash it answers (what a survey on a Ray cluster
        sends its nodes, which do not see this store; the object is checked by presence, not by sha256: a
        reuse on a node comes back here, where the object is read again). Entries ignored for their
        signature go to ``unsigned``; others that do not hold are passed over (get() says why, should a
        survey here need them)."""
        out = {}
        for path in self.root.glob("*/*.json"):
            try:
                payload = self._payload(json.loads(read_regular(path, MAX_ENTRY_BYTES)), path.name)
                ref = ObjectRef(**payload["object"])
                if not self.objects.path(ref.path).is_file():
                    continue
                out[str(payload["triton_hash"])] = _result(payload, ref)
            except _NotSigned as exc:
                self.unsigned(exc.entry)
            except (_Refused, OSError, ValueError, KeyError, TypeError):
                continue
        return out

    def _warn(self, path: Path, problem: str) -> None:
        self.warn(f"regsurvey: warning: cache entry {path.name} is {problem}; recompiling")

    def put(self, triton_hash: str, result: CachedResult) -> None:
        """Store a result (atomically), signed when a key is set."""
        payload = {"triton_hash": triton_hash, "reader": READER_REVISION, "kernel": result.kernel,
                   "report": result.report.to_dict(),
                   "object": {"path": result.object.path, "sha256": result.object.sha256},
                   "compile_s": result.compile_s,
                   "stage_s": result.stage_s.to_json() if result.stage_s is not None else None}
        covered = canonical(payload)
        entry: dict[str, Any] = {"sha256": hashlib.sha256(covered).hexdigest(), "payload": payload}
        if self.key is not None:
            entry["hmac"] = sign(self.key, _question(triton_hash), covered)
        atomic_write(self._path(triton_hash), json.dumps(entry).encode())


class _Refused(Exception):
    """An entry that does not hold (``problem``: why, in a few words)."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


class _OtherReaders(_Refused):
    """An entry another revision of regsurvey's readers wrote (in its own place, which :meth:`entries`
    passes over; in this revision's place, a copy)."""


class _NotSigned(Exception):
    """An entry without this key's signature, while a key is set."""

    def __init__(self, entry: Unsigned):
        super().__init__(entry.name)
        self.entry = entry


def entry_name(triton_hash: str) -> str:
    """The name of a kernel's entry (and of its build lock, :mod:`.inflight`): its Triton hash with the
    reader revision, hashed (a new reader reads every kernel again)."""
    return hashlib.sha256(f"{triton_hash}-{READER_REVISION}".encode()).hexdigest()


def _question(triton_hash: str) -> str:
    """What an entry answers, as its signature covers it."""
    return f"result {triton_hash} {READER_REVISION}"


def _short(triton_hash: Any) -> str:
    text = str(triton_hash)
    return text if len(text) <= 16 else f"{text[:16]}..."


def _print_warning(line: str) -> None:
    print(line, file=sys.stderr)


def _result(payload: dict, ref: ObjectRef) -> CachedResult:
    """A checked entry's payload as a result (its object ``ref`` already checked by the caller)."""
    stages = payload.get("stage_s")  # absent from entries written before stages were measured
    return CachedResult(kernel=payload["kernel"], report=ObjectReport.from_dict(payload["report"]), object=ref,
                        compile_s=payload["compile_s"],
                        stage_s=StageTimes.from_json(stages) if stages is not None else None)
