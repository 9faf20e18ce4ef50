"""The first compiler stage that differs, read from the store (regsurvey/first_stage.py): real builds of one
kernel made two ways (tests/fixtures/stages), each named at its stage."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.diff.core import compare
from regsurvey.first_stage import first_difference, first_differences
from regsurvey.model.results import ObjectRef
from regsurvey.model.stages import Stage
from regsurvey.store.objectstore import ObjectStore

from .stage_cases import FIXTURES, OBJECTS, StageCase, stage_cases, stage_comparison, stage_surveys


@pytest.mark.parametrize("case", stage_cases(), ids=lambda c: c.name)
def test_each_build_is_named_at_its_stage(case: StageCase) -> None:
    """Triton 3.6.0 -> 3.9.0: gfx942's moe_up_gate differs at TTIR (``arith.negf`` for ``arith.subf 0.0, x``),
    v_up at TTGIR (VGPRs 70 -> 86), kv_write at LLIR (its TTIR and TTGIR differ only in what the printer chose
    and in 3.9's contiguity hints); fp fusion
    off: kv_write's LLVM IR is the same and its AMDGCN not (``v_pk_mul_f32`` and ``v_pk_add_f32`` for
    ``v_pk_fma_f32``), nor its PTX on sm90 (``mul.rn.f32`` for ``fma.rn.f32``); moe_align's PTX is the same
    and its cubin not (ptxas ran with ``-fmad false``); the toy kernel three lines lower: identical from TTIR
    on, on both vendors."""
    assert first_difference(case.before, case.after, OBJECTS) is case.stage


def test_the_comparison_gets_every_builds_stage() -> None:
    comparison = first_differences(stage_comparison(), OBJECTS)
    assert {(r.target, r.key): r.first_difference for r in comparison.rows} == {
        (c.target, c.key): c.stage for c in stage_cases()}
    before, _ = stage_surveys()
    itself = first_differences(compare(before, before), OBJECTS)
    assert {r.first_difference for r in itself.rows} == {Stage.IDENTICAL}


def test_the_same_object_is_identical_without_reading_the_store(tmp_path: Path) -> None:
    case = stage_cases()[0]
    assert first_difference(case.before, case.before, ObjectStore(tmp_path / "objects")) is Stage.IDENTICAL


def test_a_store_without_the_texts_or_objects_leaves_it_unknown(tmp_path: Path) -> None:
    """A survey file made elsewhere: its objects are not in this store. A text missing on one side, or an
    object where every text agrees, leaves it unknown too; a build that failed has no stage."""
    empty = ObjectStore(tmp_path / "objects")
    case = next(c for c in stage_cases() if c.stage is Stage.LOCATIONS)
    assert first_difference(case.before, case.after, empty) is None
    partial = tmp_path / "partial"
    shutil.copytree(FIXTURES / "store", partial)
    assert case.after.object is not None
    (partial / case.after.object.path).unlink()  # every text there, the object gone
    assert first_difference(case.before, case.after, ObjectStore(partial / "objects")) is None
    ttir = next(c for c in stage_cases() if c.stage is Stage.TTIR)
    failed = replace(ttir.after, status="error", error="boom", object=None, resources={})
    assert first_difference(ttir.before, failed, OBJECTS) is None


def test_a_damaged_text_leaves_it_unknown(tmp_path: Path) -> None:
    case = next(c for c in stage_cases() if c.stage is Stage.PTX)
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "store", store)
    assert case.after.object is not None
    (store / case.after.object.path.replace(".cubin", ".ttir.gz")).write_bytes(b"not gzip")
    assert first_difference(case.before, case.after, ObjectStore(store / "objects")) is None


def test_another_objects_text_is_refused(tmp_path: Path) -> None:
    """A row naming an object whose texts are another's (the header ties each text to its object)."""
    ttir, ttgir = (next(c for c in stage_cases() if c.stage is s) for s in (Stage.TTIR, Stage.TTGIR))
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "store", store)
    assert ttir.after.object is not None and ttgir.after.object is not None
    stolen = store / ttir.after.object.path.replace(".hsaco", ".ttir.gz")
    shutil.copyfile(store / ttgir.after.object.path.replace(".hsaco", ".ttir.gz"), stolen)
    moved = replace(ttir.after, object=ObjectRef(ttir.after.object.path, ttir.after.object.sha256))
    assert first_difference(ttir.before, moved, ObjectStore(store / "objects")) is None
