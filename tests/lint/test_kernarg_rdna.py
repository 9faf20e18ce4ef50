"""The AMD kernarg lint on RDNA 3/3.5/4 (gfx1100, gfx1151, gfx1201) and GFX12.5 (gfx1250): clean on real
compiles, exact on the ones a mutation breaks.

Every kernel is compiled here, offline (tests/objects_kernels.py). The mutations are those of gfx950's
committed fixtures (tests/lint/mutations.py: a spilled pointer's restores deleted, an i32's reads
redirected, a wide load's copy dropped), applied at test time to the text of each compile: real compiler
output, edited where the test says so. What differs from CDNA code, and each test's reason to exist:

- wave32: 32 lanes a VGPR for SGPR spills, ``vcc_lo``; VOPD pairs (``v_dual_X ... :: v_dual_Y ...``);
- GFX11+ mnemonics (``s_load_b256``, ``scratch_store_b128 off, v[4:7], off``), gfx12's ``s_wait_kmcnt``,
  ``nv`` and ``scope:`` modifiers, workgroup ids in ``ttmp9``;
- no kernarg preload (gfx1100 pads its user SGPRs to 15), and none on gfx1250, whose ``gfx1250-strict``
  sibling preloads without the CDNA prologue;
- gfx1250's VGPRs above v255, written ``v0 /*v256*/``: SGPRs spill to lanes of v256.
"""

from __future__ import annotations

import functools
import gzip
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from regsurvey.compile.triton_facts import APPENDED_ARGS
from regsurvey.lint import ERROR, lint_amdgcn
from regsurvey.lint.disassembler import disassemble, find_objdump
from regsurvey.lint.kernarg import analyse, args_from_metadata, find_entry, layout_from_directives, layout_from_hsaco
from regsurvey.objects import amdgcn
from regsurvey.objects.amd_object import parse_hsaco
from regsurvey.objects.amdgcn import parse_functions

from ..objects.test_amdgcn_rdna import the_function
from ..objects_kernels import compile_case, value_args
from .mutations import MUTATIONS
from .test_kernarg import assert_lints_clean

APPENDED = len(APPENDED_ARGS)
needs_objdump = pytest.mark.skipif(find_objdump() is None, reason="no llvm-objdump of LLVM >= 20 installed")

