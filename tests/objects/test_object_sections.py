"""Which ELF sections two objects differ in, and which of them hold debug information
(regsurvey/objects/object_sections.py), on real objects (tests/fixtures/stages)."""

from __future__ import annotations

from regsurvey.model.stages import Stage
from regsurvey.objects.object_sections import differing_sections, is_debug_section

from ..stage_cases import OBJECTS, stage_cases


def _objects(stage: Stage, target: str) -> tuple[bytes, bytes]:
    case = next(c for c in stage_cases() if c.stage is stage and c.target == target)
    assert case.before.object is not None and case.after.object is not None
    return (OBJECTS.get(case.before.object.path, case.before.object.sha256),
            OBJECTS.get(case.after.object.path, case.after.object.sha256))


def test_a_kernel_moved_down_differs_in_debug_sections_only() -> None:
    """Its line table (and, the copy being elsewhere, the paths it names)."""
    for target in ("sm90", "gfx942"):
        sections = differing_sections(*_objects(Stage.LOCATIONS, target))
        assert ".debug_line" in sections and all(map(is_debug_section, sections)), sections


def test_ptxas_options_are_in_a_note() -> None:
    """fp fusion off: ptxas runs with ``-fmad false`` and says so in its note; moe_align's code is integer."""
    assert differing_sections(*_objects(Stage.OBJECT, "sm90")) == (".note.nv.tkinfo",)


def test_the_same_bytes_and_bytes_that_are_no_elf() -> None:
    first, _ = _objects(Stage.OBJECT, "sm90")
    assert differing_sections(first, first) == ()
    assert differing_sections(first, b"not an object") == ("<not ELF>",)


def test_debug_sections() -> None:
    assert all(map(is_debug_section, (".debug_line", ".debug_str", ".rela.debug_line", ".nv_debug_ptx_txt",
                                      ".nv_debug_line_sass", ".rel.nv_debug_info_reg_sass")))
    assert not any(map(is_debug_section, (".text", ".text.scale_rows", ".note.nv.tkinfo", ".nv.info", ".symtab",
                                          ".comment", ".AMDGPU.csdata")))
