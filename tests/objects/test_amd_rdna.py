"""amd_object on the wave32 targets (RDNA 3, 3.5, 4: gfx1100, gfx1151, gfx1201; and gfx1250) against a second
reading of the same compile, as tests/objects/test_amd_object.py does for CDNA.

What differs from CDNA, each held against LLVM's own figures here:

- waves of 32 lanes (the descriptor's ENABLE_WAVEFRONT_SIZE32; Triton 3.9 compiles no other wave size there);
- the VGPR file: 1536 a SIMD32 lane in granules of 24 on RDNA 3/3.5/4 (768 in granules of 12 for wave64),
  of which one wave addresses 256; 1024 in granules of 16 on gfx1250, all of it addressable;
- no SGPR limit on occupancy (gfx10+), at most 16 waves a SIMD;
- occupancy counted over a workgroup processor (4 SIMDs, 128 KiB of LDS, 64 KiB a workgroup) in WGP mode,
  Triton's default, and over one CU of it (2 SIMDs, 64 KiB) in CU mode (``wgp_cu_mode="cu"``); gfx1250 has
  no CU mode and 320 KiB of LDS in blocks of 2 KiB.

LLVM is told the LDS and workgroup size where the kernel's own text cannot say them (``readings.llvm_occupancy``).
"""

from __future__ import annotations

import re

import pytest

from regsurvey.model.targets import TARGETS
from regsurvey.objects.amd_object import amd_occupancy, parse_hsaco, read_hsaco

from ..objects_kernels import compile_case, compile_kernel
from ..readings import (
    amd_lds_reading,
    amd_occupancy_reading,
    asm_metadata,
    llvm_occupancy,
    note_metadata,
    note_wave_mode,
    note_waves,
    vgpr_spills,
)

WAVE32 = ("gfx1100", "gfx1151", "gfx1201", "gfx1250")
RDNA = ("gfx1100", "gfx1151", "gfx1201")
MATMUL = {"BM": 128, "BN": 128, "BK": 64}

