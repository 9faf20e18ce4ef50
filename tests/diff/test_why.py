"""A diff that says why: the build's own changes (warps, stages, constexprs) beside the figures, launches of
one key told apart, mixed builds, and the summary's order; on the real layer survey, edited per test."""

from __future__ import annotations

import json
from dataclasses import replace

from regsurvey.check.baseline import Baseline
from regsurvey.check.gate import OCCUPANCY_DROP, judge
from regsurvey.diff.core import compare
from regsurvey.diff.summary import summarize
from regsurvey.model.comparison import BuildChange, Mark, RowComparison
from regsurvey.model.results import Row, Survey
from regsurvey.output.diff_json import comparison_dict
from regsurvey.output.diff_table import TableFormat
from regsurvey.output.figure_text import build_text, launch_text, row_change_text
from regsurvey.output.markdown import MarkdownFormat

from ..layer_survey import edited, row

AMD, NV = "gfx950", "sm90"


def rebuilt(survey: Survey, row_id: str, target: str, **fields: object) -> Survey:
    """``survey`` with the row ``row_id`` on ``target`` built otherwise (``fields`` replaced)."""
    return replace(survey, rows=tuple(replace(r, **fields) if (r.row_id, r.target) == (row_id, target) else r
                                      for r in survey.rows))


def build(c: object, row_id: str, target: str) -> RowComparison:
    return next(r for r in c.rows if (r.row_id, r.target) == (row_id, target))  # type: ignore[attr-defined]


def test_rows_record_the_builds_constexprs(layer: Survey) -> None:
    # attn tp4 w2: matmul on a 2-row A (BLOCK_M 16), then scale_rows over 2048 // 4 columns.
    gemm, scale = row(layer, "attn/tp4/w2/bf16", AMD), row(layer, "attn/tp4/w2/bf16#1", AMD)
    assert (gemm.kernel, gemm.build, gemm.num_warps, gemm.num_stages) == (
        "matmul", {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64}, 4, 2)
    assert (scale.kernel, scale.build) == ("scale_rows", {"BLOCK": 512, "STOP": False})
    assert row(layer, "proj/tp8/w8", NV).build == {"BLOCK": 512, "STOP": False}
    assert row(layer, "attn/tp8/w8/e4m3", NV).num_stages == 3
    # The JSON keeps them; a row of an older survey (no build, no name) reads with both None.
    again = Survey.from_json(layer.to_json())
    assert row(again, "attn/tp4/w2/bf16", AMD).build == gemm.build
    old = {k: v for k, v in gemm.to_dict().items() if k not in ("build", "name")}
    assert (Row.from_dict(old).build, Row.from_dict(old).name) == (None, None)


def test_build_changes_are_told_with_the_occupancy(layer: Survey) -> None:
    gemm = row(layer, "attn/tp4/w2/bf16", AMD)
    nv = row(layer, "attn/tp4/w2/bf16", NV)
    assert gemm.build is not None and nv.build is not None
    head = rebuilt(layer, "attn/tp4/w2/bf16", AMD, num_warps=8, build={**gemm.build, "BLOCK_N": 128},
                   resources={**gemm.resources, "vgpr": gemm.resources["vgpr"] + 20})
    head = rebuilt(head, "attn/tp4/w2/bf16", NV, num_warps=8)  # figures unchanged
    c = compare(layer, head)
    amd, cuda = build(c, "attn/tp4/w2/bf16", AMD), build(c, "attn/tp4/w2/bf16", NV)
    assert amd.build_changes == (BuildChange("num_warps", 4, 8), BuildChange("BLOCK_N", 64, 128, constexpr=True))
    waves = gemm.resources["occupancy"]
    assert build_text(amd) == f"num_warps 4 → 8, BLOCK_N 64 → 128; waves/SIMD unchanged at {waves}"
    warps = nv.resources["occupancy_warps"]
    assert (cuda.mark, build_text(cuda, "->")) == (Mark.UNCHANGED, f"num_warps 4 -> 8; warps/SM unchanged at {warps}")
    vgpr = gemm.resources["vgpr"]
    assert row_change_text(amd) == (f"VGPR {vgpr} → {vgpr + 20} (+20); built with num_warps 4 → 8, BLOCK_N 64 → 128;"
                                    f" waves/SIMD unchanged at {waves}")
    # Every report says it: the Markdown's change column, the terminal table, the summary, the JSON.
    markdown = MarkdownFormat().format(c)
    assert (f"| **worse** | `attn/tp4/w2/bf16` | gfx950 | `matmul` | VGPR {vgpr} → {vgpr + 20} (+20); built with "
            f"num_warps 4 → 8, BLOCK_N 64 → 128; waves/SIMD unchanged at {waves} |") in markdown
    assert "num_warps 4 → 8, BLOCK_N 64 → 128; waves/SIMD unchanged at" in TableFormat(width=300).format(c)
    assert summarize(c).texts[0] == (f"raises VGPRs of attn (matmul) tp4 w2 bf16 on gfx950 ({vgpr} → {vgpr + 20});"
                                     " built with num_warps 4 → 8, BLOCK_N 64 → 128")
    data = next(r for r in comparison_dict(c)["rows"] if r["row_id"] == "attn/tp4/w2/bf16" and r["target"] == AMD)
    assert data["build_changes"] == [{"name": "num_warps", "before": 4, "after": 8, "constexpr": False},
                                     {"name": "BLOCK_N", "before": 64, "after": 128, "constexpr": True}]
    json.dumps(comparison_dict(c))
    # A base surveyed before constexprs were recorded tells only the options.
    older = rebuilt(layer, "attn/tp4/w2/bf16", AMD, build=None)
    assert build(compare(older, head), "attn/tp4/w2/bf16", AMD).build_changes == (BuildChange("num_warps", 4, 8),)


