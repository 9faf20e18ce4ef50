"""The gate's rules on real surveys: the toy layer with edited figures, and rows carrying real lint
findings from the kernarg lint's fixtures."""

from __future__ import annotations

from dataclasses import replace

from regsurvey.check.baseline import Baseline, CheckRules, parse_baseline, updated_baseline_text
from regsurvey.check.gate import (
    KERNARG_NEVER_READ,
    LOOP_SPILL,
    NEW_SPILL,
    NEWLY_FAILING,
    OCCUPANCY_DROP,
    REGISTER_INCREASE,
    judge,
)
from regsurvey.diff.core import compare
from regsurvey.model.results import Survey
from regsurvey.output.gate_text import problem_message

from ..layer_survey import edited, row, without
from ..lint_surveys import clean_and_mutated, findings, fixture_row, lint_survey

AMD, NV = "gfx950", "sm90"


def problems(result) -> list[tuple[str, str, str, tuple[str, ...]]]:
    return [(p.rule.id, p.row.row_id, p.row.target, tuple(f.name for f in p.figures)) for p in result.problems]


def test_an_unchanged_survey_passes(layer: Survey) -> None:
    result = judge(compare(layer, layer), Baseline())
    assert result.passed and result.problems == () and result.allowed == ()


def test_spills_fail_unless_the_baseline_allows_them(layer: Survey) -> None:
    head = edited(layer, {
        ("attn/tp4/w8/e4m3", AMD): {"vgpr": 128, "vgpr_spill": 24, "scratch_bytes": 96},
        ("attn/tp4/w2/bf16", NV): {"regs": 32, "spill_store_bytes": 72, "spill_load_bytes": 72, "stack_bytes": 64},
        ("proj/tp8/w8", NV): {"regs": 10},  # fewer registers: better, nothing to judge
    })
    c = compare(layer, head)
    result = judge(c, Baseline())
    assert not result.passed
    assert problems(result) == [
        (NEW_SPILL.id, "attn/tp4/w2/bf16", NV, ("spill_store_bytes", "spill_load_bytes", "stack_bytes")),
        (NEW_SPILL.id, "attn/tp4/w8/e4m3", AMD, ("vgpr_spill", "scratch_bytes")),
    ]
    assert problem_message(result.problems[1]) == (
        "attn/tp4/w8/e4m3 on gfx950 (matmul): VGPR spills 0 → 24, scratch 0 → 96 B; no baseline entry allows it")
    # A glob entry allowing VGPR spills (scratch rides along), and one too tight for the NVIDIA spills.
    baseline = parse_baseline('''
[[allow]]
key = "attn/tp4/w8/*"
target = "gfx950"
kernel = "matmul"
vgpr_spill = 32
reason = "w8 tiles spill a little on gfx950"

[[allow]]
key = "attn/tp4/*"
target = "sm90"
spill_store_bytes = 64
reason = "older cap"
''')
    result = judge(c, baseline)
    # Entry 2 names spill stores: loads and stack ride with them, the stores are past its value.
    assert problems(result) == [(NEW_SPILL.id, "attn/tp4/w2/bf16", NV, ("spill_store_bytes",))]
    assert result.problems[0].limits == ('entry 2 (key "attn/tp4/*", target sm90) allows spill stores up to 64 B',)
    assert problem_message(result.problems[0]) == (
        "attn/tp4/w2/bf16 on sm90 (matmul): spill stores 0 → 72 B; "
        "entry 2 (key \"attn/tp4/*\", target sm90) allows spill stores up to 64 B")
    assert [(a.row.row_id, a.figure.name, a.entry.number) for a in result.allowed] == [
        ("attn/tp4/w2/bf16", "spill_load_bytes", 2), ("attn/tp4/w2/bf16", "stack_bytes", 2),
        ("attn/tp4/w8/e4m3", "vgpr_spill", 1), ("attn/tp4/w8/e4m3", "scratch_bytes", 1)]
    # --update-baseline: the entries it needs (attn launches two kernels: the entry names its kernel).
    needed = judge(c, Baseline()).needed_allowances()
    assert [(a.key, a.target, a.kernel, dict(a.figures)) for a in needed] == [
        ("attn/tp4/w2/bf16", NV, "matmul", {"spill_store_bytes": 72, "spill_load_bytes": 72, "stack_bytes": 64}),
        ("attn/tp4/w8/e4m3", AMD, "matmul", {"vgpr_spill": 24, "scratch_bytes": 96})]
    assert judge(c, parse_baseline(updated_baseline_text(None, list(needed), "capped at 32 registers"))).passed
    needed = result.needed_allowances()
    assert [(a.key, a.target, a.kernel, dict(a.figures)) for a in needed] == [
        ("attn/tp4/w2/bf16", NV, "matmul", {"spill_store_bytes": 72})]
    updated = parse_baseline(updated_baseline_text(None, list(needed), "capped at 32 registers"))
    assert judge(c, updated).problems[0].rule is NEW_SPILL  # the first entry is not in this file
    both = parse_baseline(updated_baseline_text('''
[[allow]]
key = "attn/tp4/w8/*"
vgpr_spill = 32
reason = "w8 tiles spill a little on gfx950"
''', list(needed), "capped at 32 registers"))
    assert judge(c, both).passed


