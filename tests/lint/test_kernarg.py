"""The AMD kernarg lint: clean on real compiled kernels, exact on the ones a mutation breaks.

Real kernels are compiled here (tests/objects_kernels.py, offline) or committed with the script that
regenerates them (tests/fixtures/lint/regenerate.py; the mutations are tests/lint/mutations.py's, which
tests/lint/test_kernarg_rdna.py applies to RDNA and gfx1250 compiles). Small
hand-written kernels pin the dataflow's rules: scratch spills of lane VGPRs, loops, vcc, copies of the
kernarg pointer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regsurvey.compile.triton_facts import APPENDED_ARGS, arg_names_from_ttir
from regsurvey.lint import ERROR, NOTE, LintInputError, lint_amdgcn
from regsurvey.lint.disassembler import disassemble, find_objdump
from regsurvey.lint.kernarg import analyse, args_from_metadata, find_entry, layout_from_directives, layout_from_hsaco
from regsurvey.objects import amdgcn
from regsurvey.objects.amd_object import parse_hsaco
from regsurvey.objects.amdgcn import parse_functions

from ..objects_kernels import compile_case, value_args
from .mutations import MUTATIONS

APPENDED = len(APPENDED_ARGS)  # Triton's scratch pointers, never reported by the lint

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lint"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
needs_objdump = pytest.mark.skipif(find_objdump() is None, reason="no llvm-objdump of LLVM >= 20 installed")

MATMUL = {"BM": 128, "BN": 128, "BK": 64}
# name: (kernel, target, options, constexprs); the cases tests/objects/test_amd_object.py compiles, and gfx942's
# SGPR-spilling one.
REAL = {
    "add-gfx950": ("add_kernel", "gfx950", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-gfx942": ("add_kernel", "gfx942", (("num_warps", 4),), {"BLOCK": 1024}),
    "vgpr-spill-gfx950": ("hold_tile_kernel", "gfx950", (("num_warps", 1),), {"BLOCK": 16384}),
    "sgpr-spill-gfx950": ("many_buffers_kernel", "gfx950", (("num_warps", 4),), {"BLOCK": 256}),
    "sgpr-spill-gfx942": ("many_buffers_kernel", "gfx942", (("num_warps", 4),), {"BLOCK": 256}),
    "matmul-async-gfx950": ("matmul_kernel", "gfx950", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    "matmul-gfx942": ("matmul_kernel", "gfx942", (("num_warps", 4), ("num_stages", 2)), MATMUL),
}


def real(case: str):  # type: ignore[no-untyped-def]
    return compile_case(REAL[case]), value_args(REAL[case][0])


def assert_lints_clean(compiled: Any, names: list[str]) -> None:
    """A real compile has no finding, from its text with the IR, with the HSACO as well, and without the IR
    nothing that looks like a miscompile (unread preloads are notes at most)."""
    text, llir, hsaco = compiled.asm["amdgcn"], compiled.asm["llir"], compiled.asm["hsaco"]
    assert lint_amdgcn(text, llir=llir, arg_names=names, appended_args=APPENDED) == []
    assert lint_amdgcn(text, hsaco=hsaco, llir=llir, arg_names=names, appended_args=APPENDED) == []
    assert {f.severity for f in lint_amdgcn(text, arg_names=names, appended_args=APPENDED)} <= {NOTE}


@pytest.mark.parametrize("case", REAL)
def test_real_kernels_are_clean(case: str) -> None:
    assert_lints_clean(*real(case))


@needs_objdump
@pytest.mark.parametrize("case", ["sgpr-spill-gfx950", "vgpr-spill-gfx950", "matmul-async-gfx950"])
def test_real_objects_are_clean(case: str) -> None:
    compiled, names = real(case)
    hsaco = compiled.asm["hsaco"]
    assert lint_amdgcn(disassemble(hsaco), hsaco=hsaco, llir=compiled.asm["llir"], arg_names=names,
                       appended_args=APPENDED) == []


def test_the_clean_kernels_do_spill_kernargs() -> None:
    """The clean results are not vacuous: kernarg values really go through lanes and back."""
    compiled, _ = real("sgpr-spill-gfx950")
    (function,) = parse_functions(compiled.asm["amdgcn"])
    report = analyse(function, layout_from_hsaco(parse_hsaco(compiled.asm["hsaco"]).kernels[0]))
    spilled = [e for e in report.events.values() if e.spills]
    assert report.abstain is None
    assert len(spilled) >= 20 and all(e.restored for e in spilled)
    assert sum(o.kind == "load" for o in report.origins) >= 40  # the pointers past the preloaded ones


def test_preload_prologue_is_skipped() -> None:
    compiled, _ = real("add-gfx950")
    (function,) = parse_functions(compiled.asm["amdgcn"])
    layout = layout_from_hsaco(parse_hsaco(compiled.asm["hsaco"]).kernels[0])
    entry, prologue = find_entry(function, layout)
    assert entry != 0 and function.blocks[entry].aligned == 8
    assert [i.mnemonic for i in prologue] == ["s_load_dwordx2", "s_load_dwordx8", "s_load_dwordx2",
                                              "s_waitcnt", "s_branch"]
    # Its loads are never read by design: none of them is a value origin.
    report = analyse(function, layout)
    assert not [o for o in report.origins if o.kind == "load"]
    assert {o.kind for o in report.origins} == {"pointer", "preload"}


def test_unread_preloads_without_ir_are_notes_and_scratch_pointers_never_show() -> None:
    compiled, names = real("matmul-async-gfx950")
    found = lint_amdgcn(compiled.asm["amdgcn"], arg_names=names, appended_args=APPENDED)
    # M and N: preloaded, never read (this kernel does no bounds checks). The two scratch pointers
    # Triton appends are never read either and never reported.
    assert [(f.arg_name, f.severity, f.arg_offset) for f in found] == [("M", NOTE, 24), ("N", NOTE, 28)]
    assert all("preloaded into s" in f.reason for f in found)


# -- the mutated fixtures -------------------------------------------------------------------------------------

def _mutant(name: str) -> tuple[dict, dict]:
    mutant = MANIFEST["mutants"][name]
    return mutant, MANIFEST["bases"][mutant["base"]]


@pytest.mark.parametrize("name", list(MANIFEST["bases"]))
def test_fixture_bases_are_clean(name: str) -> None:
    base = MANIFEST["bases"][name]
    text = (FIXTURES / base["amdgcn"]).read_text()
    llir = (FIXTURES / base["llir"]).read_text()
    assert lint_amdgcn(text, llir=llir, arg_names=base["arg_names"], appended_args=APPENDED) == []


@pytest.mark.parametrize("name", list(MANIFEST["mutants"]))
def test_the_shared_mutations_make_the_committed_mutants(name: str) -> None:
    """tests/lint/mutations.py, which the RDNA tests apply to fresh compiles, is what made these fixtures."""
    mutant, base = _mutant(name)
    text, offsets, description = MUTATIONS[name]((FIXTURES / base["amdgcn"]).read_text())
    assert text == (FIXTURES / mutant["amdgcn"]).read_text() and description == mutant["mutation"]
    visible = [a for a in base["args"] if not a["value_kind"].startswith("hidden_")]
    assert sorted({n for o in offsets for a, n in zip(visible, base["arg_names"])
                   if a["offset"] <= o < a["offset"] + a["size"]}) == mutant["expected"]


@pytest.mark.parametrize("name", list(MANIFEST["mutants"]))
def test_mutants_name_exactly_the_lost_arguments(name: str) -> None:
    mutant, base = _mutant(name)
    text = (FIXTURES / mutant["amdgcn"]).read_text()
    llir = (FIXTURES / base["llir"]).read_text()
    found = lint_amdgcn(text, llir=llir, arg_names=base["arg_names"], appended_args=APPENDED)
    assert sorted(f.arg_name for f in found) == sorted(mutant["expected"])
    assert {f.severity for f in found} == {ERROR}
    assert all("the LLVM IR uses this argument" in f.reason for f in found)
    # Without the IR the same arguments are suspects: they were loaded in the body, or spilled.
    loose = lint_amdgcn(text, arg_names=base["arg_names"], appended_args=APPENDED)
    assert sorted(f.arg_name for f in loose if f.severity == ERROR) == sorted(mutant["expected"])


@needs_objdump
@pytest.mark.parametrize("name", list(MANIFEST["mutants"]))
def test_mutant_objects_name_exactly_the_lost_arguments(name: str) -> None:
    mutant, base = _mutant(name)
    obj = (FIXTURES / mutant["object"]).read_bytes()
    found = lint_amdgcn(disassemble(obj), hsaco=obj, llir=(FIXTURES / base["llir"]).read_text(),
                        arg_names=base["arg_names"], appended_args=APPENDED)
    assert sorted(f.arg_name for f in found) == sorted(mutant["expected"])
    assert all(f.address is not None for f in found)


def test_findings_say_where_the_value_was_lost() -> None:
    mutant, base = _mutant("restore-removed")
    (found,) = lint_amdgcn((FIXTURES / mutant["amdgcn"]).read_text(),
                           llir=(FIXTURES / base["llir"]).read_text(), arg_names=base["arg_names"],
                           appended_args=APPENDED)
    assert (found.kernel, found.target, found.arg_index, found.arg_offset) == ("many_buffers_kernel", "gfx950", 32, 256)
    assert (found.load, found.line) == ("s_load_dwordx2 s[12:13], s[0:1], 0x100", 28)
    assert "spilled to v69 lane 0 (line 53) and never restored" in found.reason
    assert found.to_dict()["load"] == {"instruction": found.load, "line": 28}

    mutant, base = _mutant("wide-load-copy-dropped")
    (found,) = lint_amdgcn((FIXTURES / mutant["amdgcn"]).read_text(), arg_names=base["arg_names"],
                           appended_args=APPENDED)
    assert found.load.startswith("s_load_dwordx16 ") and found.arg_offset == 112


# -- hand-written kernels: the dataflow's rules ---------------------------------------------------------------

def kernel(body: str, preload: int = 0) -> str:
    """A gfx942 kernel around ``body``: args a (pointer, 0), n (i32, 8), then the two scratch pointers."""
    return f"""\
