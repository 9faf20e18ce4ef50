"""The object store: content addressing and refusal of corrupt entries."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from regsurvey.errors import CorruptObjectError
from regsurvey.store.objectstore import ObjectStore


def test_put_get_and_texts(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    sha, rel = store.put(b"\x7fELF object", "hsaco", extras={"amdgcn": "s_endpgm\n"})
    assert sha == hashlib.sha256(b"\x7fELF object").hexdigest()
    assert rel == f"objects/{sha[:2]}/{sha}.hsaco"
    assert store.get(rel, sha) == b"\x7fELF object"
    assert store.text(rel, "amdgcn") == "s_endpgm\n"
    assert store.text(rel, "ptx") is None
    assert not list((tmp_path / "objects").rglob("*.tmp"))


def test_corrupt_and_missing_objects_are_refused(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    sha, rel = store.put(b"payload", "cubin")
    (tmp_path / rel).write_bytes(b"payl")  # truncated
    with pytest.raises(CorruptObjectError, match="does not match its sha256"):
        store.get(rel, sha)
    # put() repairs a damaged entry instead of trusting it.
    store.put(b"payload", "cubin")
    assert store.get(rel, sha) == b"payload"
    (tmp_path / rel).unlink()
    with pytest.raises(CorruptObjectError, match="is missing"):
        store.get(rel, sha)


def test_a_stored_text_that_is_not_text_is_corrupt(tmp_path: Path) -> None:
    # Issue #12, defect 6: a damaged .amdgcn.gz that still decompresses, into bytes that are not UTF-8.
    import gzip

    store = ObjectStore(tmp_path / "objects")
    sha, rel = store.put(b"\x7fELF object", "hsaco", extras={"amdgcn": "s_endpgm\n"})
    (tmp_path / "objects" / sha[:2] / f"{sha}.amdgcn.gz").write_bytes(gzip.compress(b"s_endpgm \xff\xfe\n"))
    with pytest.raises(CorruptObjectError, match=f"stored amdgcn text of {rel} is corrupt"):
        store.text(rel, "amdgcn")