def test_occupancy_drops_fail_register_growth_only_past_the_threshold(layer: Survey) -> None:
    head = edited(layer, {
        ("attn/tp4/w2/bf16", AMD): {"vgpr": 64, "occupancy": 6},  # registers cost a wave
        ("attn/tp8/w2/bf16", AMD): {"vgpr": 48},  # more registers, same occupancy
        ("proj/tp4/w2", NV): {"regs": 40, "occupancy_warps": 48, "occupancy_blocks": 12},
    })
    c = compare(layer, head)
    assert problems(judge(c, Baseline())) == [
        (OCCUPANCY_DROP.id, "attn/tp4/w2/bf16", AMD, ("occupancy",)),
        (OCCUPANCY_DROP.id, "proj/tp4/w2", NV, ("occupancy_warps",)),
    ]
    strict = Baseline(rules=CheckRules(register_increase=16))
    assert problems(judge(c, strict))[2:] == [
        (REGISTER_INCREASE.id, "attn/tp4/w2/bf16", AMD, ("vgpr",)),  # +26
        (REGISTER_INCREASE.id, "proj/tp4/w2", NV, ("regs",)),  # +22; attn/tp8/w2/bf16 is +10
    ]
    allowed = parse_baseline('''
[check]
occupancy_drop = true
register_increase = 16

[[allow]]
key = "attn/*"
occupancy = 6
vgpr = 64
reason = "bigger tiles trade a wave for fewer LDS round trips"
''')
    assert problems(judge(c, allowed)) == [(OCCUPANCY_DROP.id, "proj/tp4/w2", NV, ("occupancy_warps",)),
                                           (REGISTER_INCREASE.id, "proj/tp4/w2", NV, ("regs",))]
    assert judge(c, Baseline(rules=CheckRules(occupancy_drop=False))).passed


