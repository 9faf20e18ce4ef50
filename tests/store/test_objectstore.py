"""The object store: content addressing and refusal of corrupt entries."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from regsurvey.errors import CorruptObjectError
from regsurvey.store.files import WriteError
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
    store = ObjectStore(tmp_path / "objects")
    sha, rel = store.put(b"\x7fELF object", "hsaco", extras={"amdgcn": "s_endpgm\n"})
    header = f"regsurvey-text 1 {sha} amdgcn\n".encode()  # (its object's: only the text is damaged)
    (tmp_path / "objects" / sha[:2] / f"{sha}.amdgcn.gz").write_bytes(gzip.compress(header + b"s_endpgm \xff\xfe\n"))
    with pytest.raises(CorruptObjectError, match=f"stored amdgcn text of {rel} is corrupt"):
        store.text(rel, "amdgcn")


# -- issue 31: what a writer of the store can plant -----------------------------------------------------

@pytest.mark.parametrize("rel", [
    "../../../etc/passwd",
    "/etc/passwd",
    "objects/../../outside.cubin",
    "objects/ab/" + "ab" + "0" * 62 + ".py",  # not an object's extension
    "objects/cd/" + "ab" + "0" * 62 + ".cubin",  # its folder is not its sha's
    "objects/ab/../ab/" + "ab" + "0" * 62 + ".cubin",
    "results/ab/" + "ab" + "0" * 62 + ".cubin",
])
def test_a_path_that_is_no_object_of_the_store_is_refused(tmp_path: Path, rel: str) -> None:
    """A row's ``object.path`` of ``../../..`` or an absolute path was read (and ``diff`` wrote
    ``pressure.gz`` where it pointed): now every use of a path from the store refuses it, writing nothing."""
    store = ObjectStore(tmp_path / "store" / "objects")
    with pytest.raises(CorruptObjectError, match="is not an object of this store"):
        store.get(rel, "ab" + "0" * 62)
    for read in (lambda: store.text(rel, "amdgcn"), lambda: store.put_text(rel, "pressure", "{}")):
        with pytest.raises(CorruptObjectError, match="is not an object of this store"):
            read()
    assert [p.name for p in tmp_path.rglob("*")] == []  # nothing written anywhere


def test_a_link_out_of_the_store_is_refused(tmp_path: Path) -> None:
    """An object folder replaced by a link to elsewhere: neither read through nor written through."""
    store = ObjectStore(tmp_path / "store" / "objects")
    sha, rel = store.put(b"payload", "cubin", extras={"ptx": ".entry k"})
    folder = tmp_path / "store" / "objects" / sha[:2]
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    with pytest.raises(CorruptObjectError, match="resolves outside the store"):
        store.get(rel, sha)
    with pytest.raises(CorruptObjectError, match="resolves outside the store"):
        store.text(rel, "ptx")
    with pytest.raises(WriteError, match="resolves outside the store"):
        store.put(b"payload", "cubin")


def test_a_path_naming_another_object_is_refused(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    sha_a, rel_a = store.put(b"object a", "cubin")
    sha_b, _ = store.put(b"object b", "cubin")
    with pytest.raises(CorruptObjectError, match=f"stored object {rel_a} is not the object {sha_b[:16]}"):
        store.get(rel_a, sha_b)


def test_a_text_swapped_from_another_object_is_refused_and_put_replaces_it(tmp_path: Path) -> None:
    """A ``<sha>.amdgcn.gz`` copied from another object made ``explain`` describe another kernel: each text
    names its object's sha256 and its own name in its first line, checked on read."""
    store = ObjectStore(tmp_path / "objects")
    sha_a, rel_a = store.put(b"object a", "hsaco", extras={"amdgcn": "kernel_a:\n", "llir": "define a"})
    sha_b, rel_b = store.put(b"object b", "hsaco", extras={"amdgcn": "kernel_b:\n"})
    path_a = tmp_path / "objects" / sha_a[:2] / f"{sha_a}.amdgcn.gz"
    path_b = tmp_path / "objects" / sha_b[:2] / f"{sha_b}.amdgcn.gz"
    assert gzip.decompress(path_a.read_bytes()).decode() == f"regsurvey-text 1 {sha_a} amdgcn\nkernel_a:\n"
    path_a.write_bytes(path_b.read_bytes())  # b's text, swapped in
    with pytest.raises(CorruptObjectError, match=f"stored amdgcn text of {rel_a} is not its object's"):
        store.text(rel_a, "amdgcn")
    # Another of the object's own texts under this name is refused too (its header names the llir).
    path_a.write_bytes((tmp_path / "objects" / sha_a[:2] / f"{sha_a}.llir.gz").read_bytes())
    with pytest.raises(CorruptObjectError, match="is not its object's"):
        store.text(rel_a, "amdgcn")
    # A text kept without the header (planted, or by a regsurvey before it) is not believed either.
    path_a.write_bytes(gzip.compress(b"kernel_b:\n"))
    with pytest.raises(CorruptObjectError, match="is not its object's"):
        store.text(rel_a, "amdgcn")
    # The compile that stores the object again replaces it (put kept any text that was there).
    store.put(b"object a", "hsaco", extras={"amdgcn": "kernel_a:\n"})
    assert store.text(rel_a, "amdgcn") == "kernel_a:\n" and store.text(rel_b, "amdgcn") == "kernel_b:\n"
    # What another store packed (a Ray node's) is checked before it is kept.
    with pytest.raises(CorruptObjectError, match="is not its object's"):
        store.put_packed(rel_a, "amdgcn", store.packed(rel_b)["amdgcn"])
    assert store.packed(rel_a) == {"amdgcn": path_a.read_bytes(),
                                   "llir": (path_a.parent / f"{sha_a}.llir.gz").read_bytes()}


