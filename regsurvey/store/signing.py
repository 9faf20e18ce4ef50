"""What a stored file proves, and to whom.

Two layers, for two kinds of harm:

- **sha256 checksums** (always): against accidents. A file cut by a crash, a bit flipped on disk, a pair
  left unmatched: anyone can recompute a checksum, so it proves nothing against a writer who means harm.
- **HMAC-SHA256 signatures** (when ``REGSURVEY_CACHE_KEY`` is set): against writers without the key. A
  shared results directory or store (CI jobs, an NFS directory of a team) may be written by people and
  jobs that should not decide what regsurvey believes; with the key set, what is written is signed and
  what is read must carry this key's signature, else it is ignored and made again.

Each signature covers what the file answers (``what``: an entry's Triton hash and reader revision, a
survey's commit, target and selection) with its bytes, so a signed file moved to another question's
place does not hold there either. This module imports nothing of regsurvey's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..model.words import count

CACHE_KEY_VAR = "REGSURVEY_CACHE_KEY"
# A key anyone reading the cache could guess by trying candidates against one entry's signature would
# sign nothing: at least 128 bits of hex.
MIN_KEY_CHARS = 32


class SigningKeyError(ValueError):
    """``REGSURVEY_CACHE_KEY`` holds no usable key; one-line message."""


def cache_key() -> bytes | None:
    """The signing key ``REGSURVEY_CACHE_KEY`` holds (its UTF-8 bytes), or None when unset or empty (a CI
    secret a job is not given, e.g. in a fork's pull request, reads empty: that job neither signs nor
    checks signatures); SigningKeyError when it is too short to keep a secret."""
    value = os.environ.get(CACHE_KEY_VAR, "")
    if not value:
        return None
    if len(value) < MIN_KEY_CHARS:
        raise SigningKeyError(f"{CACHE_KEY_VAR} holds {count(len(value), 'character')}; a signing key needs at least "
                              f"{MIN_KEY_CHARS} (e.g. the output of `openssl rand -hex 32`)")
    return value.encode()


def canonical(payload: Any) -> bytes:
    """The bytes a stored JSON payload's checksum and signature cover (keys sorted)."""
    return json.dumps(payload, sort_keys=True).encode()


def sign(key: bytes, what: str, data: bytes) -> str:
    """The HMAC-SHA256 (hex) of ``data`` as the answer to ``what``."""
    return hmac.new(key, what.encode() + b"\0" + data, hashlib.sha256).hexdigest()


def signature_holds(key: bytes, what: str, data: bytes, signature: object) -> bool:
    """Whether ``signature`` is ``key``'s for ``data`` as the answer to ``what`` (compared in constant time)."""
    return isinstance(signature, str) and hmac.compare_digest(sign(key, what, data), signature)


@dataclass(frozen=True)
class Unsigned:
    """A stored result ignored for its signature while a key is set: ``name`` (its file's name) and
    ``signed`` (False: it carries none; True: it carries another key's, or was altered after signing)."""

    name: str
    signed: bool

    @property
    def problem(self) -> str:
        """What is wrong with it, in a few words."""
        return "signed with another key or altered since" if self.signed else "unsigned"


def unsigned_warning(entries: Collection[Unsigned]) -> str:
    """The one warning a survey gives for the result-cache entries it ignored for their signature: how
    many, why, and the first few by name."""
    ordered = sorted(entries, key=lambda e: e.name)
    counts = [f"{n} {problem}" for problem in ("unsigned", "signed with another key or altered since")
              if (n := sum(e.problem == problem for e in ordered))]
    named = ", ".join(e.name for e in ordered[:3]) + (f" and {len(ordered) - 3} more" if len(ordered) > 3 else "")
    noun = "entry" if len(ordered) == 1 else "entries"
    return (f"regsurvey: warning: {len(ordered)} cache {noun} without a valid {CACHE_KEY_VAR} signature "
            f"({', '.join(counts)}: {named}) ignored; recompiling")
