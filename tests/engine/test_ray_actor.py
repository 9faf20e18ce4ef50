"""The far side of a Ray survey (engine/ray_actor.py), what tests/engine/test_ray_tree.py (the tracked tree
and its links), test_build_claims.py (the claims across nodes) and test_ray_answers.py do not hold: a tree
outside git, an archive that would land outside its directory, and a key's answer travelling back and
stored, with a real object (the lint fixtures' gfx950 build)."""

from __future__ import annotations

import io
import pickle
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.engine.protocol import KeyFinished
from regsurvey.engine.ray_actor import KeyShipped, pack_tree, tree_files, unpack_tree
from regsurvey.engine.ray_node import shipped_object
from regsurvey.model.keys import Key
from regsurvey.model.results import ObjectRef, ObjectReport
from regsurvey.store.objectstore import ObjectStore
from regsurvey.store.resultcache import CachedResult, ResultCache

from ..lint_surveys import LINT_FIXTURES, fixture_row


def test_outside_git_every_file_travels_but_caches_and_the_store(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for name in ("keys/k.py", "lib/ops.py", ".env", "lib/__pycache__/ops.cpython-311.pyc", ".git/HEAD",
                 ".regsurvey/objects/ab/x.cubin"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    tree = tree_files(root)
    assert tree.files == (".env", "keys/k.py", "lib/ops.py") and tree.left_out == ()
    unpack_tree(pack_tree(root, tree.files), tmp_path / "node")
    assert (tmp_path / "node" / "lib" / "ops.py").read_text() == "lib/ops.py"


def archive(name: str) -> bytes:
    """A gzipped tar of one five-byte file called ``name``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.size = 5
        tar.addfile(info, io.BytesIO(b"owned"))
    return buffer.getvalue()


def test_an_archive_that_would_land_outside_its_directory_is_refused(tmp_path: Path) -> None:
    into = tmp_path / "node" / "tree"
    refused = getattr(tarfile, "FilterError", ValueError)  # a Python without extraction filters: unpack_tree's
    with pytest.raises(refused, match="outside.py"):
        unpack_tree(archive("../outside.py"), into)
    assert not (tmp_path / "node" / "outside.py").exists()
    if not hasattr(tarfile, "data_filter"):
        with pytest.raises(ValueError, match="unsafe path in the tree's archive"):
            unpack_tree(archive(f"{tmp_path}/elsewhere.py"), into)
        return
    # An absolute name is taken as relative to the directory (tarfile's data filter): it lands inside.
    unpack_tree(archive(f"{tmp_path}/elsewhere.py"), into)
    assert not (tmp_path / "elsewhere.py").exists()
    assert (into / tmp_path.relative_to("/") / "elsewhere.py").read_bytes() == b"owned"


def test_a_keys_answer_travels_back_and_is_stored_with_its_object_and_cache_entry(tmp_path: Path) -> None:
    node = ObjectStore(tmp_path / "node" / "objects")
    binary = (LINT_FIXTURES / "matmul-gfx950.hsaco").read_bytes()
    amdgcn = (LINT_FIXTURES / "matmul-gfx950.amdgcn").read_text()
    sha, rel = node.put(binary, "hsaco", extras={"amdgcn": amdgcn})
    row = fixture_row("matmul-gfx950", [])
    row = replace(row, object=ObjectRef(rel, sha), triton_hash="f" * 64, compile_s=0.4)
    entry = CachedResult(kernel=row.kernel or "", report=ObjectReport(row.resources, ()), object=row.object,
                         compile_s=0.4)
    key = Key(kind="gemm", axes=(("width", 2),), target="gfx950", id="gemm/w2")
    shipped = KeyShipped(KeyFinished(key, (row,)), (shipped_object(node, rel, sha),), {"f" * 64: entry},
                         seconds=1.25, node="n" * 56)
    back = pickle.loads(pickle.dumps(shipped))  # as Ray sends it
    assert back == shipped
    here = ObjectStore(tmp_path / "survey" / "objects")
    cache = ResultCache(here)
    back.store(here, cache)
    assert here.get(rel, sha) == binary and here.text(rel, "amdgcn") == amdgcn
    assert cache.get("f" * 64) == entry and entry.resources["vgpr"] == 138

