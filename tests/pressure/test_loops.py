"""The loops in a build's register pressure (regsurvey/pressure/build.py): each loop's source line, each
spill's loop and each line's loop depth, on ``nested_loops_kernel`` (tests/objects_kernels.py), which
spills before, in and under two nested loops, compiled for gfx942, gfx950, RDNA (gfx1100, gfx1201), gfx1250,
sm90 and sm100 (the cases of tests/objects/test_loop_spills.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regsurvey.model.pressure import Pressure, attribution
from regsurvey.pressure.amd import amd_pressure
from regsurvey.pressure.build import loop_line
from regsurvey.pressure.nvidia import nvidia_pressure

from .. import objects_kernels
from ..objects.test_loop_spills import CASES, compiled
from ..readings import llvm_loop_depths


def marked(marker: str) -> int:
    lines = Path(objects_kernels.__file__).read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if line.rstrip().endswith(f"# {marker}"))


def pressure(case: str) -> Pressure:
    ck = compiled(case)
    target = CASES[case][0]
    if target.startswith("gfx"):
        return amd_pressure(ck.asm["amdgcn"], target)
    return nvidia_pressure(ck.asm["cubin"], target, ck.asm["ptx"])


@pytest.mark.parametrize("case", CASES)
def test_each_loop_is_on_its_for_statement(case: str) -> None:
    p = pressure(case)
    assert [(loop.depth, loop.parent) for loop in p.loops] == [(1, None), (2, 0)]
    assert [(Path(loop.line[0]).name, loop.line[1]) for loop in p.loops if loop.line] == [
        ("objects_kernels.py", marked("OUTER")), ("objects_kernels.py", marked("INNER"))]
    # Each loop's own spills are those whose innermost loop it is; the rest are in no loop.
    for index, loop in enumerate(p.loops):
        mine = [s for s in p.spills if s.loop == index]
        assert (loop.stores, loop.reloads) == (sum(s.kind == "store" for s in mine),
                                               sum(s.kind == "reload" for s in mine))
    assert any(s.loop is None for s in p.spills) and p.loops[0].stores + p.loops[0].reloads > 0
    # A line's depth is its deepest instruction's: the inner loop's body is at 2, the outer's at 1.
    by_line = {stats.frame[1]: stats.depth for stats in p.lines if Path(stats.frame[0]).name == "objects_kernels.py"}
    assert by_line[marked("INNER") + 1] == 2 and by_line[marked("INNER") + 2] == 1
    assert Pressure.from_dict(json.loads(json.dumps(p.to_dict()))) == p


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][0].startswith("gfx")])
def test_each_spills_depth_is_llvms(case: str) -> None:
    p = pressure(case)
    text = compiled(case).asm["amdgcn"]
    llvm = llvm_loop_depths(text)
    # A spill's site is its instruction; its text's line is found by its index among the kernel's instructions.
    from regsurvey.objects.amdgcn import parse_functions

    (function,) = [f for f in parse_functions(text) if f.instructions]
    assert [p.loop_depth(s) for s in p.spills] == [llvm[function.instructions[s.site.index].line] for s in p.spills]


def test_a_loops_line_is_where_its_instructions_part_ways() -> None:
    kern, helper = "kern.py", "helper.py"
    # A loop in the kernel: its own lines, the first of them.
    assert loop_line([((kern, 12),), ((kern, 10),), ((kern, 11),), ()]) == (kern, 10)
    # A loop inside a helper inlined at kern.py:30 (and a Triton function inlined inside the loop): the helper's.
    assert loop_line([((helper, 8), (kern, 30)), ((helper, 7), (kern, 30)),
                      (("triton/language/standard.py", 2), (helper, 9), (kern, 30))]) == (helper, 7)
    assert loop_line([((kern, 5),), ((kern, 5),)]) == (kern, 5) and loop_line([(), ()]) is None
    assert attribution(((kern, 5),))[0] == (kern, 5)


def test_diff_says_which_loop_gained_spills() -> None:
    """Two real compiles of the kernel on gfx942: four waves with every register (no spill), then
    ``waves_per_eu=8`` (a quarter of the registers: spills in both loops)."""
    from regsurvey.output.where_text import where_sentences
    from regsurvey.repo.sources import SourcePaths
    from regsurvey.where import where_changes

    from ..objects_kernels import compile_kernel

    free = compile_kernel("nested_loops_kernel", "gfx942", options=(("num_warps", 4),), BLOCK=8192)
    before, after = amd_pressure(free.asm["amdgcn"], "gfx942"), pressure("waves8-gfx942")
    assert not before.spills
    here = Path(__file__).resolve().parents[2]
    paths = SourcePaths(here if (here / ".git").exists() else None, None)
    name = paths.name(str(Path(objects_kernels.__file__).resolve()))
    outer, inner = after.loops
    sentences = where_sentences(where_changes(before, after, paths, paths))
    assert (f"adds {outer.stores} spill stores and {outer.reloads} reloads inside the loop at {name}:{marked('OUTER')}"
            in sentences)
    assert (f"adds {inner.stores} spill stores and {inner.reloads} reloads inside the loop at {name}:{marked('INNER')}"
            " (depth 2)" in sentences)
    back = where_sentences(where_changes(after, before, paths, paths))
    assert (f"removes {inner.stores} spill stores and {inner.reloads} reloads inside the loop at "
            f"{name}:{marked('INNER')} (depth 2)") in back
