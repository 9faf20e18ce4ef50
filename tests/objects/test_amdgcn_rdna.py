"""The AMDGCN parser, the instruction effects and the spill recognizers on RDNA 3/3.5/4 and GFX12.5 code.

Lines are quoted from Triton 3.9's compiles of tests/objects_kernels.py (each test names the one); whole
kernels are compiled here and read against LLVM's own figures: ``; NumVgprs``, ``.vgpr_spill_count``,
``.sgpr_spill_count``. Two long-branch forms no small kernel makes are spliced into real compiles where the
test says so, and checked against llvm-objdump's reading of llvm-mc's object of the same text.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from regsurvey.lint.disassembler import disassemble, find_objdump
from regsurvey.objects import amdgcn
from regsurvey.objects.amd_spills import spill_accesses
from regsurvey.objects.amdgcn import Register, parse_functions, parse_instruction, registers_named
from regsurvey.objects.amdgcn_effects import defs_and_uses
from regsurvey.pressure.amd import _effects

from ..objects_kernels import compile_case
from ..readings import asm_comment, asm_metadata, vgpr_spills
from .test_amdgcn import cfg_shape

needs_objdump = pytest.mark.skipif(find_objdump() is None, reason="no llvm-objdump of LLVM >= 20 installed")

MATMUL = {"BM": 128, "BN": 128, "BK": 64}
CASES = {
    "add-gfx1100": ("add_kernel", "gfx1100", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-gfx1250": ("add_kernel", "gfx1250", (("num_warps", 4),), {"BLOCK": 1024}),
    "sgpr-spill-gfx1100": ("many_buffers_kernel", "gfx1100", (("num_warps", 4),), {"BLOCK": 256}),
    "sgpr-spill-gfx1201": ("many_buffers_kernel", "gfx1201", (("num_warps", 4),), {"BLOCK": 256}),
    "sgpr-spill-gfx1250": ("many_buffers_kernel", "gfx1250", (("num_warps", 4),), {"BLOCK": 256}),
    "vgpr-spill-gfx1100": ("hold_tile_kernel", "gfx1100", (("num_warps", 1),), {"BLOCK": 4096}),
    "vgpr-spill-gfx1151": ("hold_tile_kernel", "gfx1151", (("num_warps", 1),), {"BLOCK": 4096}),
    "vgpr-spill-gfx1201": ("hold_tile_kernel", "gfx1201", (("num_warps", 1),), {"BLOCK": 4096}),
    "high-vgprs-gfx1250": ("hold_tile_kernel", "gfx1250", (("num_warps", 1),), {"BLOCK": 4096}),
    "vgpr-spill-gfx1250": ("hold_tile_kernel", "gfx1250", (("num_warps", 1), ("waves_per_eu", 8)), {"BLOCK": 4096}),
    "nested-gfx1100": ("nested_loops_kernel", "gfx1100", (("num_warps", 1),), {"BLOCK": 4096}),
    "nested-gfx1201": ("nested_loops_kernel", "gfx1201", (("num_warps", 1),), {"BLOCK": 4096}),
    "nested-gfx1250": ("nested_loops_kernel", "gfx1250", (("num_warps", 1),), {"BLOCK": 4096}),
    "matmul-gfx1100": ("matmul_kernel", "gfx1100", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    "matmul-gfx1250": ("matmul_kernel", "gfx1250", (("num_warps", 4), ("num_stages", 2)), MATMUL),
}


@functools.cache
def compiled(case: str) -> Any:
    return compile_case(CASES[case])


def the_function(text: str) -> amdgcn.Function:
    (function,) = [f for f in parse_functions(text) if f.instructions]
    return function


# -- syntax -------------------------------------------------------------------------------------------------

def test_gfx1250_names_the_vgprs_above_v255_after_the_encoded_one() -> None:
    """high-vgprs-gfx1250 and matmul-gfx1250: `s_set_vgpr_msb` supplies the high bits, LLVM writes the
    register meant after the one encoded; the text keeps both."""
    inst = parse_instruction("buffer_load_b128 v[2:5], v0 /*v256*/, s[8:11], null offen offset:15872")
    assert inst is not None and [op.text for op in inst.operands] == ["v[2:5]", "v256", "s[8:11]", "null"]
    assert inst.modifiers == ("offen", "offset:15872") and inst.text.startswith("buffer_load_b128 v[2:5], v0 /*v256*/")
    add = parse_instruction("v_pk_add_f32 v[0:1] /*v[256:257]*/, -v1 /*v257*/, v[2:3]")
    assert add is not None and [op.registers for op in add.operands] == [
        (Register("v", 256, 2),), (Register("v", 257),), (Register("v", 2, 2),)]
    lane = parse_instruction("v_writelane_b32 v0 /*v256*/, s4, 0")
    assert lane is not None and [op.text for op in lane.operands] == ["v256", "s4", "0"] and not lane.modifiers


def test_vopd_is_one_instruction_of_two_halves() -> None:
    """add-gfx1250: `v_dual_lshlrev_b32 v1, 2, v0 :: v_dual_bitop2_b32 v2, 1, v0 bitop3:0x54` writes v1 and
    v2; both halves read before either writes."""
    inst = parse_instruction("v_dual_lshlrev_b32 v1, 2, v0 :: v_dual_bitop2_b32 v2, 1, v0 bitop3:0x54")
    assert inst is not None and inst.dual is not None and [h.mnemonic for h in inst.halves] == [
        "v_dual_lshlrev_b32", "v_dual_bitop2_b32"]
    assert inst.modifiers == () and inst.dual.modifiers == ("bitop3:0x54",)
    defs, uses = defs_and_uses(inst)
    assert (defs, uses) == ([Register("v", 1), Register("v", 2)], [Register("v", 0), Register("v", 0)])
    # add-gfx1100: VOPD's cndmask reads VCC_LO without naming it; FMAC reads its destination.
    cnd = parse_instruction("v_dual_cndmask_b32 v3, 0x80000000, v10 :: v_dual_lshlrev_b32 v8, 2, v4")
    assert cnd is not None and Register("vcc", 0, 1) in defs_and_uses(cnd)[1]
    fmac = parse_instruction("v_dual_fmac_f32 v5, v6, v7 :: v_dual_mov_b32 v8, v9")
    assert fmac is not None and defs_and_uses(fmac) == (
        [Register("v", 5), Register("v", 8)], [Register("v", 6), Register("v", 7), Register("v", 5), Register("v", 9)])
    # A VGPR above v255 in a half.
    high = parse_instruction("v_dual_lshlrev_b32 v35 /*v291*/, 2, v0 :: v_dual_lshlrev_b32 v26 /*v282*/, 4, v0")
    assert high is not None and defs_and_uses(high)[0] == [Register("v", 291), Register("v", 282)]


@pytest.mark.parametrize(("line", "defs", "uses"), [
    # gfx12: `nv`, `scope:` and `th:` are modifiers.
    ("s_load_b128 s[8:11], s[0:1], 0x0 nv", [Register("s", 8, 4)], [Register("s", 0, 2)]),
    ("global_prefetch_b8 v0, s[64:65] scope:SCOPE_SE", [], [Register("v", 0), Register("s", 64, 2)]),
    ("scratch_load_b32 v196, off, off offset:68 th:TH_LOAD_LU", [Register("v", 196)], []),
    # gfx10+: v_cmpx writes EXEC only; its first operand is a source.
    ("v_cmpx_gt_i32_e32 s2, v0", [], [Register("s", 2), Register("v", 0)]),
    # The accumulators read their destination.
    ("v_fmac_f32_e32 v1, v2, v3", [Register("v", 1)], [Register("v", 2), Register("v", 3), Register("v", 1)]),
    # matmul-gfx1250: an asynchronous copy into LDS reads its first operand, an LDS address.
    ("global_load_async_to_lds_b128 v43, v[18:19], off", [], [Register("v", 43), Register("v", 18, 2)]),
    # gfx11+: the 64-bit multiply-add with a carry-out (here `null`) writes its first two operands.
    ("v_mad_co_u64_u32 v[2:3], s4, s6, v1, v[2:3]", [Register("v", 2, 2), Register("s", 4)],
     [Register("s", 6), Register("v", 1), Register("v", 2, 2)]),
    ("s_set_vgpr_msb 0x4001", [], []),
    ("s_wait_alu depctr_va_vdst(13)", [], []),
    ("s_delay_alu instid0(VALU_DEP_1) | instskip(NEXT) | instid1(VALU_DEP_1)", [], []),
    ("s_setreg_imm32_b32 hwreg(HW_REG_WAVE_MODE, 25, 1), 1", [], []),
    ("s_lshl_b32 s3, ttmp9, 10", [Register("s", 3)], [Register("ttmp", 9)]),
])
def test_effects_of_gfx11_and_gfx12_instructions(line: str, defs: list, uses: list) -> None:
    inst = parse_instruction(line)
    assert inst is not None and defs_and_uses(inst) == (defs, uses)


def test_wave32_vcc_is_vcc_lo() -> None:
    branch = parse_instruction("s_cbranch_vccnz .LBB0_3")
    assert branch is not None
    assert defs_and_uses(branch, wave32=True)[1] == [Register("vcc", 0, 1)]
    assert defs_and_uses(branch)[1] == [Register("vcc", 0, 2)]


def test_a_true16_half_write_keeps_the_other_half_live() -> None:
    """matmul-gfx1100: `v_cvt_f16_f32_e32 v1.l, v2` writes the low half of v1: the high half is still v1's."""
    inst = parse_instruction("v_cvt_f16_f32_e32 v1.l, v2")
    assert inst is not None
    written, read = _effects(inst)
    assert (written[0], read[0]) == (1 << 1, 1 << 2 | 1 << 1)