\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
\t.text
\t.p2align\t8
\t.type\tk,@function
k:
{body}
.Lfunc_end0:
\t.size\tk, .Lfunc_end0-k
\t.section\t.rodata,"a",@progbits
\t.amdhsa_kernel k
\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1
\t\t.amdhsa_user_sgpr_kernarg_preload_length {preload}
\t.end_amdhsa_kernel
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .args:
      - .address_space:  global
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .offset:         8
        .size:           4
        .value_kind:     by_value
      - .address_space:  global
        .offset:         16
        .size:           8
        .value_kind:     global_buffer
      - .address_space:  global
        .offset:         24
        .size:           8
        .value_kind:     global_buffer
    .name:           k
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
...
\t.end_amdgpu_metadata
"""


def lost(body: str, preload: int = 0) -> list[str | None]:
    return sorted(f.arg_name or "" for f in lint_amdgcn(kernel(body, preload), arg_names=["a", "n"],
                                                        appended_args=APPENDED))


SCRATCH = """\
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\ts_load_dword s4, s[0:1], 0x8
\ts_waitcnt lgkmcnt(0)
\tv_writelane_b32 v40, s2, 0
\tv_writelane_b32 v40, s3, 1
\tscratch_store_dword off, v40, off offset:8      ; the lane VGPR itself spilled
\ts_mov_b32 s2, 0
\ts_mov_b32 s3, 0
\tv_mov_b32_e32 v40, 0
\tscratch_load_dword v41, off, off offset:8
\tv_accvgpr_write_b32 a3, v41
\tv_accvgpr_read_b32 v42, a3
\tv_readlane_b32 s6, v42, 0
\tv_readlane_b32 s7, v42, 1
\tglobal_store_dword v0, v1, s[6:7]
\ts_cmp_eq_u32 s4, 0
\ts_endpgm"""


def test_lanes_followed_through_scratch_and_agprs() -> None:
    assert lost(SCRATCH) == []
    # The restore of the lanes gone: `a` was spilled and never restored.
    assert lost(SCRATCH.replace("\tv_readlane_b32 s6, v42, 0\n\tv_readlane_b32 s7, v42, 1\n", "")) == ["a"]
    # Reloaded from another slot: the restore reads nothing of `a`.
    assert lost(SCRATCH.replace("off, off offset:8", "off, off offset:12")) == ["a"]
    # The lanes clobbered before the scratch spill: gone too.
    assert lost(SCRATCH.replace("\tscratch_store_dword off, v40", "\tv_mov_b32_e32 v40, 0\n"
                                "\tscratch_store_dword off, v40")) == ["a"]
    # n read by nothing (s_cmp gone): loaded in the body and never read.
    assert lost(SCRATCH.replace("\ts_cmp_eq_u32 s4, 0\n", "")) == ["n"]


SGPR_SLOT = """\
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\ts_load_dword s4, s[0:1], 0x8
\ts_waitcnt lgkmcnt(0)
\tv_writelane_b32 v40, s2, 0
\tv_writelane_b32 v40, s3, 1
\ts_movk_i32 s5, 0x1010
\tscratch_store_dword off, v40, s5      ; past the 4 KiB an offset reaches: the address in an SGPR
\ts_movk_i32 s5, 0x1020
\tscratch_store_dword off, v41, s5      ; another slot through the same register
\tv_mov_b32_e32 v40, 0
\ts_movk_i32 s5, 0x1010
\tscratch_load_dword v42, off, s5
\tv_readlane_b32 s6, v42, 0
\tv_readlane_b32 s7, v42, 1
\tglobal_store_dword v0, v1, s[6:7]
\ts_cmp_eq_u32 s4, 0
\ts_endpgm"""


def test_scratch_slots_addressed_through_an_sgpr() -> None:
    """A frame past the offset's reach (gfx11's large kernels; tests/pressure/test_pressure_rdna.py has a real
    one): slots are told by the SGPR's value, not its name."""
    assert lost(SGPR_SLOT) == []  # 0x1010 again: the lanes come back, though s5 addressed 0x1020 in between
    reload = "\ts_movk_i32 s5, 0x1010\n\tscratch_load_dword"
    assert lost(SGPR_SLOT.replace(reload, "\ts_movk_i32 s5, 0x1020\n\tscratch_load_dword")) == ["a"]
    # An address the block does not set, while a slot holds lanes: the kernel is not judged.
    unknown = SGPR_SLOT.replace(reload, "\ts_add_u32 s5, s9, 16\n\tscratch_load_dword")
    assert lost(unknown) == []
    text = kernel(unknown)
    (function,) = parse_functions(text)
    meta = amdgcn.metadata(text)
    assert meta is not None
    layout = layout_from_directives(amdgcn.amdhsa_directives(text)["k"], args_from_metadata(meta["amdhsa.kernels"][0]))
    assert "cannot name" in (analyse(function, layout).abstain or "")


