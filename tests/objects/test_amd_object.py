"""amd_object against a second reading of the same compile: the amdgcn text LLVM printed beside the HSACO.

Every kernel is compiled here, offline, for gfx942/gfx950. The HSACO is read by regsurvey; the
amdgcn text's comments (``; NumVgprs``, ``; Occupancy`` ...), its ``.amdhsa_*`` directives, its
metadata YAML and its instructions (spill stores, writelanes, the kernarg prologue) are the check. LDS,
which the object does not record (Triton allocates it at launch), is read from the TTGIR's buffers, and
the occupancy where it binds is LLVM's own, once LLVM is told the LDS and the workgroup size.
"""

from __future__ import annotations

import io
import re

import msgpack
import pytest
import triton
from elftools.elf.elffile import ELFFile

from regsurvey.errors import CorruptObjectError
from regsurvey.model.figures import Figures
from regsurvey.model.targets import TARGETS
from regsurvey.objects.amd_object import amd_occupancy, parse_hsaco, read_hsaco

from ..objects_kernels import SIGNATURES, compile_case, compile_kernel
from ..readings import (
    TRITON_39_CODEGEN,
    amd_lds_reading,
    amd_loop_spill_reading,
    amd_occupancy_reading,
    declare_lds,
    llvm_amdgcn,
    llvm_occupancy,
    note_metadata,
    note_waves,
    vgpr_spills,
)

# Facts of Triton 3.9's compiler (its async-copy pipeline on gfx950, its LLVM's SGPR occupancy model);
# Triton 3.6 builds these kernels differently, and regsurvey supports both.
TRITON_39 = tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 9)

MATMUL = {"BM": 128, "BN": 128, "BK": 64}