# -- whole kernels against LLVM's figures ------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_the_vgprs_named_are_llvms_count(case: str) -> None:
    """The highest VGPR the code names is LLVM's `; NumVgprs`: on gfx1250 up to v1023 through the annotations
    (635 for the held tile); read as encoded, they would stop at v255."""
    text = compiled(case).asm["amdgcn"]
    assert registers_named(text)["v"] == asm_comment(text, "NumVgprs")


@pytest.mark.parametrize("case", CASES)
def test_spills_add_up_to_the_metadata(case: str) -> None:
    """Scratch spill stores (a clause's on its members: its s_clause carries the comment) add up to
    `.vgpr_spill_count`, lane spills to `.sgpr_spill_count`; every scratch access at a constant address is one,
    and no s_clause is."""
    text = compiled(case).asm["amdgcn"]
    function = the_function(text)
    accesses = spill_accesses(function, text.splitlines())
    stores = {medium: sum(a[2] for a in accesses if a and a[0] == "store" and a[1] == medium)
              for medium in ("scratch", "vgpr-lane")}
    assert stores == {"scratch": asm_metadata(text, "vgpr_spill_count"),
                      "vgpr-lane": asm_metadata(text, "sgpr_spill_count")}
    assert vgpr_spills(text) == stores["scratch"]  # the second reading
    for inst, access in zip(function.instructions, accesses):
        ops = [op.text for op in inst.operands]
        slot = (inst.mnemonic.startswith("scratch_store_") and ops[0] == "off"
                or inst.mnemonic.startswith("scratch_load_") and ops[1:3] == ["off", "off"])
        assert slot == (access is not None and access[1] == "scratch"), inst.text
        assert not (inst.mnemonic == "s_clause" and access)