MATMUL = {"BM": 128, "BN": 128, "BK": 64}
# name: (kernel, target, options, constexprs)
REAL = {
    **{f"add-{t}": ("add_kernel", t, (("num_warps", 4),), {"BLOCK": 1024})
       for t in ("gfx1100", "gfx1151", "gfx1201", "gfx1250", "gfx1250-strict")},
    # 32 buffer descriptors: SGPRs spilled to VGPR lanes (76 on gfx1100, 80 on gfx1201, 224 on gfx1250).
    **{f"sgpr-spill-{t}": ("many_buffers_kernel", t, (("num_warps", 4),), {"BLOCK": 256})
       for t in ("gfx1100", "gfx1151", "gfx1201", "gfx1250")},
    # VGPRs spilled to scratch in clauses (98 on gfx1100); gfx1250 holds the tile in 635 VGPRs.
    "vgpr-spill-gfx1100": ("hold_tile_kernel", "gfx1100", (("num_warps", 1),), {"BLOCK": 4096}),
    "vgpr-spill-gfx1201": ("hold_tile_kernel", "gfx1201", (("num_warps", 1),), {"BLOCK": 4096}),
    "high-vgprs-gfx1250": ("hold_tile_kernel", "gfx1250", (("num_warps", 1),), {"BLOCK": 4096}),
    # 128 VGPRs: 208 spilled, some in clauses of reloads and stores both.
    "vgpr-spill-gfx1250": ("hold_tile_kernel", "gfx1250", (("num_warps", 1), ("waves_per_eu", 8)), {"BLOCK": 4096}),
    # Loops, both kinds of spill; gfx1250's SGPRs go to lanes of v256.
    "nested-gfx1100": ("nested_loops_kernel", "gfx1100", (("num_warps", 1),), {"BLOCK": 4096}),
    "nested-gfx1250": ("nested_loops_kernel", "gfx1250", (("num_warps", 1),), {"BLOCK": 4096}),
    # WMMA, VGPR spills (gfx1100), async copies to LDS (gfx1250).
    "matmul-gfx1100": ("matmul_kernel", "gfx1100", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    "matmul-gfx1250": ("matmul_kernel", "gfx1250", (("num_warps", 4), ("num_stages", 2)), MATMUL),
}


def real(case: str) -> tuple[Any, list[str]]:
    return compile_case(REAL[case]), value_args(REAL[case][0])


@pytest.mark.parametrize("case", REAL)
def test_real_kernels_are_clean(case: str) -> None:
    compiled, names = real(case)
    assert_lints_clean(compiled, names)
    layout = layout_from_hsaco(parse_hsaco(compiled.asm["hsaco"]).kernels[0])
    report = analyse(the_function(compiled.asm["amdgcn"]), layout)
    assert report.abstain is None


@needs_objdump
@pytest.mark.parametrize("case", ["sgpr-spill-gfx1100", "vgpr-spill-gfx1201", "nested-gfx1250", "matmul-gfx1250"])
def test_real_objects_are_clean(case: str) -> None:
    compiled, names = real(case)
    hsaco = compiled.asm["hsaco"]
    dump = disassemble(hsaco)
    assert lint_amdgcn(dump, hsaco=hsaco, llir=compiled.asm["llir"], arg_names=names, appended_args=APPENDED) == []
    # The same dataflow as on the text: the disassembly names v256 as the text does.
    text_report = analyse(the_function(compiled.asm["amdgcn"]), layout_from_hsaco(parse_hsaco(hsaco).kernels[0]))
    (dump_fn,) = parse_functions(dump)
    dump_report = analyse(dump_fn, layout_from_hsaco(parse_hsaco(hsaco).kernels[0]))
    assert dump_report.abstain is None
    assert [(o.kind, o.offset, o.register) for o in dump_report.origins] == \
        [(o.kind, o.offset, o.register) for o in text_report.origins]
    assert len(dump_report.read) == len(text_report.read)


@pytest.mark.parametrize(("case", "lanes"), [("sgpr-spill-gfx1100", 13), ("sgpr-spill-gfx1201", 14),
                                             ("sgpr-spill-gfx1250", 43), ("nested-gfx1250", 6)])
def test_the_clean_kernels_do_spill_kernargs(case: str, lanes: int) -> None:
    """Not vacuous: loaded kernarg dwords (``lanes`` of them, as Triton 3.9 compiles these) go to VGPR lanes (of
    32-lane VGPRs; on gfx1250 of v256) and back."""
    compiled, _ = real(case)
    function = the_function(compiled.asm["amdgcn"])
    report = analyse(function, layout_from_hsaco(parse_hsaco(compiled.asm["hsaco"]).kernels[0]))
    spilled = [e for e in report.events.values() if e.spills]
    assert report.abstain is None and len(spilled) >= lanes and all(e.restored for e in spilled)
    assert all(int(where.split(" lane ")[1]) < 32 for e in spilled for _, where in e.spills)
    if case.endswith("gfx1250") and case.startswith("nested"):
        assert {where.split(" lane ")[0] for e in spilled for _, where in e.spills} == {"v256"}
    assert sum(o.kind == "load" for o in report.origins) >= 4


@pytest.mark.parametrize("target", ["gfx1100", "gfx1151", "gfx1201", "gfx1250"])
def test_no_kernarg_preload(target: str) -> None:
    """RDNA preloads nothing although Triton marks every argument `inreg`; Triton marks none for gfx1250. The
    kernarg pointer is s[0:1]; gfx1100's 15 user SGPRs (a hardware bug's padding) hold no argument."""
    compiled, _ = real(f"add-{target}")
    text, hsaco = compiled.asm["amdgcn"], compiled.asm["hsaco"]
    assert (" inreg " in compiled.asm["llir"]) == (target != "gfx1250")
    kernel = parse_hsaco(hsaco).kernels[0]
    layout = layout_from_hsaco(kernel)
    assert (layout.kernarg_ptr_sgpr, layout.preload_length, layout.wave32) == (0, 0, True)
    assert kernel.descriptor.user_sgpr_count == (15 if target == "gfx1100" else 2)
    directives = amdgcn.amdhsa_directives(text)["add_kernel"]
    assert layout_from_directives(directives, kernel.args) == layout
    report = analyse(the_function(text), layout)
    assert {o.kind for o in report.origins} == {"pointer", "load"}
    # Every argument the kernel uses is loaded in the body and read: x, y, out and n.
    loaded = {o.offset for i, o in enumerate(report.origins) if o.kind == "load" and i in report.read}
    assert {0, 4, 8, 12, 16, 20, 24} <= loaded


def test_gfx1250_strict_preloads_without_a_prologue() -> None:
    """Triton's gfx1250-strict marks the arguments `inreg` and LLVM preloads 12 dwords after the kernarg
    pointer, with no compatibility prologue: the analysis starts at the first instruction, the preloaded
    SGPRs holding the arguments, which the code reads there."""
    compiled, names = real("add-gfx1250-strict")
    text, hsaco = compiled.asm["amdgcn"], compiled.asm["hsaco"]
    layout = layout_from_hsaco(parse_hsaco(hsaco).kernels[0])
    assert (layout.kernarg_ptr_sgpr, layout.preload_sgpr, layout.preload_length) == (0, 2, 12)
    function = the_function(text)
    assert find_entry(function, layout) == (0, [])
    report = analyse(function, layout)
    assert {o.kind for o in report.origins} == {"pointer", "preload"}
    preload_read = {o.offset for i, o in enumerate(report.origins) if o.kind == "preload" and i in report.read}
    assert {0, 4, 8, 12, 16, 20, 24} <= preload_read
    found = lint_amdgcn(text, llir=compiled.asm["llir"], arg_names=names, appended_args=APPENDED)
    assert found == []
    # Without the IR: the preloaded arguments are read, the scratch pointers are never reported.
    assert lint_amdgcn(text, arg_names=names, appended_args=APPENDED) == []


# -- mutations ------------------------------------------------------------------------------------------------

# (case, mutation): every mutation that finds a site in these compiles.
MUTANTS = [
    ("sgpr-spill-gfx1100", "restore-removed"), ("sgpr-spill-gfx1100", "use-redirected"),
    ("sgpr-spill-gfx1100", "wide-load-copy-dropped"),
    ("sgpr-spill-gfx1151", "restore-removed"), ("sgpr-spill-gfx1151", "wide-load-copy-dropped"),
    ("sgpr-spill-gfx1201", "wide-load-copy-dropped"),
    ("add-gfx1100", "use-redirected"),
    ("nested-gfx1100", "restore-removed"), ("nested-gfx1100", "use-redirected"),
    ("nested-gfx1250", "restore-removed"),
]


def expected_names(case: str, offsets: list[int]) -> list[str]:
    compiled, names = real(case)
    visible = [a for a in parse_hsaco(compiled.asm["hsaco"]).kernels[0].args if not a.value_kind.startswith("hidden_")]
    return sorted({name for o in offsets for a, name in zip(visible, names) if a.offset <= o < a.offset + a.size})


@functools.cache
def mutant(case: str, mutation: str) -> tuple[str, list[str], str]:
    compiled, _ = real(case)
    text, offsets, description = MUTATIONS[mutation](compiled.asm["amdgcn"])
    return text, expected_names(case, offsets), description


@pytest.mark.parametrize(("case", "mutation"), MUTANTS)
def test_mutants_name_exactly_the_lost_arguments(case: str, mutation: str) -> None:
    compiled, names = real(case)
    text, expected, _ = mutant(case, mutation)
    assert expected
    found = lint_amdgcn(text, llir=compiled.asm["llir"], arg_names=names, appended_args=APPENDED)
    assert sorted(f.arg_name for f in found) == expected
    assert {f.severity for f in found} == {ERROR}
    assert all("the LLVM IR uses this argument" in f.reason for f in found)
    loose = lint_amdgcn(text, arg_names=names, appended_args=APPENDED)
    assert sorted(f.arg_name for f in loose if f.severity == ERROR) == expected


def test_a_lost_restore_from_v256_says_where() -> None:
    """gfx1250: the pointer spilled to lanes of v256 (written `v0 /*v256*/`) and never restored."""
    compiled, names = real("nested-gfx1250")
    text, _, description = mutant("nested-gfx1250", "restore-removed")
    assert "v0 /*v256*/" in description
    (found,) = lint_amdgcn(text, llir=compiled.asm["llir"], arg_names=names, appended_args=APPENDED)
    assert found.target == "gfx1250" and re.search(r"spilled to v256 lane \d+ \(line \d+\) and never restored",
                                                    found.reason)


def assemble(text: str, arch: str, out: Path) -> bool:
    """``text`` assembled by the llvm-mc beside the disassembler (False: none). Triton's LLVM writes two things
    a released LLVM 22 does not read: the target spelled `amdgpu11.00-...` and `instprefsize(...)`, whose
    directive (an instruction-prefetch hint) is dropped here."""
    objdump = find_objdump()
    mc = Path(objdump).with_name("llvm-mc") if objdump else None
    if mc is None or not mc.exists():
        return False
    text = re.sub(r'^(\s*\.amdgcn_target\s+)"[^"]*"', rf'\1"amdgcn-amd-amdhsa--{arch}"', text, count=1, flags=re.M)
    text = re.sub(r"^\s*\.amdhsa_inst_pref_size .*$", "", text, flags=re.M)
    subprocess.run([str(mc), "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-filetype=obj", "-o", str(out), "-"],
                   input=text, capture_output=True, text=True, check=True, timeout=300)
    return True


@needs_objdump
@pytest.mark.parametrize(("case", "mutation"), [("sgpr-spill-gfx1100", "wide-load-copy-dropped"),
                                                ("nested-gfx1250", "restore-removed")])
def test_mutant_objects_name_exactly_the_lost_arguments(case: str, mutation: str, tmp_path: Path) -> None:
    compiled, names = real(case)
    text, expected, _ = mutant(case, mutation)
    obj = tmp_path / "mutant.co"
    if not assemble(text, REAL[case][1], obj):
        pytest.skip("no llvm-mc beside llvm-objdump")
    data = obj.read_bytes()
    found = lint_amdgcn(disassemble(data), hsaco=data, llir=compiled.asm["llir"], arg_names=names,
                        appended_args=APPENDED)
    assert sorted(f.arg_name for f in found) == expected
    assert all(f.address is not None for f in found)


def test_a_text_that_does_not_name_the_high_vgprs_is_refused() -> None:
    """gfx1250 code past v255 printed without LLVM's annotations (as a disassembler that does not follow
    s_set_vgpr_msb would: `v0` for v256): the lanes of v0 and v256 would be one, so nothing is reported, even
    for the mutant whose lost restore the annotated text shows."""
    compiled, names = real("nested-gfx1250")
    text, _, _ = mutant("nested-gfx1250", "restore-removed")
    bare = re.sub(r"\s*/\*v[^*]*\*/", "", text)
    assert the_function(bare).vgprs_unnamed and not the_function(text).vgprs_unnamed
    report = analyse(the_function(bare), layout_from_hsaco(parse_hsaco(compiled.asm["hsaco"]).kernels[0]))
    assert report.abstain is not None and "v256" in report.abstain
    assert lint_amdgcn(bare, llir=compiled.asm["llir"], arg_names=names, appended_args=APPENDED) == []


def test_a_large_real_kernel_is_clean() -> None:
    """The demo's MLA decode on gfx1100 (tests/fixtures/pressure/mla-decode-e4m3-gfx1100.amdgcn.gz): 67 thousand
    instructions, 1,874 VGPRs spilled to a frame whose slots past 4 KiB are addressed through SGPRs."""
    text = gzip.decompress((Path(__file__).resolve().parents[1] / "fixtures" / "pressure" /
                            "mla-decode-e4m3-gfx1100.amdgcn.gz").read_bytes()).decode()
    directives = amdgcn.amdhsa_directives(text)["mla_decode_split_kernel"]
    meta = amdgcn.metadata(text)
    assert meta is not None
    layout = layout_from_directives(directives, args_from_metadata(meta["amdhsa.kernels"][0]))
    report = analyse(the_function(text), layout)
    assert report.abstain is None and sum(o.kind == "load" for o in report.origins) > 10
    assert lint_amdgcn(text, appended_args=APPENDED) == []
