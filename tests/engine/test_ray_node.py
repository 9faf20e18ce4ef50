"""What a Ray survey keeps on a node and what travels back from it (engine/ray_node.py), beyond what
tests/engine/test_build_claims.py holds (the node's store shared and cleared, the shipper, the sweep): an
object asked for that the node's store does not hold, or that is none of a store's objects, is not sent;
and one whose bytes are not its name is refused where it arrives. The object is a real one: the lint
fixtures' gfx950 build."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from regsurvey.engine.ray_node import ShippedObject, node_store, ship_from, store_objects
from regsurvey.store.objectstore import ObjectStore

from ..lint_surveys import LINT_FIXTURES

HSACO = (LINT_FIXTURES / "matmul-gfx950.hsaco").read_bytes()


def test_the_nodes_store_of_a_survey_is_named_after_it_in_the_temporary_directory() -> None:
    assert node_store("3f2a") == Path(tempfile.gettempdir()) / "regsurvey-node-3f2a"


def test_only_the_objects_the_store_holds_are_sent(tmp_path: Path) -> None:
    node = ObjectStore(tmp_path / "node" / "objects")
    sha, rel = node.put(HSACO, "hsaco", extras={"amdgcn": "; NumVgprs: 138\n"})
    absent = "a" * 64
    wanted = {sha: rel, absent: f"objects/aa/{absent}.hsaco",  # compiled on another node: not here
              "b" * 64: "../../etc/passwd",  # no object path of a store
              "c" * 64: f"objects/dd/{'c' * 64}.hsaco"}  # a folder that is not its hash's
    (shipped,) = ship_from(node, wanted)
    assert (shipped.sha256, shipped.ext, shipped.binary) == (sha, "hsaco", HSACO)
    assert set(shipped.texts) == {"amdgcn"}
    here = ObjectStore(tmp_path / "survey" / "objects")
    store_objects((shipped,), here)
    assert here.get(rel, sha) == HSACO and here.text(rel, "amdgcn") == "; NumVgprs: 138\n"


def test_an_object_whose_bytes_are_not_its_name_is_refused(tmp_path: Path) -> None:
    here = ObjectStore(tmp_path / "survey" / "objects")
    altered = ShippedObject("0" * 64, "hsaco", HSACO, {})
    with pytest.raises(ValueError, match=f"^object {'0' * 64} arrived altered$"):
        store_objects((altered,), here)
    assert not (here.root / "00").exists()  # nothing is kept under the name it claimed
    assert list(here.root.rglob("*.hsaco")) == []  # nor under its own: a refused object is not written