LOOP = """\
\ts_load_dword s4, s[0:1], 0x8
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\ts_waitcnt lgkmcnt(0)
\tv_writelane_b32 v40, s4, 0
\ts_mov_b32 s4, 0
\ts_mov_b32 s5, 0
.LBB0_1:
\ts_cmp_eq_u32 s5, 0          ; reads n only after the back edge brought it here
\ts_cbranch_scc1 .LBB0_2
\tv_readlane_b32 s5, v40, 0
\ts_branch .LBB0_1
.LBB0_2:
\tglobal_store_dword v0, v1, s[2:3]
\ts_endpgm"""


def test_loops_reach_a_fixpoint() -> None:
    assert lost(LOOP) == []
    # The loop's restore goes into s6, which nothing reads.
    assert lost(LOOP.replace("v_readlane_b32 s5, v40, 0", "v_readlane_b32 s6, v40, 0")) == ["n"]


def test_kernarg_pointer_copies_vcc_and_implicit_reads() -> None:
    copied = """\
\ts_mov_b64 s[10:11], s[0:1]
\ts_mov_b32 s0, 0
\ts_load_dwordx2 vcc, s[10:11], 0x0
\ts_load_dword s4, s[10:11], 0x8
\ts_waitcnt lgkmcnt(0)
\ts_cbranch_vccnz .LBB0_1
\tv_div_fmas_f32 v0, v1, v2, v3
.LBB0_1:
\tv_mov_b32_e32 v5, s4
\ts_endpgm"""
    assert lost(copied) == []  # vcc read by s_cbranch_vccnz without naming it; n by v_mov_b32
    no_branch = copied.replace("s_cbranch_vccnz", "s_cbranch_scc1")
    assert lost(no_branch) == []  # v_div_fmas_f32 reads vcc without naming it too
    assert lost(no_branch.replace("\tv_div_fmas_f32 v0, v1, v2, v3\n", "")) == ["a"]
    # Through the copy, not through s[0:1] (now clobbered): still the kernarg segment.
    assert lost(copied.replace("v_mov_b32_e32 v5, s4", "v_mov_b32_e32 v5, 0")) == ["n"]


