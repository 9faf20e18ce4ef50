"""What a comparison of two surveys is (model/comparison.py): the marks and their order, each figure's move
and verdict, the lint's findings matched across the sides, what a toolchain or build change says, a build
on both sides, and what a comparison or a stack step sums over its builds.

The builds are the lint fixtures' real gfx950 ones (tests/lint_surveys.py: figures read from committed
objects, findings from the kernarg lint); how two surveys are matched into these is tests/diff/'s."""

from __future__ import annotations

import json
from dataclasses import replace

from regsurvey.model.comparison import (
    FIGURE_MARKS,
    MARK_ORDER,
    REGRESSIONS,
    AnnotatedFile,
    BuildChange,
    Comparison,
    FigureDelta,
    FigureTotal,
    HotLine,
    LintChange,
    LintCounts,
    Mark,
    RowComparison,
    SkippedKey,
    StackStep,
    SurveyInfo,
    ToolchainChange,
    axis_segments,
)
from regsurvey.model.figures import AMD_RESOURCES
from regsurvey.model.names import BuildName
from regsurvey.model.results import Row
from regsurvey.model.toolchain_change import differing_parts, same_toolchain

from ..lint_surveys import clean_and_mutated, findings

BUFFERS = "many_buffers-gfx950"


def compared(before: Row | None, after: Row | None, mark: Mark, **fields: object) -> RowComparison:
    """``before`` and ``after`` as one build, every AMD figure either side has."""
    row = after or before
    assert row is not None
    figures = tuple(FigureDelta(name, before.resources.get(name) if before else None,
                                after.resources.get(name) if after else None) for name in AMD_RESOURCES)
    lint = LintChange(before.lint if before else None, after.lint if after else None)
    return RowComparison(target=row.target, row_id=row.row_id, key=row.key, kind=row.kind, axes=row.axes,
                         kernel=row.kernel, launch=row.launch, config=row.config, mark=mark, figures=figures,
                         before=before, after=after, lint_findings=lint, **fields)  # type: ignore[arg-type]


def test_marks_in_report_order_regressions_first() -> None:
    assert [m.value for m in MARK_ORDER] == ["worse", "mixed", "newly failing", "better", "fixed", "added", "removed",
                                            "changed", "still failing", "not comparable", "unchanged"]
    assert REGRESSIONS == {Mark.WORSE, Mark.MIXED, Mark.NEWLY_FAILING}
    assert FIGURE_MARKS == {Mark.WORSE, Mark.MIXED, Mark.BETTER, Mark.CHANGED}
    assert Mark("newly failing") is Mark.NEWLY_FAILING and Mark.STILL_FAILING == "still failing"
    assert (str(Mark.WORSE), f"{Mark.NEWLY_FAILING}") == ("worse", "newly failing")  # shown as its value


def test_a_figures_move_and_its_verdict() -> None:
    moves = {(f.name, f.before, f.after): (f.delta, f.verdict, f.changed) for f in (
        FigureDelta("vgpr", 128, 136), FigureDelta("vgpr", 136, 128), FigureDelta("occupancy", 4, 3),
        FigureDelta("occupancy_warps", 16, 32), FigureDelta("kernarg_bytes", 288, 296), FigureDelta("sgpr_spill", 0, 0),
        FigureDelta("vgpr", None, 128), FigureDelta("regs", 168, None), FigureDelta("a_newer_figure", 1, 2))}
    assert moves == {("vgpr", 128, 136): (8, "worse", True), ("vgpr", 136, 128): (-8, "better", True),
                     ("occupancy", 4, 3): (-1, "worse", True),  # fewer waves is worse
                     ("occupancy_warps", 16, 32): (16, "better", True),
                     ("kernarg_bytes", 288, 296): (8, "changed", True),  # an argument more: neither
                     ("sgpr_spill", 0, 0): (0, "same", False),
                     ("vgpr", None, 128): (None, "n/a", False), ("regs", 168, None): (None, "n/a", False),
                     ("a_newer_figure", 1, 2): (1, "changed", True)}  # a figure this registry does not know