def test_a_clause_of_reloads_and_stores_is_commented_as_reloads() -> None:
    """vgpr-spill-gfx1250: `s_clause 0x1 ; 16-byte Folded Reload` over a spill store and a reload; the store is a
    spill too (without it the stores fall 20 dwords short of `.vgpr_spill_count`)."""
    text = compiled("vgpr-spill-gfx1250").asm["amdgcn"]
    function = the_function(text)
    lines = text.splitlines()
    accesses = spill_accesses(function, lines)
    insts = function.instructions
    mixed = [k for k, inst in enumerate(insts)
             if inst.mnemonic == "s_clause" and "Folded Reload" in lines[inst.line - 1]
             and any(a and a[0] == "store" for a in accesses[k + 1:k + 3])]
    assert mixed
    for k in mixed:
        assert [a[0] for a in accesses[k + 1:k + 3] if a] == ["store", "reload"]


def test_s_set_vgpr_msb_inside_a_clause_is_not_of_its_length() -> None:
    """A clause of scratch spills past v255 (gfx1250, 1024 VGPRs spilling: nested_loops_kernel at BLOCK=16384
    on one wave) holds its 63 stores across two `s_set_vgpr_msb`; a piece of that compile's text."""
    text = """\
\t.text
\t.type\tk,@function
k:
\ts_clause 0x3                            ; 16-byte Folded Spill
\tscratch_store_b32 off, v228 /*v484*/, off offset:1668 nv
\ts_set_vgpr_msb 0x40c                    ;  msbs: dst=0 src0=0 src1=3 src2=0
\tscratch_store_b32 off, v0 /*v768*/, off offset:1664 nv
\ts_set_vgpr_msb 0xc08                    ;  msbs: dst=0 src0=0 src1=2 src2=0
\tscratch_store_b32 off, v255 /*v767*/, off offset:1660 nv
\tscratch_store_b32 off, v254 /*v766*/, off offset:1656 nv
\ts_endpgm
.Lfunc_end0:
"""
    function = the_function(text)
    accesses = spill_accesses(function, text.splitlines())
    assert [(i.mnemonic, a) for i, a in zip(function.instructions, accesses) if a] == [
        ("scratch_store_b32", ("store", "scratch", 1))] * 4
    assert registers_named(text)["v"] == 769


