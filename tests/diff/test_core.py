"""The comparison engine on a real survey whose figures are edited per test.

The layer's own figures are expected as read without regsurvey (``layer_readings``: LLVM's and ptxas's
numbers, Triton's metadata), never typed in: the tests hold for whatever toolchain compiled the layer.
The edits are the tests' own numbers, set past the real figures in the direction each test needs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from regsurvey.diff.core import compare, stack
from regsurvey.model.comparison import DIFF_SCHEMA_VERSION, FigureDelta, LintCounts, Mark
from regsurvey.model.figures import AMD_RESOURCES, FIGURE_BY_NAME, FIGURES, NVIDIA_RESOURCES, verdict
from regsurvey.model.results import Survey
from regsurvey.output.diff_json import comparison_dict, stack_dict

from ..layer_survey import edited, row, without

AMD, NV = "gfx950", "sm90"
Readings = dict[tuple[str, str], dict[str, Any]]


def test_every_surveyed_figure_has_a_direction() -> None:
    assert set(FIGURE_BY_NAME) == set(AMD_RESOURCES) | set(NVIDIA_RESOURCES)
    worse_when_more = {f.name for f in FIGURES if f.worse == +1}
    assert worse_when_more == {"vgpr", "agpr", "vgpr_total", "sgpr", "vgpr_spill", "sgpr_spill", "scratch_bytes",
                               "lds_bytes", "regs", "spill_store_bytes", "spill_load_bytes", "stack_bytes",
                               "shared_bytes", "loop_spill_ops", "loop_spill_depth"}
    assert {f.name for f in FIGURES if f.worse == -1} == {"occupancy", "occupancy_warps"}
    assert {f.name for f in FIGURES if f.worse == 0} == {"kernarg_bytes", "occupancy_blocks"}
    assert verdict("occupancy", 2, 1) == "worse" and verdict("vgpr", 96, 88) == "better"
    assert verdict("kernarg_bytes", 96, 104) == "changed" and verdict("regs", None, 40) == "n/a"


def test_a_survey_against_itself_is_unchanged(layer: Survey, layer_readings: Readings) -> None:
    c = compare(layer, layer)
    assert c.counts[Mark.UNCHANGED] == len(layer.rows) == 40  # attn launches two kernels per key
    assert sum(c.counts.values()) == 40 and c.keys == 24 and c.regressions == ()
    gemm = next(r for r in c.rows if r.key == "attn/tp4/w2/bf16" and r.target == AMD)
    read = layer_readings[("attn/tp4/w2/bf16", AMD)]
    # The spill figures first (the registry's rank), each the second reading on both sides.
    assert [(f.name, f.before, f.after, f.delta) for f in gemm.figures][:3] == [
        (name, read[name], read[name], 0) for name in ("vgpr_spill", "sgpr_spill", "scratch_bytes")]
    assert gemm.figure("vgpr") == FigureDelta("vgpr", read["vgpr"], read["vgpr"])
    assert gemm.segments == {"tp": "tp4", "width": "w2", "cache": "bf16"}
    scale = next(r for r in c.rows if r.row_id == "attn/tp4/w2/bf16#1" and r.target == AMD)
    vgpr = layer_readings[("attn/tp4/w2/bf16#1", AMD)]["vgpr"]
    assert (scale.kernel, scale.launch, scale.figure("vgpr")) == ("scale_rows", 1, FigureDelta("vgpr", vgpr, vgpr))


def test_marks(layer: Survey, layer_readings: Readings) -> None:
    def read(key: str, target: str = AMD) -> dict[str, Any]:
        return layer_readings[(key, target)]

    vgpr, occupancy = read("attn/tp4/w8/bf16")["vgpr"], read("attn/tp4/w8/bf16")["occupancy"]
    proj = read("proj/tp4/w2", NV)
    assert read("attn/tp4/w2/bf16")["vgpr_spill"] == 0  # so the edit below leaves it as it is
    head = edited(layer, {
        ("attn/tp4/w2/bf16", AMD): {"vgpr": read("attn/tp4/w2/bf16")["vgpr"] + 58, "vgpr_spill": 0},  # worse
        ("attn/tp4/w2/e4m3", AMD): {"vgpr": read("attn/tp4/w2/e4m3")["vgpr"] - 8},  # fewer: better
        ("attn/tp4/w8/bf16", AMD): {"vgpr": vgpr - 8, "occupancy": occupancy - 1},  # better VGPRs, worse occupancy
        ("attn/tp4/w8/e4m3", AMD): {"kernarg_bytes": read("attn/tp4/w8/e4m3")["kernarg_bytes"] + 8},  # neutral
        ("attn/tp8/w2/bf16", NV): {"status": "error", "error": "out of resource: shared memory"},
        # less occupancy: worse
        ("proj/tp4/w2", NV): {"occupancy_blocks": proj["occupancy_blocks"] - 4,
                              "occupancy_warps": proj["occupancy_warps"] - 16},
    })
    base = edited(layer, {("proj/tp8/w8", NV): {"status": "error", "error": "was broken"},
                          ("proj/tp8/w2", NV): {"status": "error", "error": "still broken"}})
    head = edited(head, {("proj/tp8/w2", NV): {"status": "error", "error": "still broken"}})
    base = without(base, {("attn/tp8/w8/e4m3", AMD)})
    head = without(head, {("proj/tp4/w8", AMD)})
    c = compare(base, head)
    marks = {(r.key, r.target): r.mark for r in c.rows if r.mark is not Mark.UNCHANGED}
    assert marks == {
        ("attn/tp4/w2/bf16", AMD): Mark.WORSE, ("attn/tp4/w2/e4m3", AMD): Mark.BETTER,
        ("attn/tp4/w8/bf16", AMD): Mark.MIXED, ("attn/tp4/w8/e4m3", AMD): Mark.CHANGED,
        ("attn/tp8/w2/bf16", NV): Mark.NEWLY_FAILING, ("proj/tp4/w2", NV): Mark.WORSE,
        ("proj/tp8/w8", NV): Mark.FIXED, ("proj/tp8/w2", NV): Mark.STILL_FAILING,
        ("attn/tp8/w8/e4m3", AMD): Mark.ADDED, ("proj/tp4/w8", AMD): Mark.REMOVED,
    }
    assert {(r.key, r.target) for r in c.regressions} == {
        ("attn/tp4/w2/bf16", AMD), ("attn/tp4/w8/bf16", AMD), ("attn/tp8/w2/bf16", NV), ("proj/tp4/w2", NV)}
    # A mixed build is a regression all the same: its worse figure counts.
    worse = next(r for r in c.rows if r.key == "attn/tp4/w8/bf16" and r.target == AMD)
    assert [(f.name, f.before, f.after, f.delta, f.verdict) for f in worse.changed_figures] == [
        ("occupancy", occupancy, occupancy - 1, -1, "worse"), ("vgpr", vgpr, vgpr - 8, -8, "better")]
    # A build that can no longer launch (occupancy 0: flag_gems' gfx950 mm configs under Triton 3.9, whose LDS
    # outgrew the CU's 160 KiB) is worse, whatever else it gained.
    gone = compare(layer, edited(layer, {("attn/tp4/w8/bf16", AMD): {"vgpr": vgpr - 8, "occupancy": 0},
                                         ("proj/tp4/w2", NV): {"occupancy_warps": 0, "occupancy_blocks": 0,
                                                               "regs": proj["regs"] - 8}}))
    assert {(r.key, r.target): r.mark for r in gone.rows if r.mark is not Mark.UNCHANGED} == {
        ("attn/tp4/w8/bf16", AMD): Mark.WORSE, ("proj/tp4/w2", NV): Mark.WORSE}
    failing = next(r for r in c.rows if r.mark is Mark.NEWLY_FAILING)
    assert failing.error == "out of resource: shared memory"
    regs = layer_readings[("attn/tp8/w2/bf16", NV)]["regs"]
    assert [(f.before, f.after) for f in failing.figures if f.name == "regs"] == [(regs, None)]
    assert c.failing_builds == (2, 2)
    # Rows keep the head's order; the row only the base has stays where the base had it.
    order = [(r.key, r.target) for r in c.rows]
    assert order.index(("proj/tp4/w8", AMD)) == order.index(("proj/tp4/w2", NV)) + 1


def test_spill_totals(layer: Survey, layer_readings: Readings) -> None:
    # The layer's kernels spill nothing and have no stack (every build's second reading): the totals are
    # the edits' alone.
    spills = ("vgpr_spill", "sgpr_spill", "scratch_bytes", "spill_store_bytes", "spill_load_bytes", "stack_bytes")
    assert {read.get(name, 0) for read in layer_readings.values() for name in spills} == {0}
    base = edited(layer, {("attn/tp8/w8/bf16", AMD): {"vgpr_spill": 20, "scratch_bytes": 80},
                          ("attn/tp8/w8/e4m3", AMD): {"vgpr_spill": 24, "scratch_bytes": 96},
                          ("proj/tp8/w8", NV): {"spill_store_bytes": 8, "spill_load_bytes": 8}})
    head = edited(layer, {("attn/tp8/w8/e4m3", AMD): {"sgpr_spill": 3}})
    c = compare(base, head)
    # Every spill figure of the registry, scratch and stack included.
    assert [(t.name, t.before, t.after) for t in c.spill_totals] == [
        ("vgpr_spill", 44, 0), ("sgpr_spill", 0, 3), ("scratch_bytes", 176, 0), ("spill_store_bytes", 8, 0),
        ("spill_load_bytes", 8, 0), ("stack_bytes", 0, 0)]
    assert c.spilling_builds == (3, 1)


def test_different_toolchains_are_not_comparable(layer: Survey, layer_readings: Readings) -> None:
    cuda = dict(layer.toolchain["cuda"], ptxas="Build cuda_12.8.r12.8/compiler.0_0")
    assert cuda != layer.toolchain["cuda"]  # a ptxas of another release than this survey's
    base = replace(layer, toolchain={**layer.toolchain, "cuda": cuda})
    head = edited(layer, {("proj/tp4/w2", NV): {"regs": layer_readings[("proj/tp4/w2", NV)]["regs"] + 22},
                          ("proj/tp4/w2", AMD): {"vgpr": layer_readings[("proj/tp4/w2", AMD)]["vgpr"] + 2}})
    c = compare(base, head)
    assert [ch.describe() for ch in c.toolchain_changes] == [
        f"cuda ptxas: Build cuda_12.8.r12.8/compiler.0_0 → {layer.toolchain['cuda']['ptxas']}"]
    nvidia = [r for r in c.rows if r.target == NV]
    assert {r.mark for r in nvidia} == {Mark.NOT_COMPARABLE}
    assert nvidia[0].note == c.toolchain_changes[0].describe("->")  # the JSON's (ASCII) arrow
    amd = {r.row_id: r.mark for r in c.rows if r.target == AMD}
    assert amd["proj/tp4/w2"] is Mark.WORSE and list(amd.values()).count(Mark.UNCHANGED) == 19


def test_json_is_schema_versioned_and_complete(layer: Survey, layer_readings: Readings) -> None:
    vgpr = layer_readings[("attn/tp4/w2/bf16", AMD)]["vgpr"]
    head = edited(layer, {("attn/tp4/w2/bf16", AMD): {"vgpr": vgpr + 58}})
    data = comparison_dict(compare(layer, head))
    assert data["schema_version"] == DIFF_SCHEMA_VERSION == 1
    assert data["report"] == "comparison"
    assert set(data) == {"schema_version", "report", "base", "head", "toolchain_changes", "across_toolchains",
                         "counts", "totals", "summary", "rows", "skipped", "rebuild", "no_effect"}
    assert data["across_toolchains"] is False
    assert data["skipped"] == [] and data["totals"]["skipped_keys"] == {"before": 0, "after": 0}
    assert data["counts"]["worse"] == 1 and data["counts"]["unchanged"] == 39
    assert data["totals"]["keys"] == 24 and data["totals"]["builds"] == 40
    worse = next(r for r in data["rows"] if r["mark"] == "worse")
    assert worse["segments"] == {"tp": "tp4", "width": "w2", "cache": "bf16"}
    assert {"name": "vgpr", "before": vgpr, "after": vgpr + 58, "delta": 58, "verdict": "worse"} in worse["figures"]
    assert worse["before"]["object"]["sha256"] == row(layer, "attn/tp4/w2/bf16", AMD).object.sha256
    assert worse["lint_findings"] == {"before": [], "after": [], "new": [], "fixed": []}  # linted, clean
    assert data["summary"][0]["text"] == f"raises VGPRs of attn (matmul) tp4 w2 bf16 on gfx950 ({vgpr} -> {vgpr + 58})"


def test_stack_compares_each_commit_with_its_parent(layer: Survey, layer_readings: Readings) -> None:
    vgpr = layer_readings[("attn/tp4/w2/bf16", AMD)]["vgpr"]
    # Raised by 58, then lowered by 32: better than its parent, worse than where the range began.
    second = edited(layer, {("attn/tp4/w2/bf16", AMD): {"vgpr": vgpr + 58}}, commit="b" * 40, label="b")
    third = edited(second, {("attn/tp4/w2/bf16", AMD): {"vgpr": vgpr + 26},
                            ("proj/tp4/w2", NV): {"status": "error", "error": "boom"}}, commit="c" * 40, label="c")
    s = stack([replace(layer, commit="a" * 40, label="a"), second, third], ["raise", "lower"])
    assert [step.commit for step in s.steps] == ["b" * 40, "c" * 40]
    first, last = s.steps
    assert [(r.key, r.mark) for r in first.comparison.rows if r.mark is not Mark.UNCHANGED] == [
        ("attn/tp4/w2/bf16", Mark.WORSE)]
    assert sorted((r.key, r.mark.value) for r in last.comparison.rows if r.mark is not Mark.UNCHANGED) == [
        ("attn/tp4/w2/bf16", "better"), ("proj/tp4/w2", "newly failing")]
    assert last.keys_built == (23, 24) and last.builds == (39, 40)
    # Every build is linted in the survey, NVIDIA ones too (one policy with `lint`): no finding; the
    # head's failed build is not linted.
    assert first.lint_findings == LintCounts(0, 0, 0, 0, 0, 0, linted=40)
    assert last.lint_findings == LintCounts(0, 0, 0, 0, 0, 0, linted=39)
    overall = next(r for r in s.overall.rows if r.key == "attn/tp4/w2/bf16" and r.target == AMD)
    assert (overall.mark, overall.figure("vgpr")) == (Mark.WORSE, FigureDelta("vgpr", vgpr, vgpr + 26))
    data = stack_dict(s)
    assert data["report"] == "stack" and len(data["steps"]) == 2
    assert data["steps"][1]["keys_built"] == {"ok": 23, "total": 24}
    assert data["steps"][1]["lint_findings"]["linted"] == 39


def test_builds_of_another_toolchain_are_not_comparable_unless_judged_across_toolchains(
        layer: Survey, layer_readings: Readings) -> None:
    """A backend whose toolchain differs makes its builds not comparable; ``across_toolchains`` marks them as
    between two surveys of one toolchain, and the comparison still names what differs."""
    regs = layer_readings[("attn/tp4/w2/bf16", NV)]["regs"]
    head = edited(layer, {("attn/tp4/w2/bf16", NV): {"regs": regs + 24}})
    ptxas = {**layer.toolchain["cuda"]["ptxas"], NV: "Build cuda_12.8.r12.8/compiler.0_0"}
    base = replace(layer, toolchain={**layer.toolchain, "cuda": {**layer.toolchain["cuda"], "ptxas": ptxas}})
    same = compare(layer, head)
    plain, across = compare(base, head), compare(base, head, across_toolchains=True)
    nvidia = [i for i, r in enumerate(same.rows) if r.target == NV]
    assert nvidia and {plain.rows[i].mark for i in nvidia} == {Mark.NOT_COMPARABLE}
    assert [r.mark for r in across.rows] == [r.mark for r in same.rows]
    assert across.counts[Mark.WORSE] == 1 and across.counts[Mark.NOT_COMPARABLE] == 0
    assert across.toolchain_changes == plain.toolchain_changes and len(across.toolchain_changes) == 1
    assert all(r.note is None and r.toolchain_changes == () for r in across.rows)
    assert (plain.across_toolchains, across.across_toolchains) == (False, True)
    assert compare(layer, head, across_toolchains=True).across_toolchains is False  # nothing differed to judge