def test_builds_that_stop_building_fail(layer: Survey) -> None:
    head = edited(layer, {("proj/tp8/w8", NV): {"status": "error", "error": "out of resource: shared memory"}})
    added_broken = replace(row(layer, "proj/tp8/w2", NV), key="proj/tp16/w2", axes={"tp": 16, "width": 2},
                           status="error", error="CompilationError: boom", resources={}, object=None)
    added_spilling = replace(row(layer, "proj/tp8/w2", AMD), key="proj/tp16/w2", axes={"tp": 16, "width": 2},
                             resources={**row(layer, "proj/tp8/w2", AMD).resources, "sgpr_spill": 3})
    head = replace(head, rows=head.rows + (added_broken, added_spilling))
    result = judge(compare(layer, head), Baseline())
    assert problems(result) == [(NEWLY_FAILING.id, "proj/tp8/w8", NV, ()),
                                (NEWLY_FAILING.id, "proj/tp16/w2", NV, ()),
                                (NEW_SPILL.id, "proj/tp16/w2", AMD, ("sgpr_spill",))]
    broken, new, spilling = result.problems
    assert problem_message(broken) == ("proj/tp8/w8 on sm90 (scale_rows) no longer builds: out of resource: "
                                       "shared memory")
    assert problem_message(new) == "proj/tp16/w2 on sm90 (scale_rows) is new and fails to build: CompilationError: boom"
    # A new build's spills are measured from zero.
    assert problem_message(spilling).startswith("proj/tp16/w2 on gfx950 (scale_rows): SGPR spills 3 (new build)")
    assert [(a.key, dict(a.figures)) for a in result.needed_allowances()] == [("proj/tp16/w2", {"sgpr_spill": 3})]
    assert problems(judge(compare(layer, head), Baseline(rules=CheckRules(newly_failing=False)))) == [
        (NEW_SPILL.id, "proj/tp16/w2", AMD, ("sgpr_spill",))]
    # A build that was already failing, or that went away, is not the change's doing.
    gone = without(layer, {("proj/tp8/w8", NV)})
    assert judge(compare(head, head), Baseline()).passed and judge(compare(layer, gone), Baseline()).passed


def test_other_toolchains_are_not_judged(layer: Survey) -> None:
    cuda = dict(layer.toolchain["cuda"], ptxas="Build cuda_12.8.r12.8/compiler.0_0")
    head = edited(layer, {("proj/tp4/w2", NV): {"spill_store_bytes": 8}}, toolchain={**layer.toolchain, "cuda": cuda})
    assert judge(compare(layer, head), Baseline()).passed


def test_new_miscompile_suspects_fail() -> None:
    base, head = clean_and_mutated()
    result = judge(compare(base, head), Baseline())
    assert problems(result) == [(KERNARG_NEVER_READ.id, "buffers/w8", "gfx950", ()),
                                (KERNARG_NEVER_READ.id, "gemm/w2", "gfx950", ())]
    assert problem_message(result.problems[0]) == (
        "buffers/w8 on gfx950 (many_buffers_kernel): kernel argument out_ptr (#32, offset 256) loaded and never "
        "read, though the source uses it (a miscompile suspect)")
    assert [f.arg_name for f in result.problems[1].findings] == ["stride_cm"]
    assert result.needed_allowances() == ()  # no baseline entry silences a miscompile suspect
    assert judge(compare(base, head), Baseline(rules=CheckRules(lint_errors=False))).passed
    # Fixing them passes; so does an old suspect still there (it is not new).
    assert judge(compare(head, base), Baseline()).passed and judge(compare(head, head), Baseline()).passed


def test_lint_notes_do_not_fail() -> None:
    notes = fixture_row("matmul-gfx950", findings("matmul-gfx950.amdgcn", "matmul-gfx950", with_ir=False))
    clean = fixture_row("matmul-gfx950", [])
    assert judge(compare(lint_survey([clean], "a" * 40, "a"), lint_survey([notes], "b" * 40, "b")), Baseline()).passed


def test_a_flaky_build_is_neither_judged_nor_failing(layer: Survey) -> None:
    """A build that hit the toolchain's intermittent link failure twice (status flaky) is not
    comparable: not newly failing, not judged on figures, and the comparison says why."""
    from regsurvey.model.comparison import Mark

    why = "LLD failed to link hsaco source /tmp/a into object file /tmp/b because"
    head = edited(layer, {("proj/tp8/w8", AMD): {"status": "flaky", "error": f"RuntimeError: {why}"}})
    comparison = compare(layer, head)
    (flaky,) = [r for r in comparison.rows if r.row_id == "proj/tp8/w8" and r.target == AMD]
    assert flaky.mark is Mark.NOT_COMPARABLE and flaky.note == f"flaky on the head: RuntimeError: {why}"
    assert judge(comparison, Baseline()).passed
    assert judge(compare(head, layer), Baseline()).passed  # flaky on the base: the head is not judged either