def test_findings_match_by_kernel_offset_and_severity() -> None:
    found = findings("restore-removed.amdgcn", BUFFERS)
    moved = [replace(f, line=(f.line or 0) + 40, reason="elsewhere") for f in found]
    assert found[0].identity == ("many_buffers_kernel", 256, "error")
    assert LintChange(tuple(found), tuple(moved)).new == ()  # an edit that moved the load: the same finding
    assert LintChange(tuple(moved), tuple(found)).fixed == ()
    as_note = [replace(f, severity="note") for f in found]
    change = LintChange(tuple(as_note), tuple(found))
    assert [f.severity for f in change.new] == ["error"] and [f.severity for f in change.fixed] == ["note"]


def test_a_side_not_linted_has_no_finding_fixed_and_each_found_is_new() -> None:
    (suspect,) = findings("restore-removed.amdgcn", BUFFERS)
    new = LintChange(None, (suspect,))  # the base did not lint the build
    assert (new.linted, new.new, new.new_errors, new.fixed, new.changed) == (True, (suspect,), (suspect,), (), True)
    gone = LintChange((suspect,), None)  # the head did not: nothing it says is fixed
    assert (gone.linted, gone.new, gone.fixed, gone.changed) == (True, (), (), False)
    fixed = LintChange((suspect,), ())
    assert (fixed.fixed, fixed.fixed_errors, fixed.new, fixed.changed) == ((suspect,), (suspect,), (), True)
    assert not LintChange().linted and LintChange().to_dict() is None
    assert LintChange((), ()).to_dict() == {"before": [], "after": [], "new": [], "fixed": []}
    assert new.to_dict() == {"before": None, "after": [suspect.to_dict()], "new": [suspect.to_dict()], "fixed": []}
    assert LintCounts(2, 2, 2, 2, 0, 0, 2).to_dict() == {"findings": 2, "errors": 2, "new": 2, "new_errors": 2,
                                                         "fixed": 0, "fixed_errors": 0, "linted": 2}


def test_what_a_toolchain_or_build_change_says() -> None:
    ptxas = ToolchainChange("cuda", "ptxas", "12.8", "13.4")
    assert ptxas.describe() == "cuda ptxas: 12.8 → 13.4" and ptxas.describe("->") == "cuda ptxas: 12.8 -> 13.4"
    # As a survey records it: a version per NVIDIA target, told by the targets whose version moved.
    per_target = ToolchainChange("cuda", "ptxas", {"sm90": "12.8", "sm100": "13.4"}, {"sm90": "13.4", "sm100": "13.4"})
    assert per_target.describe() == "cuda ptxas: sm90 12.8 → 13.4"
    # A side that recorded none (a survey stored before its toolchain block had the part, a toolchain that
    # cannot say) is unknown, never "None".
    unknown = ToolchainChange("hip", "amd_codegen_revision", None, "6bc4aaf6641c56ee104f6200c96a6a571bc77052-1")
    assert unknown.describe() == "hip amd_codegen_revision: unknown → 6bc4aaf6641c56ee104f6200c96a6a571bc77052-1"
    assert ToolchainChange("cuda", "ptxas", {"sm90": "12.8"}, {"sm90": "13.4", "sm100": "13.4"}).describe("->") == \
        "cuda ptxas: sm90 12.8 -> 13.4; sm100 unknown -> 13.4"


def test_a_target_one_survey_did_not_know_is_no_toolchain_change() -> None:
    # A survey stored before sm103 and sm120 were targets recorded no ptxas for them: the same toolchain.
    before = {"triton": "3.9.0", "ptxas": {"sm90": "13.4", "sm100": "13.4"}}
    after = {"triton": "3.9.0", "ptxas": {"sm90": "13.4", "sm100": "13.4", "sm103": "13.4", "sm120": "13.4"}}
    assert differing_parts(before, after) == [] and same_toolchain(before, after)
    # A version that moved in a target both recorded is a change, and so is a part one side lacks.
    moved = {**after, "ptxas": {**after["ptxas"], "sm90": "13.5"}}
    assert differing_parts(before, moved) == ["ptxas"] and not same_toolchain(before, moved)
    assert differing_parts({"triton": "3.9.0"}, {"triton": "3.9.0", "fp_fusion": True}) == ["fp_fusion"]
    assert not same_toolchain(None, after) and same_toolchain(None, None)