# name: (kernel, target, options, constexprs)
CASES = {
    "add-gfx950": ("add_kernel", "gfx950", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-gfx942": ("add_kernel", "gfx942", (("num_warps", 4),), {"BLOCK": 1024}),
    # One wave holding 2 x 256 fp32 per lane: fills the AGPRs and spills VGPRs to scratch.
    "vgpr-spill-gfx950": ("hold_tile_kernel", "gfx950", (("num_warps", 1),), {"BLOCK": 16384}),
    # 32 buffer descriptors live across a loop: spills SGPRs to VGPR lanes.
    "sgpr-spill-gfx950": ("many_buffers_kernel", "gfx950", (("num_warps", 4),), {"BLOCK": 256}),
    # num_stages=2 on gfx950 takes the async-copy pipeline: dispatch ptr, queue ptr and dispatch id
    # are enabled and the kernarg pointer moves to s[4:5]; its LDS limits occupancy.
    "matmul-async-gfx950": ("matmul_kernel", "gfx950", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    "matmul-gfx942": ("matmul_kernel", "gfx942", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    # waves_per_eu=N: LLVM allocates VGPRs (and SGPRs) so that at most N waves fit, whatever the
    # kernel uses; the note's counts stay those of the code.
    "waves1-add-gfx942": ("add_kernel", "gfx942", (("num_warps", 4), ("waves_per_eu", 1)), {"BLOCK": 1024}),
    "waves3-add-gfx950": ("add_kernel", "gfx950", (("num_warps", 4), ("waves_per_eu", 3)), {"BLOCK": 1024}),
    # 126 arch VGPRs and 8 AGPRs: the object records the arch count only rounded up to 4 (128).
    "waves2-matmul-gfx950": ("matmul_kernel", "gfx950", (("num_warps", 4), ("num_stages", 2), ("waves_per_eu", 2)),
                             MATMUL),
    # 4 waves by registers, but two 32 KiB workgroups of 4 waves fill gfx942's 64 KiB LDS: 2 waves.
    "waves4-matmul-gfx942": ("matmul_kernel", "gfx942", (("num_warps", 4), ("num_stages", 2), ("waves_per_eu", 4)),
                             MATMUL),
    # 2-wave workgroups of 20 KiB LDS: 3 fit in gfx942's 64 KiB, 6 waves over 4 SIMDs (docs/figures.md's worked case).
    "uneven-matmul-gfx942": ("matmul_kernel", "gfx942", (("num_warps", 2), ("num_stages", 2)),
                             {"BM": 128, "BN": 32, "BK": 64}),
    # A 256x256 fp32 accumulator over 4 waves: 256 arch VGPRs and 256 AGPRs, the whole unified file.
    "agpr-matmul-gfx942": ("matmul_kernel", "gfx942", (("num_warps", 4), ("num_stages", 2)),
                           {"BM": 256, "BN": 256, "BK": 64}),
    # Three stages of padded 128x64 and 64x128 fp16 tiles, about 100 KiB: one workgroup per CU.
    "stages3-matmul-gfx950": ("matmul_kernel", "gfx950", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    # A reduction over 4 waves: their partial sums meet in LDS (the reduction's scratch).
    "reduce-gfx942": ("hold_tile_kernel", "gfx942", (("num_warps", 4),), {"BLOCK": 1024}),
}


def compiled(case: str):  # type: ignore[no-untyped-def]
    return compile_case(CASES[case]), TARGETS[CASES[case][1]]


def read(case: str, *, with_code: bool = True) -> tuple[Figures, str]:
    """The case's resources as a survey reads them (the object and the same compile's amdgcn text), or
    from the object alone; and the amdgcn text."""
    ck, target = compiled(case)
    res = read_hsaco(ck.asm["hsaco"], lds_bytes=ck.metadata.shared, num_warps=ck.metadata.num_warps, target=target,
                     code_text=ck.asm["amdgcn"] if with_code else None)
    return res, ck.asm["amdgcn"]


def comment(text: str, key: str) -> int:
    """A ``; Key: N`` comment of the amdgcn text's kernel info block."""
    match = re.search(rf"^; {key}: (\d+)", text, re.M)
    assert match, key
    return int(match.group(1))


def directive(text: str, name: str) -> int:
    """An ``.amdhsa_<name> N`` directive of the amdgcn text."""
    match = re.search(rf"^\s*\.amdhsa_{name} (\d+)$", text, re.M)
    assert match, name
    return int(match.group(1))


def align4(n: int) -> int:
    return -(-n // 4) * 4


def align8(n: int) -> int:
    return -(-n // 8) * 8


@pytest.mark.parametrize("case", CASES)
def test_resources_match_the_amdgcn_text(case: str) -> None:
    res, text = read(case)
    ck, _ = compiled(case)
    # LLVM's own counts, exactly: the arch count too where the object holds only the AGPR offset.
    assert res["vgpr"] == comment(text, "NumVgprs")
    assert res["agpr"] == comment(text, "NumAgprs")
    assert res["vgpr_total"] == comment(text, "TotalNumVgprs")
    kd = parse_hsaco(ck.asm["hsaco"]).kernels[0].descriptor
    if res["agpr"]:
        assert align4(res["vgpr"]) == kd.accum_offset == directive(text, "accum_offset")
        assert res["vgpr_total"] == kd.accum_offset + res["agpr"]
    else:
        assert res["vgpr_total"] == res["vgpr"]
    # What the hardware allocates: the unified count, or more under waves_per_eu (next_free_vgpr
    # is then LLVM's NumVGPRsForWavesPerEU, not the count the code uses).
    assert kd.allocated_vgprs == (comment(text, "VGPRBlocks") + 1) * 8 == align8(directive(text, "next_free_vgpr"))
    assert kd.allocated_vgprs == align8(comment(text, "NumVGPRsForWavesPerEU")) >= align8(res["vgpr_total"])
    assert kd.allocated_sgprs == (comment(text, "SGPRBlocks") + 1) * 8 == align8(comment(text, "NumSGPRsForWavesPerEU"))
    assert res["sgpr"] == comment(text, "TotalNumSgprs")
    assert res["scratch_bytes"] == comment(text, "ScratchSize") == directive(text, "private_segment_fixed_size")
    assert res["vgpr_spill"] == vgpr_spills(text)
    # Every SGPR spill is one v_writelane_b32 into a VGPR lane; these kernels write lanes for nothing else.
    assert res["sgpr_spill"] == text.count("v_writelane_b32")
    assert res["kernarg_bytes"] == directive(text, "kernarg_size")
    # The reader is given Triton's metadata ``shared``; the TTGIR's buffers, allocated again and sized
    # from their types, are the reading (the object's own static LDS, 0 under Triton, included).
    assert res["lds_bytes"] == amd_lds_reading(ck.asm["ttgir"], ck.asm["hsaco"])
    # The spills inside loops, against LLVM's own loop comments (tests/objects/test_loop_spills.py: instruction by
    # instruction, on kernels that spill in nested loops).
    assert {name: res[name] for name in ("loop_spill_ops", "loop_spill_depth")} == amd_loop_spill_reading(text)
    assert list(res) == [
        "vgpr", "agpr", "sgpr", "vgpr_spill", "sgpr_spill", "scratch_bytes", "lds_bytes", "occupancy",
        "kernarg_bytes", "vgpr_total", "loop_spill_ops", "loop_spill_depth",
    ]  # fmt: skip


def test_the_arch_vgprs_come_from_the_code_where_the_object_rounds_them() -> None:
    # 126 arch VGPRs and 8 AGPRs: the object says only that the AGPRs start at 128. The code names
    # v0..v125; without it the reader can give no more than the offset, the same on every other figure.
    exact, text = read("waves2-matmul-gfx950")
    rounded, _ = read("waves2-matmul-gfx950", with_code=False)
    assert (exact["vgpr"], exact["agpr"], exact["vgpr_total"]) == (
        comment(text, "NumVgprs"), comment(text, "NumAgprs"), comment(text, "TotalNumVgprs"))
    if not TRITON_39_CODEGEN:
        pytest.skip("the kernel was chosen for Triton 3.9's register allocation (126 VGPRs beside 8 AGPRs)")
    assert (exact["vgpr"], exact["agpr"], exact["vgpr_total"]) == (126, 8, 136)
    assert rounded["vgpr"] == 128 and rounded == {**exact, "vgpr": 128}
    # Code of another kernel does not fit this object's AGPR offset: the object's figure stands.
    add, _ = compiled("add-gfx950")
    other = read_hsaco(compiled("waves2-matmul-gfx950")[0].asm["hsaco"], lds_bytes=exact["lds_bytes"],
                       num_warps=4, target=TARGETS["gfx950"], code_text=add.asm["amdgcn"])
    assert other == rounded


def test_the_arch_vgprs_come_from_a_disassembly_too() -> None:
    from regsurvey.lint.disassembler import disassemble, find_objdump

    if find_objdump() is None:
        pytest.skip("no llvm-objdump of LLVM >= 20")
    ck, target = compiled("waves2-matmul-gfx950")
    res = read_hsaco(ck.asm["hsaco"], lds_bytes=0, num_warps=4, target=target, code_text=disassemble(ck.asm["hsaco"]))
    assert res["vgpr"] == comment(ck.asm["amdgcn"], "NumVgprs")


def test_the_spilling_kernels_spill() -> None:
    vgpr, _ = read("vgpr-spill-gfx950")
    assert vgpr["vgpr_spill"] > 0 and vgpr["scratch_bytes"] > 0 and vgpr["agpr"] > 0 and vgpr["occupancy"] == 1
    sgpr, _ = read("sgpr-spill-gfx950")
    # SGPR spills go to VGPR lanes, not scratch: the runtime's n_spills never sees them.
    assert sgpr["sgpr_spill"] > 0 and sgpr["scratch_bytes"] == 0 and sgpr["vgpr_spill"] == 0
    for case in ("add-gfx950", "add-gfx942", "matmul-async-gfx950", "matmul-gfx942"):
        res, _ = read(case)
        assert (res["vgpr_spill"], res["sgpr_spill"], res["scratch_bytes"]) == (0, 0, 0), case


@pytest.mark.parametrize("case", CASES)
def test_occupancy_matches_llvm(case: str) -> None:
    # LLVM never sees Triton's LDS (allocated dynamically), so the ``; Occupancy`` of the kernel's own
    # amdgcn is the register limit alone; where LDS binds, regsurvey's figure is LLVM's for that LDS and
    # workgroup size, lower. All cases have <= 4 waves per workgroup, where whole workgroups change nothing.
    if case == "sgpr-spill-gfx950" and not TRITON_39:
        pytest.skip("older LLVM (Triton 3.6) uses the pre-trap-handler SGPR occupancy table")
    res, text = read(case)
    ck, target = compiled(case)
    llvm = comment(text, "Occupancy")
    kd = parse_hsaco(ck.asm["hsaco"]).kernels[0].descriptor
    registers_only = amd_occupancy(
        vgprs=kd.allocated_vgprs, sgprs=kd.allocated_sgprs, lds_bytes=0, num_warps=ck.metadata.num_warps, target=target
    )
    assert registers_only == llvm
    lds = amd_lds_reading(ck.asm["ttgir"], ck.asm["hsaco"])
    waves = note_waves(note_metadata(ck.asm["hsaco"]))
    assert res["occupancy"] == amd_occupancy_reading(text, lds_bytes=lds, num_warps=waves, target=CASES[case][1])
    waves_per_eu = dict(CASES[case][2]).get("waves_per_eu")
    if waves_per_eu:
        assert llvm <= waves_per_eu


# GEMMs whose LDS binds, on both targets: (case, LLVM's occupancy from the registers alone, told the LDS).
LDS_BOUND = {
    "matmul-async-gfx950": (3, 2),  # 2 workgroups of 66 KiB in 160 KiB
    "stages3-matmul-gfx950": (3, 1),  # 1 workgroup of 100 KiB
    "uneven-matmul-gfx942": (3, 2),  # 3 workgroups of 2 waves: 2, 2, 1 and 1 a SIMD
    "waves4-matmul-gfx942": (4, 2),  # 2 workgroups of 32 KiB in 64 KiB; waves_per_eu=4 cannot be met
}


@pytest.mark.skipif(not TRITON_39, reason="the cases' registers and LDS are those of Triton 3.9's compiler")
@pytest.mark.parametrize("case", LDS_BOUND)
def test_llvm_told_the_lds_gives_the_occupancy(case: str) -> None:
    """The kernel's own LLIR compiled again by the code generator that made it, with its LDS
    (``amdgpu-lds-size``) and workgroup size declared: LLVM's ``; Occupancy`` then counts the LDS, and
    is regsurvey's. LLVM schedules the code again for that occupancy (its VGPRs may move), so this holds
    where LDS binds; where registers bind, the reading is LLVM's limits taken apart
    (``readings.amd_occupancy_reading``)."""
    ck, _ = compiled(case)
    res, text = read(case)
    lds = amd_lds_reading(ck.asm["ttgir"], ck.asm["hsaco"])
    told, said = llvm_amdgcn(declare_lds(ck.asm["llir"], lds), CASES[case][1], fp_fusion=ck.metadata.enable_fp_fusion)
    assert comment(told, "LDSByteSize") == directive(told, "group_segment_fixed_size") == lds
    assert (comment(text, "Occupancy"), comment(told, "Occupancy")) == LDS_BOUND[case]
    assert res["occupancy"] == comment(told, "Occupancy")
    # LLVM, told the LDS, sees that Triton's waves_per_eu=4 asks for more waves than the LDS leaves room for.
    warned = "failed to meet occupancy target given by 'amdgpu-waves-per-eu'" in said
    assert warned == (case == "waves4-matmul-gfx942"), said


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
@pytest.mark.parametrize("waves", [1, 2, 3, 5, 7])
def test_waves_per_eu_caps_occupancy(target: str, waves: int) -> None:
    # A 12-VGPR kernel fits 8 waves by its own registers; waves_per_eu=N makes LLVM allocate
    # alignDown(512 / (N + 1), 8) + 1 VGPRs, so N waves and no more. The note keeps the 12.
    ck = compile_kernel("add_kernel", target, options=(("num_warps", 4), ("waves_per_eu", waves)), BLOCK=1024)
    res = read_hsaco(ck.asm["hsaco"], lds_bytes=0, num_warps=4, target=TARGETS[target])
    text = ck.asm["amdgcn"]
    assert res["occupancy"] == waves == comment(text, "Occupancy")
    assert res["vgpr"] == comment(text, "NumVgprs") == parse_hsaco(ck.asm["hsaco"]).kernels[0].metadata[".vgpr_count"]
    assert res["vgpr"] < 64  # 8 waves' worth: the note alone would say 8
    kd = parse_hsaco(ck.asm["hsaco"]).kernels[0].descriptor
    assert kd.allocated_vgprs == align8((512 // (waves + 1)) // 8 * 8 + 1)


@pytest.mark.skipif(not TRITON_39, reason="Triton 3.9's async-copy pipeline")
def test_lds_binds_the_pipelined_gemm_on_gfx950() -> None:
    res, text = read("matmul-async-gfx950")
    # Two stages of 128x64 + 64x128 fp16 tiles: about 66 KiB, so 2 workgroups of 4 waves per CU.
    assert 64 * 1024 < res["lds_bytes"] < 80 * 1024
    assert res["occupancy"] == 2 < comment(text, "Occupancy")


def test_waves_that_do_not_spread_evenly_count_on_the_busiest_simd() -> None:
    """docs/figures.md's rule ("What is measured, and from where", occupancy): where whole workgroups leave a CU
    waves that do not divide over its 4 SIMDs, occupancy is the most waves one SIMD holds when they are
    spread as evenly as they go, rounded up as LLVM's getOccupancyWithWorkGroupSizes rounds; never more
    than the registers allow. Worked here on a real compile: 3 workgroups of 2 waves are 6 waves a CU,
    2, 2, 1 and 1 a SIMD, so 2 (not 1.5, not 1)."""
    ck, _ = compiled("uneven-matmul-gfx942")
    res, text = read("uneven-matmul-gfx942")
    assert (ck.metadata.num_warps, ck.metadata.shared) == (2, 20 * 1024)
    # The rule, counted from the LDS block (512 B on gfx942) and the CU's 64 KiB, not from regsurvey.
    workgroups = (64 * 1024) // (-(-ck.metadata.shared // 512) * 512)
    waves = workgroups * ck.metadata.num_warps
    per_simd = [waves // 4 + (simd < waves % 4) for simd in range(4)]
    # LLVM's: the register limit alone (3 waves at Triton 3.9's 152 VGPRs, 4 at Triton 3.6's fewer).
    registers = comment(text, "Occupancy")
    assert (workgroups, waves, per_simd) == (3, 6, [2, 2, 1, 1])
    assert registers == (3 if TRITON_39 else 4)
    assert res["occupancy"] == min(max(per_simd), registers) == 2
    # LLVM's own figure for this LDS and 2-wave workgroups says the same.
    assert llvm_occupancy("gfx942", lds_bytes=ck.metadata.shared, workgroup=128) == 2


@pytest.mark.skipif(not TRITON_39, reason="LLVM rounds LDS to its allocation block since llvm/llvm-project#205637 "
                                          "(in Triton 3.9's code generator); before, it divided by the bytes asked")
@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_lds_limit_matches_llvm_at_every_workgroup_boundary(target: str) -> None:
    """regsurvey's LDS limit (registers not binding) is LLVM's, for a kernel declaring the LDS and the
    workgroup size, at every LDS size where the workgroups a CU holds change, a byte either side, and an
    allocation block (512 B gfx942, 1280 B gfx950) below; workgroups of 1 to 16 waves. A granule off by
    one block, or LDS not rounded up to it, fails here."""
    per_cu = TARGETS[target].shared_bytes_per_cu
    sizes = sorted({size for workgroups in range(1, 33) for delta in (-1280, -512, -1, 0, 1)
                    if 0 < (size := per_cu // workgroups + delta)} | {per_cu + 1})
    differ = [(lds, warps, ours, llvm)
              for warps in (1, 2, 4, 8, 16) for lds in sizes
              if (ours := amd_occupancy(vgprs=8, sgprs=16, lds_bytes=lds, num_warps=warps, target=TARGETS[target]))
              != (llvm := llvm_occupancy(target, lds_bytes=lds, workgroup=warps * 64))]
    assert differ == []


@pytest.mark.skipif(not TRITON_39, reason="LLVM rounds LDS to its allocation block since llvm/llvm-project#205637 "
                                          "(in Triton 3.9's code generator); before, it divided by the bytes asked")
def test_llvm_rounds_lds_up_to_the_allocation_block() -> None:
    """Where the two models differed by design, until LLVM's fix: the hardware allocates a workgroup's
    LDS in blocks (AMDGPUUsage, COMPUTE_PGM_RSRC2 LDS_SIZE: roundup(lds-size / (128 * 4)) on gfx942,
    roundup(lds-size / (320 * 4)) on gfx950), so 21760 B on gfx942 takes 43 blocks of 512 (22016 B)
    and 2 workgroups fit in 64 KiB, not the 3 that 65536 // 21760 counts; 54000 B on gfx950 takes 43
    blocks of 1280 (55040 B): 2 workgroups in 160 KiB, not 3. LLVM's getOccupancyWithWorkGroupSizes
    divided by the bytes asked (its FIXME: "take into account the LDS allocation granularity") until
    llvm/llvm-project#205637; the code generator of Triton 3.9 rounds, as regsurvey does."""
    for target, lds in (("gfx942", 21760), ("gfx950", 54000)):
        unrounded = TARGETS[target].shared_bytes_per_cu // lds
        assert unrounded == 3
        assert llvm_occupancy(target, lds_bytes=lds, workgroup=256) == 2
        assert amd_occupancy(vgprs=8, sgprs=16, lds_bytes=lds, num_warps=4, target=TARGETS[target]) == 2


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_whole_workgroups_are_the_rule_llvm_does_not_have(target: str) -> None:
    """Where the two models differ by design: a workgroup's waves are on one CU together or not at all
    (they share its LDS and barrier; "All wavefronts of a workgroup are scheduled on the same CU", ROCm
    Compute Profiler's CDNA performance model, "Compute unit"), so a register limit that leaves a CU
    fewer free wave slots than a workgroup has cannot take another. 168 VGPRs: 3 waves a SIMD, 12 a CU.
    Workgroups of 4 waves: 3 of them, 3 waves a SIMD, LLVM and regsurvey alike. Workgroups of 8 waves:
    one fits (a second needs 8 slots, 4 are left), 2 waves a SIMD; LLVM, told the workgroup size, takes
    the least of its per-resource limits (GCNSubtarget::computeOccupancy) and says 3."""
    assert llvm_occupancy(target, workgroup=256, vgprs=168) == 3
    assert amd_occupancy(vgprs=168, sgprs=32, lds_bytes=0, num_warps=4, target=TARGETS[target]) == 3
    assert llvm_occupancy(target, workgroup=512, vgprs=168) == 3
    assert amd_occupancy(vgprs=168, sgprs=32, lds_bytes=0, num_warps=8, target=TARGETS[target]) == 2


@pytest.mark.parametrize("case", CASES)
def test_descriptor_matches_the_amdhsa_directives(case: str) -> None:
    ck, target = compiled(case)
    info = parse_hsaco(ck.asm["hsaco"])
    text = ck.asm["amdgcn"]
    assert info.arch == target.arch and info.target.endswith(target.arch)
    [kernel] = info.kernels
    assert kernel.name == ck.metadata.name
    kd = kernel.descriptor
    for field, name in [
        ("dispatch_ptr", "user_sgpr_dispatch_ptr"),
        ("queue_ptr", "user_sgpr_queue_ptr"),
        ("kernarg_segment_ptr", "user_sgpr_kernarg_segment_ptr"),
        ("dispatch_id", "user_sgpr_dispatch_id"),
        ("private_segment_size", "user_sgpr_private_segment_size"),
        ("kernarg_preload_length", "user_sgpr_kernarg_preload_length"),
        ("kernarg_preload_offset", "user_sgpr_kernarg_preload_offset"),
        ("user_sgpr_count", "user_sgpr_count"),
        ("enable_private_segment", "enable_private_segment"),
        ("uses_dynamic_stack", "uses_dynamic_stack"),
        ("accum_offset", "accum_offset"),
        ("group_segment_fixed_size", "group_segment_fixed_size"),
        ("private_segment_fixed_size", "private_segment_fixed_size"),
        ("kernarg_size", "kernarg_size"),
    ]:
        assert int(getattr(kd, field)) == directive(text, name), field
    # Architected flat scratch (gfx942/gfx950): neither is ever enabled, and LLVM prints no directive.
    assert not kd.private_segment_buffer and not kd.flat_scratch_init
    # User SGPRs are the enabled pointers followed by the preloaded kernargs.
    assert kd.user_sgpr_count == kd.kernarg_preload_sgpr + kd.kernarg_preload_length


@pytest.mark.parametrize("case", CASES)
def test_kernarg_sgprs_match_the_compatibility_prologue(case: str) -> None:
    # The code starts by s_loading every preloaded kernarg from the kernarg pointer (for firmware
    # that does not preload): the base is the kernarg pointer SGPR, and the load of the first
    # preloaded dword lands in the first preload SGPR.
    ck, _ = compiled(case)
    kd = parse_hsaco(ck.asm["hsaco"]).kernels[0].descriptor
    text = ck.asm["amdgcn"]
    prologue = text[text.index(f"{ck.metadata.name}:") :]
    prologue = prologue[: prologue.index("s_branch")]
    loads = re.findall(r"s_load_dword\w*\s+s\[?(\d+)[:\]\d]*,\s+s\[(\d+):\d+\],\s+0x([0-9a-f]+)", prologue)
    assert len(loads) > 0
    assert {int(base) for _dest, base, _offset in loads} == {kd.kernarg_segment_ptr_sgpr}
    first = {int(offset, 16): int(dest) for dest, _base, offset in loads}
    assert first[kd.kernarg_preload_offset * 4] == kd.kernarg_preload_sgpr
    expected = {"add-gfx950": 0, "add-gfx942": 0, "matmul-async-gfx950": 4 if TRITON_39 else 0}
    if case in expected:
        assert kd.kernarg_segment_ptr_sgpr == expected[case]


@pytest.mark.parametrize("case", ["add-gfx950", "matmul-async-gfx950"])
def test_args_match_the_metadata_yaml(case: str) -> None:
    ck, _ = compiled(case)
    [kernel] = parse_hsaco(ck.asm["hsaco"]).kernels
    yaml = ck.asm["amdgcn"].split("amdhsa.kernels:", 1)[1]
    listed = re.findall(
        r"- (?:\.address_space:\s+(\w+)\s+)?\.offset:\s+(\d+)\s+\.size:\s+(\d+)\s+\.value_kind:\s+(\w+)", yaml
    )
    assert [(a.address_space or "", a.offset, a.size, a.value_kind) for a in kernel.args] == [
        (space, int(offset), int(size), kind) for space, offset, size, kind in listed
    ]
    # Triton appends two pointers after the user's non-constexpr args: global and profile scratch.
    user_args = sum(ty != "constexpr" for ty in SIGNATURES[CASES[case][0]].values())
    pointers = [a for a in kernel.args if not a.value_kind.startswith("hidden_")]
    assert len(pointers) == user_args + 2
    assert [a.value_kind for a in pointers[-2:]] == ["global_buffer", "global_buffer"]
    assert kernel.metadata[".kernarg_segment_size"] == read(case)[0]["kernarg_bytes"]


# Hand-computed occupancy from allocated registers (VGPRs per lane, unified; SGPRs per wave). gfx950:
# 512 VGPRs per lane, 8 waves, 4 SIMDs, 160 KiB LDS in 1280-byte blocks; gfx942: 64 KiB LDS in
# 512-byte blocks; both 800 SGPRs per SIMD, 16 per wave for the trap.
@pytest.mark.parametrize(
    ("target", "vgprs", "sgprs", "lds", "warps", "waves"),
    [
        ("gfx950", 128, 32, 0, 4, 4),  # 512 // 128
        ("gfx950", 256, 32, 0, 4, 2),
        ("gfx950", 512, 32, 0, 1, 1),  # the whole unified file (256 arch VGPRs + 256 AGPRs)
        ("gfx950", 8, 16, 0, 4, 8),  # one granule
        ("gfx950", 64, 16, 0, 4, 8),
        ("gfx950", 65, 16, 0, 4, 7),  # 65 -> 72: 512 // 72
        ("gfx950", 264, 16, 0, 4, 1),  # waves_per_eu=1: LLVM allocates 257 -> 264
        ("gfx950", 176, 16, 0, 4, 2),  # waves_per_eu=2: 169 -> 176
        ("gfx950", 32, 80, 0, 4, 8),  # SGPRs: 800 // (80 + 16)
        ("gfx950", 32, 88, 0, 4, 7),  # 800 // (96 + 16)
        ("gfx950", 32, 96, 0, 4, 7),
        ("gfx950", 32, 104, 0, 4, 6),  # 800 // (112 + 16)
        ("gfx950", 32, 112, 0, 4, 6),
        ("gfx950", 32, 32, 65536, 4, 2),  # LDS: 2 workgroups x 4 waves over 4 SIMDs
        ("gfx950", 32, 32, 32768, 4, 4),  # 32768 -> 33280 (26 blocks): 4 workgroups, not 5
        ("gfx950", 32, 32, 32768, 1, 1),  # 4 one-wave workgroups: one wave per SIMD
        ("gfx950", 32, 32, 160 * 1024, 4, 1),
        ("gfx950", 32, 32, 160 * 1024 + 1, 4, 0),  # does not fit at all
        ("gfx942", 32, 32, 16384, 4, 4),  # 4 workgroups of 16 KiB
        ("gfx942", 32, 32, 16385, 4, 3),  # 16385 -> 16896: 3 workgroups
        ("gfx942", 32, 32, 16384, 1, 1),
        ("gfx942", 32, 32, 32768, 8, 4),  # 2 workgroups x 8 waves
        ("gfx942", 32, 32, 65537, 4, 0),
        ("gfx942", 168, 32, 0, 4, 3),  # 512 // 168
        ("gfx942", 168, 32, 0, 8, 2),  # 8-wave workgroups: 12 slots hold one, 8 waves -> 2 per SIMD
    ],
)
def test_occupancy_by_hand(target: str, vgprs: int, sgprs: int, lds: int, warps: int, waves: int) -> None:
    got = amd_occupancy(vgprs=vgprs, sgprs=sgprs, lds_bytes=lds, num_warps=warps, target=TARGETS[target])
    assert got == waves


def _note_desc_offset(data: bytes) -> tuple[int, int]:
    """File offset and size of the metadata note's msgpack payload."""
    section = ELFFile(io.BytesIO(data)).get_section_by_name(".note")
    start = section["sh_offset"]
    namesz, descsz, _type = (int.from_bytes(data[start + i : start + i + 4], "little") for i in (0, 4, 8))
    assert data[start + 12 : start + 12 + namesz] == b"AMDGPU\0"
    return start + 12 + -(-namesz // 4) * 4, descsz


def _with_desc(data: bytes, payload: bytes) -> bytes:
    offset, size = _note_desc_offset(data)
    assert len(payload) == size
    return data[:offset] + payload + data[offset + size :]


def _corrupt_cases() -> dict[str, tuple[bytes, str]]:
    ck, _ = compiled("add-gfx950")
    good: bytes = ck.asm["hsaco"]
    _offset, size = _note_desc_offset(good)
    # A well-formed msgpack map with no kernel, padded to the note's exact size.
    pads = (msgpack.packb({"amdhsa.kernels": [], "amdhsa.target": "gfx950", "pad": "x" * n}) for n in range(size))
    no_kernel = next(packed for packed in pads if len(packed) == size)
    cubin = compile_kernel("add_kernel", "sm90", options=(("num_warps", 4),), BLOCK=1024).asm["cubin"]
    start = ELFFile(io.BytesIO(good)).get_section_by_name(".note")["sh_offset"]
    return {
        "empty": (b"", "not a readable HSACO"),
        "garbage": (b"\x7fELF not really" * 64, "not a readable HSACO"),
        "truncated": (good[: len(good) // 2], "HSACO is cut short"),
        "truncated-by-one": (good[:-1], "HSACO is cut short"),
        "cubin": (cubin, "not an AMDGPU ELF"),
        "no-note": (good[: start + 12] + b"XMDGPU\0" + good[start + 19 :], "no NT_AMDGPU_METADATA note"),
        "bad-msgpack": (_with_desc(good, b"\xc1" * size), "not valid msgpack"),
        "no-kernel": (_with_desc(good, no_kernel), "lists no kernel"),
    }


@pytest.mark.parametrize(
    "name", ["empty", "garbage", "truncated", "truncated-by-one", "cubin", "no-note", "bad-msgpack", "no-kernel"]
)
def test_corrupt_objects_raise_one_line(name: str) -> None:
    data, expected = _corrupt_cases()[name]
    with pytest.raises(CorruptObjectError) as raised:
        read_hsaco(data, lds_bytes=0, num_warps=4, target=TARGETS["gfx950"])
    message = str(raised.value)
    assert expected in message and "\n" not in message and message.strip() == message


def test_object_for_another_arch_is_refused() -> None:
    ck, _ = compiled("add-gfx950")
    with pytest.raises(CorruptObjectError, match="is for gfx950, not the target gfx942"):
        read_hsaco(ck.asm["hsaco"], lds_bytes=0, num_warps=4, target=TARGETS["gfx942"])