def test_launches_of_one_kernel_in_a_key_are_told_apart(layer: Survey) -> None:
    # A key launching matmul twice (the up and the down GEMM of an MoE): by launch, or by rs.name.
    twice = replace(layer, rows=tuple(replace(r, kernel="matmul") if r.key.startswith("attn/") else r
                                      for r in layer.rows))
    up = row(twice, "attn/tp8/w8/e4m3#1", AMD)
    head = rebuilt(twice, "attn/tp8/w8/e4m3#1", AMD, resources={**up.resources, "vgpr_spill": 4})
    c = compare(twice, head)
    assert [launch_text(r) for r in c.rows if r.key == "attn/tp8/w8/e4m3" and r.target == AMD] == [
        "matmul [launch 0]", "matmul [launch 1]"]
    assert launch_text(build(c, "proj/tp8/w8", AMD)) == "scale_rows"  # one launch of it: no number
    assert "| **worse** | `attn/tp8/w8/e4m3` | gfx950 | `matmul [launch 1]` | Vspill 0 → 4 (+4) |" in \
        MarkdownFormat().format(c)
    assert summarize(c).texts[0] == "adds VGPR spills to attn (matmul [launch 1]) tp8 w8 e4m3 on gfx950 (0 → 4)"
    named = replace(head, rows=tuple(replace(r, name="down" if r.launch else "up") if r.key.startswith("attn/")
                                     else r for r in head.rows))
    c = compare(replace(twice, rows=tuple(replace(r, name="down" if r.launch else "up") if r.key.startswith("attn/")
                                          else r for r in twice.rows)), named)
    assert [launch_text(r) for r in c.rows if r.key == "attn/tp8/w8/e4m3" and r.target == AMD] == [
        "matmul [up]", "matmul [down]"]
    assert summarize(c).texts[0] == "adds VGPR spills to attn (matmul [down]) tp8 w8 e4m3 on gfx950 (0 → 4)"
    assert comparison_dict(c)["rows"][1]["label"] == "matmul [down]"


def test_a_build_moved_both_ways_is_mixed_and_still_fails_the_gate(layer: Survey) -> None:
    gemm = row(layer, "attn/tp4/w8/bf16", AMD)
    waves = gemm.resources["occupancy"]
    head = edited(layer, {("attn/tp4/w8/bf16", AMD): {"vgpr": gemm.resources["vgpr"] - 8, "occupancy": waves - 1},
                          ("attn/tp4/w2/bf16", AMD): {"occupancy": waves - 1}})
    c = compare(layer, head)
    mixed, worse = build(c, "attn/tp4/w8/bf16", AMD), build(c, "attn/tp4/w2/bf16", AMD)
    assert (mixed.mark, worse.mark) == (Mark.MIXED, Mark.WORSE)
    assert c.counts[Mark.MIXED] == 1 and c.counts[Mark.WORSE] == 1 and mixed in c.regressions
    # The gate judges its worse figure exactly as a worse build's.
    problems = [(p.rule, p.row.row_id, [f.name for f in p.figures]) for p in judge(c, Baseline()).problems]
    assert problems == [(OCCUPANCY_DROP, "attn/tp4/w2/bf16", ["occupancy"]),
                        (OCCUPANCY_DROP, "attn/tp4/w8/bf16", ["occupancy"])]
    assert "| **mixed** | `attn/tp4/w8/bf16` | gfx950 | `matmul` |" in MarkdownFormat().format(c)
    assert "mixed (1)" in TableFormat(width=200).format(c)


def test_the_summary_tells_worse_then_better_then_neutral(layer: Survey) -> None:
    gemm = row(layer, "attn/tp4/w8/bf16", AMD)
    kernarg = row(layer, "proj/tp4/w2", AMD).resources["kernarg_bytes"]
    head = edited(layer, {
        ("proj/tp4/w2", AMD): {"kernarg_bytes": kernarg + 8},  # neutral
        ("attn/tp4/w8/bf16", AMD): {"vgpr": gemm.resources["vgpr"] - 8},  # better
        ("proj/tp8/w8", NV): {"status": "error", "error": "out of resource"},  # worse
        ("attn/tp8/w2/bf16", NV): {"spill_store_bytes": 64},  # worse
    })
    lines = summarize(compare(layer, head)).lines
    assert [(line.tone, line.text.split(" ")[0]) for line in lines] == [
        ("worse", "breaks"), ("worse", "adds"), ("better", "lowers"), ("neutral", "raises"), ("neutral", "36")]
    assert lines[1].text == "adds spill stores to attn (matmul) tp8 w2 bf16 on sm90 (0 → 64 B)"