def test_what_a_build_change_says() -> None:
    warps = BuildChange("num_warps", 4, 8)
    assert warps.describe() == "num_warps 4 → 8"
    assert BuildChange("BLOCK_N", None, 128, constexpr=True).describe("->") == "BLOCK_N - -> 128"
    assert BuildChange("config", 0, None).describe() == "config 0 → -"
    assert warps.to_dict() == {"name": "num_warps", "before": 4, "after": 8, "constexpr": False}


def test_a_build_on_both_sides() -> None:
    base, head = clean_and_mutated()
    buffers = compared(base.rows[0], head.rows[0], Mark.WORSE)
    assert buffers.name == BuildName("buffers/w8", "many_buffers_kernel")  # left out: its key and kernel
    assert (buffers.ref, buffers.segments, buffers.error) == ("gfx950:buffers/w8", {"width": "w8"}, None)
    assert buffers.changed_figures == ()  # the same object: only the lint tells
    assert buffers.figure("sgpr_spill") == FigureDelta("sgpr_spill", base.rows[0].resources["sgpr_spill"],
                                                       head.rows[0].resources["sgpr_spill"])
    assert buffers.figure("regs") is None  # NVIDIA's
    assert [f.arg_name for f in buffers.lint_findings.new_errors] == ["out_ptr"]
    failed = replace(head.rows[1], status="error", error="CompilationError: at 3:4: out of resources", resources={},
                     lint=None)
    gemm = compared(base.rows[1], failed, Mark.NEWLY_FAILING, name=BuildName("gemm/w2", "matmul_kernel", "up"))
    assert gemm.error == "CompilationError: at 3:4: out of resources" and str(gemm.name) == "gemm/w2 matmul_kernel [up]"
    assert gemm.figure("vgpr") == FigureDelta("vgpr", base.rows[1].resources["vgpr"], None)
    assert compared(failed, base.rows[1], Mark.FIXED).error == "CompilationError: at 3:4: out of resources"


def test_each_axis_as_its_key_id_spells_it() -> None:
    assert axis_segments("mla/tp4/w2/e4m3/nostop", {"tp": 4, "width": 2, "cache": "e4m3", "stop": False}) == {
        "tp": "tp4", "width": "w2", "cache": "e4m3", "stop": "nostop"}
    # A key id of another shape: each value spelled without the project's labels.
    assert axis_segments("mla", {"tp": 4, "width": 2, "stop": False}) == {"tp": "tp4", "width": "width2",
                                                                          "stop": "nostop"}
    assert axis_segments("norm", {}) == {}


def test_a_surveys_short_name() -> None:
    base, head = clean_and_mutated()
    info = SurveyInfo.of(base)
    assert (info.commit, info.label, info.targets, info.toolchain, info.dirty) == (
        "a" * 40, "main (aaaaaaaaaa)", ("gfx950",), base.toolchain, False)
    assert info.short == "main" and SurveyInfo.of(head).short == "HEAD"
    assert SurveyInfo("c" * 40, "c" * 40, (), {}).short == "cccccccccc"  # named by its full sha
    assert SurveyInfo("d" * 40, "working tree", (), {}, dirty=True).short == "dddddddddd"
    assert SurveyInfo(None, "working tree", (), {}).short == "worktree"
    assert SurveyInfo(None, "", (), {}).short == "worktree"