def test_a_fifo_or_a_device_in_the_store_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO where an object or a text should be hung ``run`` and ``lint`` (the read waited for a
    writer for ever); a link to /dev/zero read until memory ran out. Both are refused at once now."""
    store = ObjectStore(tmp_path / "objects")
    sha, rel = store.put(b"payload", "cubin", extras={"ptx": ".entry k", "llir": "define"})
    folder = tmp_path / "objects" / sha[:2]
    for path in (tmp_path / rel, folder / f"{sha}.ptx.gz"):
        path.unlink()
        os.mkfifo(path)
    (folder / f"{sha}.llir.gz").unlink()
    (folder / f"{sha}.llir.gz").symlink_to("/dev/zero")
    fifo, outside = r"is unusable \(not a regular file \(a FIFO\)\)", r"resolves outside the store \(/dev/zero\)"
    with no_hang():
        with pytest.raises(CorruptObjectError, match=rf"stored object {rel} {fifo}"):
            store.get(rel, sha)
        with pytest.raises(CorruptObjectError, match=rf"stored ptx text of {rel} {fifo}"):
            store.text(rel, "ptx")
        with pytest.raises(CorruptObjectError, match=rf"stored llir text of {rel} {outside}"):
            store.text(rel, "llir")
        assert store.packed(rel) == {}
        # Stored again, each is a file again.
        store.put(b"payload", "cubin", extras={"ptx": ".entry k", "llir": "define"})
    assert store.get(rel, sha) == b"payload" and store.text(rel, "ptx") == ".entry k"
    assert store.text(rel, "llir") == "define" and (folder / f"{sha}.llir.gz").is_file()
    # An object that is itself a link out of the store (to /dev/zero) is not read through.
    (tmp_path / rel).unlink()
    (tmp_path / rel).symlink_to("/dev/zero")
    with pytest.raises(CorruptObjectError, match=r"resolves outside the store \(/dev/zero\)"):
        store.get(rel, sha)


@contextlib.contextmanager
def no_hang(seconds: int = 60) -> Iterator[None]:
    """A read that blocks for ever fails the test instead of hanging it (not a timing: a limit)."""
    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
