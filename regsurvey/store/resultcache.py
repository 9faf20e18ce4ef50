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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CorruptObjectError
from ..model.results import ObjectRef
from ..model.version import __version__
from .objectstore import ObjectStore, atomic_write

# Bump when what the object readers report changes: older entries then stop matching.
# readers3: NVIDIA shared memory without the reserve; exact AMD vgpr, vgpr_total; AMD occupancy with waves_per_eu
# lint2: every NVIDIA build is linted in a survey (before: only those with a stack frame)
READER_REVISION = f"{__version__}+readers3+lint2"


@dataclass(frozen=True)
class CachedResult:
    """What a survey row keeps of one compiled launch."""

    kernel: str
    resources: dict[str, int]
    object: ObjectRef
    compile_s: float
    extra: dict[str, Any]  # e.g. lint findings; opaque to the cache


class ResultCache:
    """Survey results by Triton cache hash."""

    def __init__(self, objects: ObjectStore):
        self.objects = objects
        self.root = objects.root.parent / "results"

    def _path(self, triton_hash: str) -> Path:
        h = hashlib.sha256(f"{triton_hash}-{READER_REVISION}".encode()).hexdigest()
        return self.root / h[:2] / f"{h}.json"

    def get(self, triton_hash: str) -> CachedResult | None:
        """The stored result, or None (absent, or corrupt: then a warning, and the caller recompiles)."""
        path = self._path(triton_hash)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            _warn(path, f"unreadable ({exc.strerror})")
            return None
        try:
            entry = json.loads(text)
            payload = entry["payload"]
            if entry["sha256"] != _checksum(payload):
                _warn(path, "checksum mismatch (corrupt or truncated)")
                return None
            ref = ObjectRef(**payload["object"])
            self.objects.get(ref.path, ref.sha256)
            return CachedResult(kernel=payload["kernel"], resources=payload["resources"], object=ref,
                                compile_s=payload["compile_s"], extra=payload.get("extra", {}))
        except CorruptObjectError as exc:
            _warn(path, str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            _warn(path, f"malformed ({type(exc).__name__})")
        return None

    def put(self, triton_hash: str, result: CachedResult) -> None:
        """Store a result (atomically)."""
        payload = {"triton_hash": triton_hash, "reader": READER_REVISION, "kernel": result.kernel,
                   "resources": result.resources,
                   "object": {"path": result.object.path, "sha256": result.object.sha256},
                   "compile_s": result.compile_s, "extra": result.extra}
        atomic_write(self._path(triton_hash),
                     json.dumps({"sha256": _checksum(payload), "payload": payload}).encode())


def _checksum(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _warn(path: Path, problem: str) -> None:
    print(f"regsurvey: warning: cache entry {path.name} is {problem}; recompiling", file=sys.stderr)
    return None