def comparison() -> tuple[Comparison, Row, Row]:
    """buffers lost out_ptr (worse); gemm fails on the head (newly failing); a key skipped on the head."""
    base, head = clean_and_mutated()
    buffers, gemm = base.rows
    failed = replace(head.rows[1], status="error", error="CompilationError: out of resources", resources={}, lint=None)
    rows = (compared(buffers, head.rows[0], Mark.WORSE), compared(gemm, failed, Mark.NEWLY_FAILING))
    skipped = (SkippedKey("gfx950", "gemm/w16", "gemm", None, "no such tile on gfx950"),)
    return (Comparison(SurveyInfo.of(base), replace(SurveyInfo.of(head), targets=("gfx950", "sm90")), rows,
                       skipped=skipped), buffers, gemm)


def test_what_a_comparison_sums_over_its_builds() -> None:
    c, buffers, gemm = comparison()
    spill = buffers.resources["sgpr_spill"]
    assert spill > 0 and not any(gemm.resources[f] for f in ("vgpr_spill", "sgpr_spill", "scratch_bytes"))
    assert c.counts == {m: {Mark.WORSE: 1, Mark.NEWLY_FAILING: 1}.get(m, 0) for m in MARK_ORDER}
    assert list(c.counts) == list(MARK_ORDER)
    assert [r.key for r in c.regressions] == ["buffers/w8", "gemm/w2"]
    assert [r.key for r in c.with_mark(Mark.NEWLY_FAILING, Mark.FIXED)] == ["gemm/w2"]
    assert (c.keys, c.targets, c.skipped_keys) == (2, ("gfx950", "sm90"), (0, 1))
    # AMD's spill figures in order of importance; NVIDIA's left out (no build of theirs), a failed build's none.
    assert c.spill_totals == (FigureTotal("vgpr_spill", 0, 0), FigureTotal("sgpr_spill", spill, spill),
                              FigureTotal("scratch_bytes", 0, 0))
    assert (c.spilling_builds, c.failing_builds, c.lint_errors) == ((1, 1), (0, 1), (0, 1))
    assert c.lint_counts == LintCounts(findings=1, errors=1, new=1, new_errors=1, fixed=0, fixed_errors=0, linted=1)
    unlinted = replace(c, rows=tuple(replace(r, lint_findings=LintChange(r.lint_findings.before, None))
                                     for r in c.rows))
    assert unlinted.lint_counts is None  # nothing the head linted


def test_what_a_stack_step_says_of_its_commit() -> None:
    c, buffers, gemm = comparison()
    up = replace(gemm, launch=1, name="up")  # a second launch of gemm's key, which builds
    added = compared(None, up, Mark.ADDED)
    step = StackStep("b" * 40, "lose two arguments", replace(c, rows=(*c.rows, added)))
    assert step.builds == (2, 3)  # buffers and gemm's second launch build; gemm's first fails
    assert step.keys_built == (1, 2)  # gemm's key does not build whole
    assert step.lint_findings == LintCounts(1, 1, 1, 1, 0, 0, 2)
    assert StackStep("c" * 40, "nothing", replace(c, rows=())).builds == (0, 0)


def test_the_source_lines_of_a_build_as_json() -> None:
    hot = HotLine("decode_layer/attention.py:108", 136, "VGPR", 2, 1, "acc = tl.dot(q, k, acc)")
    assert hot.to_dict() == {"line": "decode_layer/attention.py:108", "live": 136, "noun": "VGPR", "stores": 2,
                             "reloads": 1, "source": "acc = tl.dot(q, k, acc)"}
    annotated = AnnotatedFile("decode_layer/attention.py", 107, ("q = tl.load(q_ptr)", "acc = tl.dot(q, k, acc)"),
                              (None, 136), (0, 2), (0, 1), hot=(108,))
    data = annotated.to_dict()
    assert json.loads(json.dumps(data)) == data == {
        "name": "decode_layer/attention.py", "first": 107, "text": ["q = tl.load(q_ptr)", "acc = tl.dot(q, k, acc)"],
        "live": [None, 136], "stores": [0, 2], "reloads": [0, 1], "hot": [108], "found": True, "depth": [0, 0]}