def test_a_kernarg_load_it_cannot_follow_stops_the_judgement() -> None:
    # A load at a register offset may fetch any argument: nothing is reported for the kernel.
    body = "\ts_load_dword s4, s[0:1], s6\n\ts_load_dword s5, s[0:1], 0x8\n\ts_waitcnt lgkmcnt(0)\n\ts_endpgm"
    assert lost(body) == []
    assert lost(body.replace("s_load_dword s4, s[0:1], s6", "s_load_dword s4, s[0:1], 0x0")) == ["a", "n"]


def test_preloaded_and_unread_is_a_note_without_ir() -> None:
    # Preloaded into s[2:5] (a in s[2:3], n in s4); nothing reads them; only n is reported loosely as
    # a note, and a is read.
    body = "\tglobal_store_dword v0, v1, s[2:3]\n\ts_endpgm"
    (found,) = lint_amdgcn(kernel(body, preload=4), arg_names=["a", "n"], appended_args=APPENDED)
    assert (found.arg_name, found.severity, found.load) == ("n", NOTE, "kernarg preload into s4")


def test_names_from_ttir_match_the_signature() -> None:
    for case in ("add-gfx950", "sgpr-spill-gfx950", "matmul-gfx942"):
        compiled, names = real(case)
        assert arg_names_from_ttir(compiled.asm["ttir"]) == names


def test_input_the_lint_cannot_use() -> None:
    with pytest.raises(LintInputError, match="not a kernel's amdgcn text"):
        lint_amdgcn("s_endpgm\n", appended_args=APPENDED)
    with pytest.raises(LintInputError, match="needs its HSACO"):
        lint_amdgcn(disassemble_stub(), appended_args=APPENDED)
    text = kernel("\ts_endpgm")
    with pytest.raises(LintInputError, match="no metadata .args"):
        lint_amdgcn(text[: text.index("\t.amdgpu_metadata")], appended_args=APPENDED)
    with pytest.raises(LintInputError, match="no kernel 'other'"):
        lint_amdgcn(text, kernel="other", appended_args=APPENDED)


def disassemble_stub() -> str:
    """What llvm-objdump prints for a kernel, without the object it came from."""
    return "\nk.co:\tfile format elf64-amdgpu\n\n0000000000000000 <k>:\n\ts_endpgm  // 000000000000: BF810000\n"
