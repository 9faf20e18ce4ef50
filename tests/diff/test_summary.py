"""The summary in words, on the real layer survey with edited figures: exact sentences.

The layer's own figures in them are its second readings (``layer_readings``), never typed in; the edits
are the tests' own numbers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from regsurvey.diff import compare, summarize
from regsurvey.model.results import Survey

from ..layer_survey import edited, row, without

AMD, NV = "gfx950", "sm90"
Readings = dict[tuple[str, str], dict[str, Any]]


def lines(base: Survey, head: Survey) -> list[tuple[str, str]]:
    return [(line.text, line.tone) for line in summarize(compare(base, head)).lines]


def test_removed_spills_shared_by_two_kinds_are_one_line(layer: Survey, layer_readings: Readings) -> None:
    # The tp8 w8 builds of attn's GEMM (both caches) and of proj spilled before; none does now (their
    # second readings: no VGPR spill, no scratch).
    built = [("attn/tp8/w8/bf16", AMD), ("attn/tp8/w8/e4m3", AMD), ("proj/tp8/w8", AMD)]
    assert {(layer_readings[b]["vgpr_spill"], layer_readings[b]["scratch_bytes"]) for b in built} == {(0, 0)}
    base = edited(layer, {("attn/tp8/w8/bf16", AMD): {"vgpr_spill": 20, "scratch_bytes": 80},
                          ("attn/tp8/w8/e4m3", AMD): {"vgpr_spill": 24, "scratch_bytes": 96},
                          ("proj/tp8/w8", AMD): {"vgpr_spill": 22, "scratch_bytes": 88}})
    summary = summarize(compare(base, layer))
    assert [(line.text, line.tone) for line in summary.lines] == [
        ("removes VGPR spills from attn (matmul) and proj tp8 w8 on gfx950 (20-24 → 0; scratch 80-96 → 0 B)",
         "better"),
        ("every key builds on both commits", "neutral"),
        ("37 of 40 builds unchanged", "neutral"),
    ]
    assert summary.lines[0].rows == (f"{AMD}:attn/tp8/w8/bf16", f"{AMD}:attn/tp8/w8/e4m3", f"{AMD}:proj/tp8/w8")


def test_ranges_split_by_the_axis_that_explains_them(layer: Survey, layer_readings: Readings) -> None:
    gemm = [("attn/tp8/w8/bf16", AMD), ("attn/tp8/w8/e4m3", AMD), ("attn/tp4/w8/bf16", AMD), ("attn/tp4/w8/e4m3", AMD)]
    assert {layer_readings[b]["sgpr_spill"] for b in gemm} == {0}  # no SGPR spills before the edit
    head = edited(layer, {("attn/tp8/w8/bf16", AMD): {"sgpr_spill": 3}, ("attn/tp8/w8/e4m3", AMD): {"sgpr_spill": 3},
                          ("attn/tp4/w8/bf16", AMD): {"sgpr_spill": 16}, ("attn/tp4/w8/e4m3", AMD): {"sgpr_spill": 17}})
    assert lines(layer, head)[0] == (
        "adds SGPR spills to attn (matmul) w8 on gfx950: tp4 0 → 16-17, tp8 0 → 3", "worse")


def test_partial_groups_say_how_many_and_breaks_quote_the_error(layer: Survey, layer_readings: Readings) -> None:
    # attn's GEMM is one kernel at tp4 (one object for every width and cache): one VGPR figure before.
    assert len({row(layer, f"attn/tp4/{k}", AMD).object for k in ("w2/bf16", "w2/e4m3", "w8/bf16", "w8/e4m3")}) == 1
    vgpr = layer_readings[("attn/tp4/w2/bf16", AMD)]["vgpr"]
    assert vgpr < 64  # the edits raise it
    head = edited(layer, {
        ("attn/tp4/w2/bf16", AMD): {"vgpr": 64}, ("attn/tp4/w2/e4m3", AMD): {"vgpr": 64},
        ("attn/tp4/w8/bf16", AMD): {"vgpr": 70},
        ("attn/tp8/w2/bf16", NV): {"status": "error",
                                   "error": "out of resource: shared memory, Required: 300000\nsecond line"},
    })
    assert lines(layer, head) == [
        ("breaks attn (matmul) tp8 w2 bf16 on sm90: out of resource: shared memory, Required: 300000", "worse"),
        (f"raises VGPRs of attn (matmul) tp4 on gfx950 (3 of 4 builds): w2 {vgpr} → 64, w8 bf16 {vgpr} → 70",
         "worse"),
        ("36 of 40 builds unchanged", "neutral"),
    ]


def test_companions_ride_with_their_figure_and_unrelated_groups_stay_apart(layer: Survey,
                                                                           layer_readings: Readings) -> None:
    gemm = [layer_readings[("attn/tp4/w2/bf16", NV)], layer_readings[("attn/tp4/w2/e4m3", NV)]]
    figures = ("spill_store_bytes", "spill_load_bytes", "stack_bytes")
    assert {read[name] for read in gemm for name in figures} == {0}  # no spill and no stack before the edit
    scale, proj = layer_readings[("attn/tp8/w8/bf16#1", NV)], layer_readings[("proj/tp4/w2", NV)]
    assert scale["occupancy_blocks"] > 8 and proj["occupancy_blocks"] > 8  # the edits lower them
    head = edited(layer, {
        ("attn/tp4/w2/bf16", NV): {"spill_store_bytes": 96, "spill_load_bytes": 96, "stack_bytes": 96},
        ("attn/tp4/w2/e4m3", NV): {"spill_store_bytes": 96, "spill_load_bytes": 100, "stack_bytes": 96},
        ("attn/tp8/w8/bf16#1", NV): {"occupancy_blocks": 8, "occupancy_warps": 32},
        ("proj/tp4/w2", NV): {"occupancy_blocks": 8, "occupancy_warps": 32},
    })
    assert lines(layer, head)[:3] == [
        ("adds spill stores to attn (matmul) tp4 w2 on sm90 (0 → 96 B; loads 0 → 96-100 B, stack 0 → 96 B)",
         "worse"),
        ("lowers occupancy of attn (scale_rows) tp8 w8 bf16 on sm90 "
         f"({scale['occupancy_warps']} → 32 warps/SM; {scale['occupancy_blocks']} → 8 blocks/SM)", "worse"),
        (f"lowers occupancy of proj tp4 w2 on sm90 ({proj['occupancy_warps']} → 32 warps/SM; "
         f"{proj['occupancy_blocks']} → 8 blocks/SM)", "worse"),
    ]


def test_nothing_changed(layer: Survey) -> None:
    assert lines(layer, layer) == [("every key builds on both commits", "neutral"),
                                   ("no figure changed in any of the 40 builds", "neutral")]


def test_the_sides_of_an_upgrade_are_toolchains(layer: Survey) -> None:
    # `upgrade`: one revision under two toolchains; `check --base-toolchain`: two revisions, each its own.
    newer = replace(layer, toolchain=dict(layer.toolchain, cuda=dict(layer.toolchain["cuda"], triton="3.9.1")))
    upgrade = compare(layer, newer, across_toolchains=True)
    assert upgrade.across_toolchains
    assert [line.text for line in summarize(upgrade).lines][0] == "every key builds with both toolchains"
    assert summarize(compare(layer, newer)).lines[0].text != "every key builds with both toolchains"
    gate = compare(replace(layer, commit="0" * 40), newer, across_toolchains=True)
    assert [line.text for line in summarize(gate).lines][0] == "every key builds on both sides"


def test_new_and_dropped_builds_and_another_toolchain(layer: Survey) -> None:
    cuda = dict(layer.toolchain["cuda"], ptxas="Build cuda_12.8.r12.8/compiler.0_0")
    assert cuda != layer.toolchain["cuda"]  # a ptxas of another release than this survey's
    base = without(replace(layer, toolchain={**layer.toolchain, "cuda": cuda}),
                   {("proj/tp4/w2", AMD), ("proj/tp4/w8", AMD)})
    head = without(layer, {("attn/tp8/w8/e4m3", AMD)})
    ptxas = layer.toolchain["cuda"]["ptxas"]
    assert lines(base, head) == [
        ("adds 2 builds: proj tp4 on gfx950", "neutral"),
        ("drops 1 build: attn (matmul) tp8 w8 e4m3 on gfx950", "neutral"),
        ("every key builds on both commits", "neutral"),
        ("17 of 40 builds unchanged", "neutral"),
        ("20 builds on sm90 are not comparable: the toolchain differs "
         f"(cuda ptxas: Build cuda_12.8.r12.8/compiler.0_0 → {ptxas})", "neutral"),
    ]


def test_an_upgrade_says_every_key_builds_with_both_toolchains(layer: Survey) -> None:
    # An upgrade compares one revision under two toolchains: its sides are not two commits.
    cuda = dict(layer.toolchain["cuda"], ptxas="Build cuda_12.8.r12.8/compiler.0_0")
    base = replace(layer, toolchain={**layer.toolchain, "cuda": cuda})
    judged = summarize(compare(base, layer, across_toolchains=True)).lines
    assert [(line.text, line.tone) for line in judged] == [
        ("every key builds with both toolchains", "neutral"),
        ("no figure changed in any of the 40 builds", "neutral"),
    ]


def test_unified_vgprs_ride_with_the_vgprs(layer: Survey, layer_readings: Readings) -> None:
    # Without AGPRs the unified count is the VGPR count: one change, told once, in the VGPRs' line. The
    # scaling kernel does no matrix multiply, so it has no AGPRs (the GEMM has some on Triton 3.6).
    scale = "attn/tp4/w2/bf16#1"
    read = layer_readings[(scale, AMD)]
    vgpr, total = read["vgpr"], read["vgpr_total"]
    assert total == vgpr and read["agpr"] == 0 and vgpr < 126
    head = edited(layer, {(scale, AMD): {"vgpr": vgpr + 26, "vgpr_total": total + 26}})
    assert lines(layer, head)[0] == (
        f"raises VGPRs of attn (scale_rows) tp4 w2 bf16 on gfx950 ({vgpr} → {vgpr + 26})", "worse")
    # With AGPRs it is the AGPR offset (VGPRs rounded up to 4) plus the AGPRs: told beside the VGPRs.
    head = edited(layer, {(scale, AMD): {"vgpr": 126, "agpr": 8, "vgpr_total": 136}})
    assert lines(layer, head)[:2] == [
        (f"raises VGPRs of attn (scale_rows) tp4 w2 bf16 on gfx950 ({vgpr} → 126; unified {total} → 136)", "worse"),
        ("raises AGPRs of attn (scale_rows) tp4 w2 bf16 on gfx950 (0 → 8)", "worse"),
    ]


def test_a_summary_line_keeps_its_arrows_apart(layer: Survey, layer_readings: Readings) -> None:
    # The words between before and after are kept apart; each report draws the arrow.
    vgpr = layer_readings[("attn/tp4/w2/bf16", AMD)]["vgpr"]
    head = edited(layer, {("attn/tp4/w2/bf16", AMD): {"vgpr": vgpr + 58}})
    line = next(line for line in summarize(compare(layer, head)).lines if line.tone == "worse")
    assert len(line.segments) == 2 and not any("->" in s or "\x00" in s for s in line.segments)
    assert line.text == line.render("→") and f"{vgpr} → {vgpr + 58}" in line.text  # as a person reads it
    assert f"{vgpr} -> {vgpr + 58}" in line.render("->")  # the JSON's


def test_builds_that_can_no_longer_launch_say_what_is_over_the_limit(layer: Survey, layer_readings: Readings) -> None:
    # flag_gems' gfx950 mm configs under Triton 3.9 (tests/realworld/RESULTS.md, issue 35's defect 4): their LDS
    # outgrew the CU's 160 KiB, occupancy fell to 0, and the summary said only "lowers occupancy". Here attn's
    # GEMM at tp4 w8 (both caches) takes more LDS than a CU has; at w2 bf16 it only loses a wave; proj tp4 w2's
    # shared memory on sm90 outgrows what a block may use; proj tp8 w2's occupancy falls to 0 with no figure
    # over a limit (as a register count the kernel descriptor raised would).
    gemm = layer_readings[("attn/tp4/w8/bf16", AMD)]
    proj, other = layer_readings[("proj/tp4/w2", NV)], layer_readings[("proj/tp8/w2", NV)]
    assert gemm["lds_bytes"] < 163840 and gemm["occupancy"] > 1 and proj["shared_bytes"] < 232448
    head = edited(layer, {
        ("attn/tp4/w8/bf16", AMD): {"lds_bytes": 168880, "occupancy": 0},
        ("attn/tp4/w8/e4m3", AMD): {"lds_bytes": 236976, "occupancy": 0},
        ("attn/tp4/w2/bf16", AMD): {"occupancy": gemm["occupancy"] - 1},
        ("proj/tp4/w2", NV): {"shared_bytes": 240000, "occupancy_warps": 0, "occupancy_blocks": 0},
        ("proj/tp8/w2", NV): {"occupancy_warps": 0, "occupancy_blocks": 0},
    })
    summary = summarize(compare(layer, head))
    assert [(line.text, line.tone) for line in summary.lines][:5] == [
        ("2 builds of attn (matmul) tp4 w8 on gfx950 can no longer launch (LDS 168880-236976 B, above the "
         "CU's 163840 B)", "worse"),
        ("1 build of proj tp4 w2 on sm90 can no longer launch (shared memory 240000 B, above the 232448 B a "
         "block may use)", "worse"),
        (f"1 build of proj tp8 w2 on sm90 can no longer launch (occupancy {other['occupancy_warps']} → 0 "
         "warps/SM)", "worse"),
        (f"lowers occupancy of attn (matmul) tp4 w2 bf16 on gfx950 ({gemm['occupancy']} → {gemm['occupancy'] - 1} "
         "waves/SIMD)", "worse"),
        (f"raises LDS of attn (matmul) tp4 w8 on gfx950: bf16 {gemm['lds_bytes']} → 168880 B, e4m3 "
         f"{gemm['lds_bytes']} → 236976 B", "worse"),
    ]
    assert summary.lines[0].rows == (f"{AMD}:attn/tp4/w8/bf16", f"{AMD}:attn/tp4/w8/e4m3")
    assert summary.lines[2].render("->") == (f"1 build of proj tp8 w2 on sm90 can no longer launch (occupancy "
                                             f"{other['occupancy_warps']} -> 0 warps/SM)")
