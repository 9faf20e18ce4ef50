"""Rebuild comparison and ELF section differences, on objects the real toolchain produced."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from regsurvey.model.results import ObjectRef, Survey
from regsurvey.objects.object_sections import first_difference
from regsurvey.revisions.rebuild import compare_builds
from regsurvey.store.objectstore import ObjectStore

from ..layer_survey import layer_survey, row


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Survey, ObjectStore]:
    survey, store = layer_survey(tmp_path_factory.mktemp("layer"))
    return survey, ObjectStore(store / "objects")


def flip_in_section(binary: bytes, name: str, at: int = 4) -> bytes:
    """``binary`` with one byte of section ``name`` changed."""
    section = ELFFile(io.BytesIO(binary)).get_section_by_name(name)
    offset = section["sh_offset"] + at
    data = bytearray(binary)
    data[offset] ^= 0xFF
    return bytes(data)


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_first_differing_section(layer: tuple[Survey, ObjectStore], target: str) -> None:
    survey, objects = layer
    ref = row(survey, "attn/tp4/w2/bf16", target).object
    assert ref is not None
    binary = objects.get(ref.path, ref.sha256)
    text = ".text" if target == "gfx950" else ".text.matmul"
    assert first_difference(binary, binary) is None
    found = first_difference(binary, flip_in_section(binary, text, at=8))
    assert found is not None and (found.section, found.detail) == (
        text, f"contents differ at offset 0x8 of {ELFFile(io.BytesIO(binary)).get_section_by_name(text)['sh_size']} B")
    assert first_difference(binary, b"not an object").section == "<not ELF>"


def test_compare_builds(layer: tuple[Survey, ObjectStore], tmp_path: Path) -> None:
    survey, objects = layer
    assert compare_builds(survey, survey, objects).deterministic
    gemm = row(survey, "attn/tp4/w2/bf16", "sm90")
    assert gemm.object is not None
    other = flip_in_section(objects.get(gemm.object.path, gemm.object.sha256), ".text.matmul")
    sha, rel = objects.put(other, "cubin")
    second = replace(survey, rows=tuple(
        replace(r, object=ObjectRef(rel, sha)) if r is gemm
        else replace(r, status="error", error="timed out after 600 s (--timeout)\n", object=None, resources={})
        if r.row_id == "proj/tp8/w8" and r.target == "gfx950" else r
        for r in survey.rows))
    check = compare_builds(survey, second, objects)
    assert not check.deterministic and check.builds == 40
    assert [(d.key, d.target, d.kernel, d.section, d.detail.split(" at ")[0]) for d in check.differences] == [
        ("attn/tp4/w2/bf16", "sm90", "matmul", ".text.matmul", "contents differ"),
        ("proj/tp8/w8", "gfx950", "scale_rows", "<status>",
         "built only the first time: timed out after 600 s (--timeout)"),
    ]
    assert check.differences[0].first_sha256 == gemm.object.sha256 and check.differences[0].second_sha256 == sha