# name: (kernel, target, options, constexprs)
CASES = {
    "add-gfx1100": ("add_kernel", "gfx1100", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-gfx1250": ("add_kernel", "gfx1250", (("num_warps", 4),), {"BLOCK": 1024}),
    # A 128x128 fp32 accumulator over 4 waves of 32 lanes: 128 values a lane beside the tiles, past the 256
    # VGPRs an RDNA wave may address: it spills to scratch (gfx942's 512 unified VGPRs hold it).
    "spill-matmul-gfx1100": ("matmul_kernel", "gfx1100", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    # RDNA 4 holds the same GEMM in 239 VGPRs (6 waves by registers); its 32 KiB of LDS lets 4 workgroups
    # share a WGP's 128 KiB: 4 waves a SIMD.
    "matmul-gfx1201": ("matmul_kernel", "gfx1201", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    # 24 KiB workgroups of 4 waves: 5 fit a WGP's 128 KiB (5 waves a SIMD), 2 fit a CU's 64 KiB in CU mode
    # (8 waves over its 2 SIMDs: 4).
    "wgp-matmul-gfx1100": ("matmul_kernel", "gfx1100", (("num_warps", 4), ("num_stages", 2)),
                           {"BM": 128, "BN": 64, "BK": 64}),
    "cu-matmul-gfx1100": ("matmul_kernel", "gfx1100", (("num_warps", 4), ("num_stages", 2), ("wgp_cu_mode", "cu")),
                          {"BM": 128, "BN": 64, "BK": 64}),
    # waves_per_eu=3: LLVM would reserve VGPRs for 3 waves, but a wave addresses 256 of the 1536: 248
    # allocated, rounded to 264, is 5 waves.
    "waves3-add-gfx1151": ("add_kernel", "gfx1151", (("num_warps", 4), ("waves_per_eu", 3)), {"BLOCK": 1024}),
    # 32 buffer descriptors live across a loop: SGPRs spill to VGPR lanes, as on CDNA.
    "sgpr-spill-gfx1100": ("many_buffers_kernel", "gfx1100", (("num_warps", 4),), {"BLOCK": 256}),
    # One wave holding a 4096-wide tile and its exp: 635 VGPRs, past 256 (gfx1250's waves address 1024).
    "high-vgprs-gfx1250": ("hold_tile_kernel", "gfx1250", (("num_warps", 1),), {"BLOCK": 4096}),
    "matmul-gfx1250": ("matmul_kernel", "gfx1250", (("num_warps", 4), ("num_stages", 2)), MATMUL),
    # One wave's WMMA GEMM (fla's kernels of one warp): Triton prints its layout's CTA layout as
    # `ctaLayout = {}`, which its own parser refuses; the LDS reading parses it all the same.
    "one-warp-matmul-gfx1100": ("matmul_kernel", "gfx1100", (("num_warps", 1), ("num_stages", 2)),
                                {"BM": 32, "BN": 32, "BK": 32}),
}


def compiled(case: str):  # type: ignore[no-untyped-def]
    return compile_case(CASES[case]), TARGETS[CASES[case][1]]


def comment(text: str, key: str) -> int:
    match = re.search(rf"^; {key}: (\d+)", text, re.M)
    assert match, key
    return int(match.group(1))


def directive(text: str, name: str) -> int | None:
    match = re.search(rf"^\s*\.amdhsa_{name} (\d+)$", text, re.M)
    return int(match.group(1)) if match else None


@pytest.mark.parametrize("case", CASES)
def test_figures_equal_the_compilers_own(case: str) -> None:
    ck, target = compiled(case)
    text, hsaco = ck.asm["amdgcn"], ck.asm["hsaco"]
    res = read_hsaco(hsaco, lds_bytes=ck.metadata.shared, num_warps=ck.metadata.num_warps, target=target,
                     code_text=text)
    note = note_metadata(hsaco)
    lds = amd_lds_reading(ck.asm["ttgir"], hsaco)
    assert lds == ck.metadata.shared
    assert (res["vgpr"], res["agpr"], res["vgpr_total"]) == (comment(text, "NumVgprs"), 0, comment(text, "NumVgprs"))
    assert res["sgpr"] == comment(text, "TotalNumSgprs")
    assert res["scratch_bytes"] == comment(text, "ScratchSize")
    assert res["vgpr_spill"] == vgpr_spills(text) == note[".vgpr_spill_count"]
    assert res["sgpr_spill"] == asm_metadata(text, "sgpr_spill_count")
    assert res["kernarg_bytes"] == asm_metadata(text, "kernarg_segment_size")
    assert note[".wavefront_size"] == 32 and note_waves(note) == ck.metadata.num_warps
    assert res["occupancy"] == amd_occupancy_reading(text, lds_bytes=lds, num_warps=ck.metadata.num_warps,
                                                     target=target.name, **note_wave_mode(note))
    # With no LDS, the registers alone: LLVM's own comment in the kernel's text.
    kd = parse_hsaco(hsaco).kernels[0].descriptor
    assert amd_occupancy(vgprs=kd.allocated_vgprs, sgprs=kd.allocated_sgprs, lds_bytes=0, num_warps=1,
                         target=target, wave_size=kd.wave_size) == comment(text, "Occupancy")


# What each case's figures are (Triton 3.9.0's compiles): vgpr, vgpr_spill, scratch, lds, occupancy.
EXPECTED = {
    "spill-matmul-gfx1100": (256, 57, 232, 32768, 4),
    "matmul-gfx1201": (239, 0, 0, 32768, 4),
    "wgp-matmul-gfx1100": (None, 0, 0, 24576, 5),
    "cu-matmul-gfx1100": (None, 0, 0, 24576, 4),
    "waves3-add-gfx1151": (24, 0, 0, 0, 5),
    "high-vgprs-gfx1250": (635, 0, 0, None, 1),
    "matmul-gfx1250": (298, 0, 0, 71632, 3),
}


@pytest.mark.parametrize("case", EXPECTED)
def test_the_cases_figures(case: str) -> None:
    ck, target = compiled(case)
    res = read_hsaco(ck.asm["hsaco"], lds_bytes=ck.metadata.shared, num_warps=ck.metadata.num_warps,
                     target=target, code_text=ck.asm["amdgcn"])
    got = (res["vgpr"], res["vgpr_spill"], res["scratch_bytes"], res["lds_bytes"], res["occupancy"])
    assert all(want is None or want == have for want, have in zip(EXPECTED[case], got)), got


@pytest.mark.parametrize("case", CASES)
def test_the_descriptor_says_wave32_and_the_mode(case: str) -> None:
    ck, target = compiled(case)
    text = ck.asm["amdgcn"]
    kd = parse_hsaco(ck.asm["hsaco"]).kernels[0].descriptor
    assert kd.wave32 and kd.wave_size == 32 == directive(text, "wavefront_size32") * 32
    wgp = directive(text, "workgroup_processor_mode")
    if target.name == "gfx1250":
        assert wgp is None and not kd.wgp_mode  # no such bit, no CU mode
    else:
        assert kd.wgp_mode == bool(wgp) == (("wgp_cu_mode", "cu") not in CASES[case][2])
    # The VGPRs the hardware allocates: VGPRBlocks + 1 granules (8 a granule for wave32, 16 on gfx1250).
    granule = 16 if target.name == "gfx1250" else 8
    assert kd.allocated_vgprs == (comment(text, "VGPRBlocks") + 1) * granule >= comment(text, "NumVgprs")


@pytest.mark.parametrize("target", WAVE32)
@pytest.mark.parametrize("wave64", [False, True])
def test_the_register_limit_is_llvms_at_every_granule(target: str, wave64: bool) -> None:
    """Waves a SIMD by VGPRs, at every VGPR count a wave may address up to 256 and a granule either side of
    each step, equal to LLVM's ``; Occupancy`` for a kernel using that many; wave64 too on RDNA (LLVM's
    ``+wavefrontsize64``), where the same file holds half as many a lane in half the granule."""
    if wave64 and target == "gfx1250":
        pytest.skip("gfx1250 runs wave32 only")
    wave = 64 if wave64 else 32
    regs, granule = TARGETS[target].vgpr_file(wave)
    counts = sorted({v for waves in range(1, 17) for d in (-1, 0, 1) if 0 < (v := regs // waves // granule * granule
                                                                            + d) <= 256} | {1, 255, 256})
    features = "+wavefrontsize64" if wave64 else ""
    differ = [(v, ours, llvm) for v in counts
              if (ours := amd_occupancy(vgprs=v, sgprs=16, lds_bytes=0, num_warps=1, target=TARGETS[target],
                                        wave_size=wave))
              != (llvm := llvm_occupancy(target, vgprs=v, workgroup=wave, features=features))]
    assert differ == []


@pytest.mark.parametrize(("target", "cu_mode"), [(t, False) for t in WAVE32] + [(t, True) for t in RDNA])
def test_the_lds_limit_is_llvms_at_every_workgroup_boundary(target: str, cu_mode: bool) -> None:
    """The LDS limit (registers not binding) equals LLVM's for a kernel declaring its LDS and workgroup
    size, at every LDS size where the workgroups a unit holds change, a byte either side and a block below,
    for workgroups of 1 to 16 waves: a WGP of 128 KiB (gfx1250: 320 KiB) over 4 SIMDs, one CU of 64 KiB over
    2 in CU mode; and 0 above what one workgroup may have (64 KiB on RDNA)."""
    record = TARGETS[target]
    _simds, unit, _most = record.occupancy_unit(cu_mode=cu_mode)
    block = record.shared_alloc_granule
    sizes = sorted({size for workgroups in range(1, 33) for delta in (-block, -1, 0, 1)
                    if 0 < (size := unit // workgroups + delta) <= unit + 1} | {record.max_lds_per_workgroup + 1})
    features = "+cumode" if cu_mode else ""
    differ = [(lds, warps, ours, llvm)
              for warps in (1, 2, 4, 16) for lds in sizes
              if (ours := amd_occupancy(vgprs=8, sgprs=16, lds_bytes=lds, num_warps=warps, target=record,
                                        cu_mode=cu_mode))
              != (llvm := llvm_occupancy(target, lds_bytes=lds, workgroup=warps * 32, features=features))]
    assert differ == []


def test_rdna_spills_what_cdna_holds() -> None:
    """The GEMM of 128x128 fp32 tiles over 4 waves: gfx942's 64-lane waves hold it in registers (its
    accumulator in AGPRs); an RDNA wave of 32 lanes holds twice the values a lane in at most 256 VGPRs and
    spills (RDNA 3; RDNA 4's compile fits it in 239)."""
    cdna = compile_kernel("matmul_kernel", "gfx942", options=(("num_warps", 4), ("num_stages", 2)), **MATMUL)
    cdna_res = read_hsaco(cdna.asm["hsaco"], lds_bytes=cdna.metadata.shared, num_warps=4, target=TARGETS["gfx942"])
    ck, target = compiled("spill-matmul-gfx1100")
    rdna = read_hsaco(ck.asm["hsaco"], lds_bytes=ck.metadata.shared, num_warps=4, target=target)
    assert cdna_res["vgpr_spill"] == 0 < rdna["vgpr_spill"]
    assert rdna["vgpr_total"] == 256 == target.max_vgprs_per_wave
