"""Spills by loop depth (regsurvey/objects/loop_spills.py) on kernels that spill before, in and under
their loops (tests/objects_kernels.py: ``nested_loops_kernel``), compiled here for gfx942, gfx950, RDNA
(gfx1100, gfx1201), gfx1250, sm90 and sm100 under tight register bounds (one wave or warp, ``waves_per_eu``,
``maxnreg``).

The second reading: on AMD, LLVM's own loop comments in the amdgcn text (``; =>This Inner Loop Header:
Depth=2``), instruction by instruction; on NVIDIA, the SASS's backward branches, each holding the
addresses between its target and itself (tests/readings.py). Every instruction's depth must agree, not
only the counts, but for one place where the CFG is finer than LLVM's blocks: a machine block that ends in
a conditional branch and then an unconditional one (RDNA's inner loop: ``s_cbranch_scc1 .LBB0_6`` back to
its header, ``s_branch .LBB0_2`` out) is one block of the loop to LLVM; here the second branch is a block of
its own, on the way out, one loop shallower.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from regsurvey.model.targets import TARGETS
from regsurvey.objects.amd_object import read_hsaco
from regsurvey.objects.amdgcn import parse_functions
from regsurvey.objects.loop_spills import amd_function_loops, amd_loop_spills, sass_loop_spills, sass_loops
from regsurvey.objects.nvidia_object import disassemble, read_cubin_sass
from regsurvey.objects.sass import read_sass, spill_bytes

from ..objects_kernels import compile_kernel
from ..readings import (
    amd_loop_spill_reading,
    amd_spill_lines,
    llvm_loop_depths,
    nvidia_loop_spill_reading,
    sass_loop_depths,
)

# name: (target, options, BLOCK); each spills in the prologue, and in loops to the depth given.
CASES = {
    "one-wave-gfx950": ("gfx950", (("num_warps", 1),), 16384, 2),
    "waves8-gfx942": ("gfx942", (("num_warps", 4), ("waves_per_eu", 8)), 8192, 2),
    # wave32: VGPRs to scratch (in clauses, whose s_clause carries the comment) and SGPRs to lanes.
    "one-wave-gfx1100": ("gfx1100", (("num_warps", 1),), 4096, 2),
    "one-wave-gfx1201": ("gfx1201", (("num_warps", 1),), 4096, 2),
    # gfx1250: 1024 VGPRs hold the tiles, SGPRs spill to lanes of v256 (`v0 /*v256*/`), at every depth ...
    "one-wave-gfx1250": ("gfx1250", (("num_warps", 1),), 4096, 2),
    # ... and with 256 of them, VGPRs spill to scratch before and in the outer loop.
    "waves4-gfx1250": ("gfx1250", (("num_warps", 1), ("waves_per_eu", 4)), 4096, 1),
    "one-warp-sm90": ("sm90", (("num_warps", 1),), 4096, 1),
    "maxnreg32-sm100": ("sm100", (("num_warps", 1), ("maxnreg", 32)), 1024, 2),
}


@functools.cache
def compiled(case: str) -> Any:
    target, options, block, _ = CASES[case]
    return compile_kernel("nested_loops_kernel", target, options=options, BLOCK=block)


def second_terminator(insts: list, k: int) -> bool:
    """Whether instruction ``k`` is an unconditional branch right after a conditional one: LLVM's second
    terminator of the conditional branch's block (see the module's note)."""
    return insts[k].mnemonic == "s_branch" and k > 0 and insts[k - 1].mnemonic.startswith("s_cbranch_")


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][0].startswith("gfx")])
def test_amd_loop_depths_are_llvms_instruction_by_instruction(case: str) -> None:
    text = compiled(case).asm["amdgcn"]
    (function,) = [f for f in parse_functions(text) if f.instructions]
    insts = function.instructions
    loops = amd_function_loops(function)
    llvm = llvm_loop_depths(text)
    differ = [k for k, inst in enumerate(insts) if llvm[inst.line] != loops.depth[k]]
    assert all(second_terminator(insts, k) and loops.depth[k] == llvm[insts[k].line] - 1 for k in differ)
    assert len(differ) <= 1
    assert max(loops.depth) == 2 and [loop.depth for loop in loops.loops] == [1, 2]
    # Spills at every depth up to the deepest: before the loops, in the outer one (and in the inner one).
    spills = amd_loop_spills(text)
    by_depth = {d: 0 for d in range(3)}
    for line, _ in amd_spill_lines(text).items():
        by_depth[llvm[line]] += 1
    assert {d: spills.stores[d] + spills.reloads[d] for d in range(3)} == by_depth
    deepest = CASES[case][3]
    assert all(by_depth[d] for d in range(deepest + 1)) and spills.deepest == deepest
    ck = compiled(case)
    figures = read_hsaco(ck.asm["hsaco"], lds_bytes=ck.metadata.shared, num_warps=ck.metadata.num_warps,
                         target=TARGETS[CASES[case][0]], code_text=text)
    assert {n: figures[n] for n in ("loop_spill_ops", "loop_spill_depth")} == amd_loop_spill_reading(text) == {
        "loop_spill_ops": spills.in_loops, "loop_spill_depth": deepest}
    assert figures["loop_spill_ops"] < sum(spills.stores) + sum(spills.reloads)  # the prologue's are not counted


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith(("sm90", "sm100"))])
def test_nvidia_loop_depths_are_the_backward_branches_spans(case: str) -> None:
    ck = compiled(case)
    sass = disassemble(ck.asm["cubin"])
    code = read_sass(sass)
    reading = sass_loop_depths(sass)
    assert [(a, d) for a, _, d in reading] == list(zip(code.addresses, sass_loops(code).depth))
    spills = sass_loop_spills(sass)
    assert spills.stores[0] and spills.reloads[0] and spills.deepest == CASES[case][3]
    # The survey's reading: the ptxas log gives the bytes, the SASS the loops (disassembled for that alone).
    stores, loads = spill_bytes(sass)
    stack = read_cubin_sass(ck.asm["cubin"], shared_bytes=0, num_warps=1, target=TARGETS[CASES[case][0]])[0]
    log = (f"ptxas info    : Function properties for {ck.metadata.name}\n"
           f"    {stack['stack_bytes']} bytes stack frame, {stores} bytes spill stores, {loads} bytes spill loads\n")
    figures, read_text = read_cubin_sass(ck.asm["cubin"], shared_bytes=ck.metadata.shared,
                                         num_warps=ck.metadata.num_warps, target=TARGETS[CASES[case][0]],
                                         ptxas_log=log)
    assert read_text == sass and (figures["spill_store_bytes"], figures["spill_load_bytes"]) == (stores, loads)
    assert {n: figures[n] for n in ("loop_spill_ops", "loop_spill_depth")} == nvidia_loop_spill_reading(sass) == {
        "loop_spill_ops": spills.in_loops, "loop_spill_depth": spills.deepest}


def test_a_kernel_that_does_not_spill_is_not_disassembled_for_its_loops() -> None:
    ck = compile_kernel("matmul_kernel", "sm90", options=(("num_warps", 4), ("num_stages", 3)), BM=128, BN=128, BK=64)
    figures, sass = read_cubin_sass(ck.asm["cubin"], shared_bytes=ck.metadata.shared, num_warps=4,
                                    target=TARGETS["sm90"], ptxas_log="")
    assert sass is None and figures["loop_spill_ops"] == figures["loop_spill_depth"] == 0
