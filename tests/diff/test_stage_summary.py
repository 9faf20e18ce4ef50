"""The summary's lines on the first compiler stage that differs (regsurvey/diff/stage_summary.py), on real
builds made two ways (tests/fixtures/stages)."""

from __future__ import annotations

from dataclasses import replace

from regsurvey.diff.core import compare
from regsurvey.diff.stage_summary import moved_figures, stage_meaning, stage_sentences
from regsurvey.diff.summary import summarize
from regsurvey.first_stage import first_differences
from regsurvey.model.comparison import Mark
from regsurvey.model.stages import Stage

from ..stage_cases import OBJECTS, stage_comparison, stage_surveys


def test_a_line_per_stage_in_the_compilers_order() -> None:
    comparison = first_differences(stage_comparison(), OBJECTS)
    assert [text for text, _ in stage_sentences(comparison)] == [
        "1 build: the kernel's Triton IR changed (TTIR differs: occupancy +1 waves/SIMD, VGPRs -5, AGPRs -20)",
        "1 build: Triton's lowering changed (TTGIR differs first: VGPRs +16, AGPRs -8, SGPRs -2)",
        "1 build: Triton's LLVM lowering changed (LLIR differs first: VGPRs +1, SGPRs +4)",
        "1 build: LLVM's backend changed (identical LLIR, different AMDGCN)",
        "1 build: LLVM's backend changed (identical LLIR, different PTX: registers -1)",
        "1 build: the assembler/linker changed (identical PTX, different object)",
        "2 builds: identical from TTIR on (only source locations differ)",
    ]
    assert stage_sentences(comparison)[-1][1] == ("gfx942:scale/width2", "sm90:scale/width2")
    # They stand in the summary after the changes, before the totals.
    texts = summarize(comparison).texts
    assert texts.index("2 builds: identical from TTIR on (only source locations differ)") == len(texts) - 3


def test_unchanged_builds_of_the_same_object_say_nothing() -> None:
    before, _ = stage_surveys()
    itself = first_differences(compare(before, before), OBJECTS)
    assert stage_sentences(itself) == []
    # Not comparable (another toolchain) and the same object: said, since the toolchain changed nothing there.
    marked = replace(itself, rows=tuple(replace(r, mark=Mark.NOT_COMPARABLE) for r in itself.rows))
    assert [text for text, _ in stage_sentences(marked)] == ["8 builds: the same object (identical at every stage)"]


def test_builds_without_a_stage_are_left_out() -> None:
    assert stage_sentences(stage_comparison()) == []


def test_the_words_of_each_stage() -> None:
    assert stage_meaning(Stage.AMDGCN, ["gfx942"], "scratch +44 to +96 B") == \
        "LLVM's backend changed (identical LLIR, different AMDGCN: scratch +44 to +96 B)"
    assert stage_meaning(Stage.OBJECT, ["gfx950", "sm90"]) == \
        "the assembler/linker changed (identical AMDGCN and PTX, different object)"
    assert stage_meaning(Stage.LLIR, ["sm100"]) == "Triton's LLVM lowering changed (LLIR differs first)"


def test_figures_as_ranges_and_in_how_many() -> None:
    comparison = first_differences(stage_comparison(), OBJECTS)
    gfx942 = [r for r in comparison.rows if r.target == "gfx942" and r.first_difference in (Stage.TTIR, Stage.TTGIR)]
    # The unified VGPRs move with the VGPRs: left out beside them.
    assert moved_figures(gfx942) == "occupancy +1 waves/SIMD in 1, VGPRs -5 to +16, AGPRs -20 to -8"
    assert moved_figures([r for r in comparison.rows if r.first_difference is Stage.LOCATIONS]) == ""