# -- the CFG ----------------------------------------------------------------------------------------------------

@needs_objdump
@pytest.mark.parametrize("case", ["sgpr-spill-gfx1100", "nested-gfx1201", "nested-gfx1250", "matmul-gfx1250"])
def test_text_and_disassembly_give_the_same_cfg_and_registers(case: str) -> None:
    ck = compiled(case)
    text_fn = the_function(ck.asm["amdgcn"])
    (dump_fn,) = parse_functions(disassemble(ck.asm["hsaco"]))
    assert cfg_shape(text_fn) == cfg_shape(dump_fn) and dump_fn.unresolved_jumps == 0
    # llvm-objdump names v256 as the text does (and writes a zero SMEM offset as `null`).
    def registers(function: amdgcn.Function) -> list[list[Register]]:
        return [[r for half in inst.halves for op in half.operands for r in op.registers]
                for inst in function.instructions if inst.mnemonic not in ("s_nop", "s_code_end")]

    assert registers(text_fn) == registers(dump_fn)


def _spliced(case: str, branch: str, long_branch: str) -> str:
    """The case's text with its first ``s_branch <branch>`` replaced by ``long_branch`` (LLVM's long-branch
    expansion, which only a kernel over 128 KiB of code makes)."""
    text = compiled(case).asm["amdgcn"]
    short = f"\ts_branch {branch}\n"
    assert short in text
    return text.replace(short, long_branch, 1)


LONG_BRANCHES = {
    # gfx12.0: s_getpc_b64, then gfx12's names of the 32-bit adds, then s_setpc_b64.
    "nested-gfx1201": ("gfx1201", ".LBB0_2", "\ts_getpc_b64 s[0:1]\n.Lpost_getpc0:\n"
                       "\ts_add_co_u32 s0, s0, (.LBB0_2-.Lpost_getpc0)&4294967295\n"
                       "\ts_add_co_ci_u32 s1, s1, (.LBB0_2-.Lpost_getpc0)>>32\n\ts_setpc_b64 s[0:1]\n"),
    # gfx1250: one PC-relative jump from the instruction after it (LLVM's hasAddPC64Inst path).
    "nested-gfx1250": ("gfx1250", ".LBB0_2", "\ts_add_pc_i64 .LBB0_2-.Lpost_addpc0\n.Lpost_addpc0:\n"),
}


@pytest.mark.parametrize("case", LONG_BRANCHES)
def test_long_branches_of_gfx12(case: str, tmp_path: Path) -> None:
    arch, label, long_branch = LONG_BRANCHES[case]
    original = the_function(compiled(case).asm["amdgcn"])
    text = _spliced(case, label, long_branch)
    function = the_function(text)
    assert function.unresolved_jumps == 0
    jump = next(b for b in function.blocks if b.instructions[-1].mnemonic in ("s_setpc_b64", "s_add_pc_i64"))
    assert [function.blocks[s].labels for s in jump.successors] == [(label,)]
    # The same graph as the short branch's.
    assert [b.successors for b in function.blocks] == [b.successors for b in original.blocks]
    objdump = find_objdump()
    mc = Path(objdump).with_name("llvm-mc") if objdump else None
    if mc is None or not mc.exists():
        return
    source = re.sub(r'^(\s*\.amdgcn_target\s+)"[^"]*"', rf'\1"amdgcn-amd-amdhsa--{arch}"', text, count=1, flags=re.M)
    source = re.sub(r"^\s*\.amdhsa_inst_pref_size .*$", "", source, flags=re.M)  # unknown to LLVM 22's llvm-mc
    obj = tmp_path / "k.co"
    subprocess.run([str(mc), "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-filetype=obj", "-o", str(obj), "-"],
                   input=source, capture_output=True, text=True, check=True, timeout=300)
    (dump_fn,) = parse_functions(disassemble(obj.read_bytes()))
    assert dump_fn.unresolved_jumps == 0 and cfg_shape(dump_fn) == cfg_shape(function)