def test_rebaseline_allows_every_failing_figure_and_judges_again(layer: Survey) -> None:
    from regsurvey.check.gate import rebaseline

    head = edited(layer, {("attn/tp8/w8/bf16", AMD): {"vgpr_spill": 20, "scratch_bytes": 80},
                          ("proj/tp8/w8", NV): {"spill_store_bytes": 8, "spill_load_bytes": 8}})
    failing = judge(compare(layer, head), Baseline())
    assert not failing.passed
    text, judged, builds = rebaseline(failing, None, "accepted for the new tiling", "b.toml")
    assert text is not None and builds == 2 and judged.passed
    assert text.count("\n[[allow]]\n") == 2 and text.count('reason = "accepted for the new tiling"') == 2
    assert judge(failing.comparison, parse_baseline(text, "b.toml")).passed  # the text alone allows them
    # Nothing to allow: the baseline is left as it was.
    assert rebaseline(judged, text, "again", "b.toml") == (None, judged, 0)


def test_a_baseline_allows_a_kernels_spills_and_still_fails_new_ones_in_its_loops(layer: Survey) -> None:
    # The base spills 24 VGPRs, none in a loop (the prologue's), and the baseline allows them; the head spills
    # as many, 4 of their instructions now inside the K loop.
    key = ("attn/tp4/w8/e4m3", AMD)
    spilled = {"vgpr_spill": 24, "scratch_bytes": 96}
    base = edited(layer, {key: {**spilled, "loop_spill_ops": 0, "loop_spill_depth": 0}})
    head = edited(layer, {key: {**spilled, "loop_spill_ops": 4, "loop_spill_depth": 1}})
    prologue = '''
[[allow]]
key = "attn/tp4/w8/*"
vgpr_spill = 24
reason = "the w8 tile's prologue spills; measured, harmless"
'''
    c = compare(base, head)
    result = judge(c, parse_baseline(prologue))
    assert problems(result) == [(LOOP_SPILL.id, "attn/tp4/w8/e4m3", AMD, ("loop_spill_ops", "loop_spill_depth"))]
    assert problem_message(result.problems[0]) == (
        "attn/tp4/w8/e4m3 on gfx950 (matmul): spill instructions in loops 0 → 4, deepest loop with a spill 0 → 1; "
        "no baseline entry allows it")
    # A new build that spills: both rules, each from zero; --update-baseline names the loop figures too.
    fresh = judge(compare(without(layer, {key}), head), Baseline())
    assert [p[0] for p in problems(fresh) if p[1] == key[0]] == [NEW_SPILL.id, LOOP_SPILL.id]
    (needed,) = [a for a in fresh.needed_allowances() if a.key == key[0]]
    assert dict(needed.figures) == {**spilled, "loop_spill_ops": 4, "loop_spill_depth": 1}
    # Allowed by name (the depth rides with it), or the rule switched off.
    assert judge(c, parse_baseline(prologue.replace("vgpr_spill = 24", "vgpr_spill = 24\nloop_spill_ops = 4"))).passed
    assert judge(c, Baseline(rules=CheckRules(loop_spill_increase=False))).passed
    assert judge(c, parse_baseline("[check]\nloop_spill_increase = false\n" + prologue)).passed
    # Fewer spills in loops pass; a base surveyed before the figures existed judges none of them.
    assert judge(compare(head, base), Baseline()).passed
    old = replace(base, rows=tuple(replace(r, resources={n: v for n, v in r.resources.items()
                                                         if not n.startswith("loop_")}) for r in base.rows))
    assert judge(compare(old, head), parse_baseline(prologue)).passed
