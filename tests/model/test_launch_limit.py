"""Why a build cannot launch: the limits agree with the occupancy rules the readers apply, and a row's
figures name the one it is over."""

from __future__ import annotations

import pytest

from regsurvey.model.launch_limit import LaunchLimit, launch_limit, register_limit, sgpr_limit, shared_limit
from regsurvey.model.results import Row
from regsurvey.model.targets import TARGETS, Target
from regsurvey.objects.amd_object import amd_occupancy
from regsurvey.objects.nvidia_object import nvidia_occupancy_blocks

AMD_TARGETS = [t for t in TARGETS.values() if t.is_amd]
NVIDIA_TARGETS = [t for t in TARGETS.values() if t.is_nvidia]


@pytest.mark.parametrize("target", AMD_TARGETS, ids=lambda t: t.name)
def test_amd_limits_are_where_occupancy_falls_to_0(target: Target) -> None:
    limit = shared_limit(target)
    # The CU's LDS on CDNA; what one workgroup may have on RDNA (64 KiB of the WGP's 128 KiB) and gfx1250.
    assert limit == {"gfx942": 65536, "gfx950": 163840, "gfx1250": 327680}.get(target.name, 65536)
    for warps in (1, 2, 4, 8, 16):
        assert amd_occupancy(vgprs=8, sgprs=16, lds_bytes=limit, num_warps=warps, target=target) > 0
        assert amd_occupancy(vgprs=8, sgprs=16, lds_bytes=limit + 1, num_warps=warps, target=target) == 0
        vgprs, sgprs = register_limit(target, warps), sgpr_limit(target, warps)
        assert amd_occupancy(vgprs=vgprs, sgprs=16, lds_bytes=0, num_warps=warps, target=target) > 0
        assert amd_occupancy(vgprs=8, sgprs=sgprs, lds_bytes=0, num_warps=warps, target=target) > 0
        if vgprs < target.max_vgprs_per_wave:  # what a wave may address: fewer waves always fit
            assert amd_occupancy(vgprs=vgprs + 1, sgprs=16, lds_bytes=0, num_warps=warps, target=target) == 0
        if target.sgprs_per_simd:  # CDNA; from gfx10 on SGPRs do not limit waves
            assert amd_occupancy(vgprs=8, sgprs=sgprs + 1, lds_bytes=0, num_warps=warps, target=target) == 0
    # RDNA's 1536 VGPRs a SIMD32 lane hold 6 waves of the 256 a wave may address.
    assert (register_limit(target, 8), register_limit(target, 16)) == {
        "gfx1100": (256, 256), "gfx1151": (256, 256), "gfx1201": (256, 256), "gfx1250": (512, 256)}.get(
        target.name, (256, 128))


@pytest.mark.parametrize("target", NVIDIA_TARGETS, ids=lambda t: t.name)
def test_nvidia_limits_are_where_occupancy_falls_to_0(target: Target) -> None:
    limit = shared_limit(target)
    # The SM's shared memory less the driver's 1 KiB a block: 227 KiB, on compute capability 12.0 99 KiB.
    assert limit == {"sm120": 101376}.get(target.name, 232448)
    for warps in (1, 4, 8, 16, 32):
        assert nvidia_occupancy_blocks(regs=32, shared_bytes=limit, num_warps=warps, target=target) > 0
        assert nvidia_occupancy_blocks(regs=32, shared_bytes=limit + 1, num_warps=warps, target=target) == 0
        regs = register_limit(target, warps)
        assert nvidia_occupancy_blocks(regs=regs, shared_bytes=0, num_warps=warps, target=target) > 0
        if regs < 255:
            assert nvidia_occupancy_blocks(regs=regs + 1, shared_bytes=0, num_warps=warps, target=target) == 0
    assert (register_limit(target, 8), register_limit(target, 16), register_limit(target, 32)) == (255, 128, 64)


def row(target: str, num_warps: int = 4, **resources: int) -> Row:
    return Row(key="mm/t16", kind="mm", axes={}, target=target, kernel="mm_kernel", status="ok", num_warps=num_warps,
               resources=resources)


def test_a_row_names_what_is_over_its_targets_limit() -> None:
    lds = launch_limit(row("gfx950", lds_bytes=205744, vgpr=86, vgpr_total=86, sgpr=40, occupancy=0))
    assert lds == LaunchLimit("lds_bytes", 205744, 163840, "the CU's 163840 B")
    assert lds.describe() == "LDS 205744 B, above the CU's 163840 B"
    assert lds.describe("168880-236976") == "LDS 168880-236976 B, above the CU's 163840 B"
    shared = launch_limit(row("sm100", shared_bytes=240000, regs=128, occupancy_warps=0))
    assert shared is not None and shared.describe() == "shared memory 240000 B, above the 232448 B a block may use"
    # A GEMM whose 3 stages fit an H200's SM does not fit an RTX 5090's.
    small = launch_limit(row("sm120", shared_bytes=114688, regs=128, occupancy_warps=0))
    assert small is not None and small.describe() == "shared memory 114688 B, above the 101376 B a block may use"
    vgprs = launch_limit(row("gfx942", num_warps=16, lds_bytes=0, vgpr=200, vgpr_total=200, sgpr=40, occupancy=0))
    assert vgprs is not None and vgprs.describe() == (
        "unified VGPRs 200, above the 128 a lane may hold in a workgroup of 16 waves")
    regs = launch_limit(row("sm90", num_warps=32, shared_bytes=0, regs=96, occupancy_warps=0))
    assert regs is not None and regs.describe() == "registers 96, above the 64 a thread may hold in a block of 32 warps"
    # Nothing over a limit in the figures (a register count raised by the kernel descriptor), a failed build.
    assert launch_limit(row("gfx950", lds_bytes=1024, vgpr=86, vgpr_total=86, sgpr=40, occupancy=0)) is None
    assert launch_limit(Row(key="mm/t16", kind="mm", axes={}, target="gfx950", kernel="mm_kernel",
                            status="error", error="boom")) is None
