"""The GPU targets (model/targets.py): how a user may name them, what Triton compiles for each
(``GPUTarget("hip", "gfx950", 64)``, ``GPUTarget("cuda", 90, 32)``, ptxas' ``sm_90a``), and the
occupancy limits the module states its sources for (the CDNA3/CDNA4 ISA guides and ROCm docs: 512 unified
VGPRs+AGPRs per lane, 8 waves per SIMD, 4 SIMDs per CU, 800 SGPRs per SIMD, 64 KiB of LDS on MI300X and
160 KiB on MI355X; CUDA's occupancy tables for cc 9.0, 10.0 and 10.3: 64K registers, 64 warps, 32 blocks
and 228 KiB of shared memory per SM; for cc 12.0: 64K registers, 48 warps, 24 blocks and 100 KiB; RDNA 3, 3.5
and 4 in WGP mode: 1536 VGPRs a SIMD32 lane, 16 waves a SIMD, 4 SIMDs and 128 KiB of LDS a WGP, 64 KiB a
workgroup; gfx1250: 1024 VGPRs, 16 waves, 4 SIMDs and 320 KiB a CU). Each limit is also held against the
driver's figures of the same GPU, which say the same thing another way. The
driver's figures themselves are checked against docs/figures.md by tests/compile/test_toolchain.py."""

from __future__ import annotations

from dataclasses import fields

import pytest

from regsurvey.model.targets import (
    ANY_TARGET,
    DEFAULT_LIST_TARGET,
    TARGETS,
    Target,
    UnknownTargetError,
    get_target,
)

KIB = 1024


def test_the_targets() -> None:
    assert list(TARGETS) == ["gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201", "gfx1250",
                             "sm90", "sm100", "sm103", "sm120"]
    assert all(name == t.name for name, t in TARGETS.items())
    assert DEFAULT_LIST_TARGET in TARGETS and ANY_TARGET not in TARGETS


@pytest.mark.parametrize(("typed", "name"), [
    ("gfx942", "gfx942"), ("MI300X", "gfx942"), ("mi300", "gfx942"),
    ("gfx950", "gfx950"), ("MI355X", "gfx950"), ("mi350x", "gfx950"), (" gfx950 ", "gfx950"),
    ("sm90", "sm90"), ("sm_90a", "sm90"), ("SM_90", "sm90"), ("h100", "sm90"), ("H200", "sm90"),
    ("sm100", "sm100"), ("sm_100a", "sm100"), ("B200", "sm100"),
    ("sm103", "sm103"), ("sm_103a", "sm103"), ("B300", "sm103"), ("GB300", "sm103"),
    ("sm120", "sm120"), ("sm_120a", "sm120"), ("SM_120", "sm120"), ("RTX5090", "sm120"),
    ("gfx1100", "gfx1100"), ("RX7900XTX", "gfx1100"), ("gfx1151", "gfx1151"), ("strix-halo", "gfx1151"),
    ("gfx1201", "gfx1201"), ("RX9070XT", "gfx1201"), ("gfx1250", "gfx1250"), ("MI455X", "gfx1250"),
    ("mi450x", "gfx1250"),
])
def test_a_target_by_its_name_or_a_common_alias(typed: str, name: str) -> None:
    assert get_target(typed) is TARGETS[name]


@pytest.mark.parametrize("typed", ["gfx1030", "sm_80", "sm_121", "mi250x", "", "*"])
def test_an_unknown_target_lists_the_known_ones(typed: str) -> None:
    with pytest.raises(UnknownTargetError) as raised:
        get_target(typed)
    assert str(raised.value) == (f"unknown target {typed!r}; known targets: gfx942, gfx950, gfx1100, gfx1151, "
                                 "gfx1201, gfx1250, sm90, sm100, sm103, sm120")
    assert isinstance(raised.value, ValueError)


def test_what_triton_compiles_for() -> None:
    compiled = {t.name: (t.backend, t.arch, t.warp_size, t.arch_string, t.is_amd, t.is_nvidia)
                for t in TARGETS.values()}
    assert compiled == {"gfx942": ("hip", "gfx942", 64, "gfx942", True, False),
                        "gfx950": ("hip", "gfx950", 64, "gfx950", True, False),
                        # RDNA and gfx1250: wave32, the only wave size Triton 3.9 compiles them for.
                        "gfx1100": ("hip", "gfx1100", 32, "gfx1100", True, False),
                        "gfx1151": ("hip", "gfx1151", 32, "gfx1151", True, False),
                        "gfx1201": ("hip", "gfx1201", 32, "gfx1201", True, False),
                        "gfx1250": ("hip", "gfx1250", 32, "gfx1250", True, False),
                        "sm90": ("cuda", 90, 32, "sm_90a", False, True),
                        "sm100": ("cuda", 100, 32, "sm_100a", False, True),
                        "sm103": ("cuda", 103, 32, "sm_103a", False, True),
                        "sm120": ("cuda", 120, 32, "sm_120a", False, True)}


def test_the_gpu_each_target_stands_for() -> None:
    gpus = {t.name: (t.device_name, t.compute_units) for t in TARGETS.values()}
    assert gpus == {"gfx942": ("AMD Instinct MI300X", 304), "gfx950": ("AMD Instinct MI355X", 256),
                    # RDNA: HIP counts workgroup processors (WGP mode), two CUs each: 96, 40 and 64 CUs.
                    "gfx1100": ("AMD Radeon RX 7900 XTX", 48), "gfx1151": ("Radeon 8060S Graphics", 20),
                    "gfx1201": ("AMD Radeon RX 9070 XT", 32), "gfx1250": ("AMD Instinct MI455X", 256),
                    "sm90": ("NVIDIA H200", 132), "sm100": ("NVIDIA B200", 148),
                    "sm103": ("NVIDIA B300 SXM6 AC", 148), "sm120": ("NVIDIA GeForce RTX 5090", 170)}
    assert {t.name: t.physical_compute_units for t in TARGETS.values() if t.is_amd} == {
        "gfx942": 304, "gfx950": 256, "gfx1100": 96, "gfx1151": 40, "gfx1201": 64, "gfx1250": 256}
    # HIP's gcnArchName is the target ID: CDNA and gfx1250 carry their SRAM ECC and XNACK settings, RDNA has neither.
    assert {t.name: t.device.gcnArchName for t in TARGETS.values() if t.is_amd} == {
        "gfx942": "gfx942:sramecc+:xnack-", "gfx950": "gfx950:sramecc+:xnack-", "gfx1100": "gfx1100",
        "gfx1151": "gfx1151", "gfx1201": "gfx1201", "gfx1250": "gfx1250:sramecc+:xnack-"}
    # HIP: the gfx version as compute capability.
    assert {t.name: (t.device.major, t.device.minor) for t in TARGETS.values() if t.is_amd} == {
        "gfx942": (9, 4), "gfx950": (9, 5), "gfx1100": (11, 0), "gfx1151": (11, 5), "gfx1201": (12, 0),
        "gfx1250": (12, 5)}
    # Only the APU shares the host's memory.
    assert [t.name for t in TARGETS.values() if t.device.is_integrated] == ["gfx1151"]


@pytest.mark.parametrize("name", ["gfx942", "gfx950"])
def test_amd_occupancy_limits(name: str) -> None:
    t = TARGETS[name]
    lds = {"gfx942": 64 * KIB, "gfx950": 160 * KIB}[name]
    assert (t.regs_per_lane, t.max_waves_per_simd, t.simds_per_cu, t.sgprs_per_simd, t.shared_bytes_per_cu) == (
        512, 8, 4, 800, lds)
    # The driver's figures: its register file is 512 VGPRs x 4 SIMDs x 64 lanes, its shared memory per
    # block one CU's LDS, and its threads per CU those of 8 waves on each of 4 SIMDs.
    assert t.device.regs_per_multiprocessor == t.regs_per_lane * t.simds_per_cu * t.warp_size == 131072
    assert t.device.shared_memory_per_block == t.device.shared_memory_per_block_optin == t.shared_bytes_per_cu
    assert t.device.shared_memory_per_multiprocessor == t.shared_bytes_per_cu * t.compute_units
    assert t.device.max_threads_per_multi_processor == t.max_waves_per_simd * t.simds_per_cu * t.warp_size


@pytest.mark.parametrize("name", ["gfx1100", "gfx1151", "gfx1201", "gfx1250"])
def test_wave32_amd_occupancy_limits(name: str) -> None:
    # RDNA 3, 3.5, 4 in WGP mode: the unit is a workgroup processor of 4 SIMD32s (two CUs), 1536 VGPRs a lane of
    # each, 16 waves a SIMD, 128 KiB of LDS of which one workgroup may have 64 KiB. gfx1250: a CU of 4 SIMD32s,
    # 1024 VGPRs a lane, 16 waves a SIMD, 320 KiB of LDS, all of it one workgroup's. No SGPR limit (gfx10+).
    t = TARGETS[name]
    vgprs, lds, workgroup_lds = {"gfx1250": (1024, 320 * KIB, 320 * KIB)}.get(name, (1536, 128 * KIB, 64 * KIB))
    assert (t.regs_per_lane, t.max_waves_per_simd, t.simds_per_cu, t.sgprs_per_simd, t.shared_bytes_per_cu) == (
        vgprs, 16, 4, 0, lds)
    assert t.max_lds_per_workgroup == workgroup_lds
    # The driver's figures (HIP on ROCm). Its multiprocessor is the unit occupancy counts over: the WGP (RDNA,
    # WGP mode: multi_processor_count is half the CUs) or the CU (gfx1250, no WGP mode). Its register file is
    # TotalNumVGPRs x SIMDs x 32 lanes, and its threads those of 16 waves on each SIMD.
    assert t.compute_units * (2 if t.has_cu_mode else 1) == t.physical_compute_units
    assert t.device.regs_per_multiprocessor == t.device.regs_per_block == t.regs_per_lane * t.simds_per_cu * 32
    assert t.device.max_threads_per_multi_processor == t.max_waves_per_simd * t.simds_per_cu * t.warp_size == 2048
    # Its shared memory per block is one CU's LDS, which is what one workgroup may have (RDNA: half the WGP's);
    # "per multiprocessor" that LDS times the multiprocessors (on RDNA half the LDS there is: HIP counts one CU's
    # LDS a WGP), so it is no occupancy figure.
    assert t.device.shared_memory_per_block == t.device.shared_memory_per_block_optin == t.max_lds_per_workgroup
    assert t.device.shared_memory_per_multiprocessor == t.device.shared_memory_per_block * t.compute_units
    assert t.device.reserved_shared_memory_per_block == 0 and t.device.warp_size == t.warp_size == 32


@pytest.mark.parametrize("name", ["sm90", "sm100", "sm103"])
def test_nvidia_occupancy_limits(name: str) -> None:
    t = TARGETS[name]
    assert (t.regs_per_lane, t.max_waves_per_simd, t.simds_per_cu, t.max_blocks_per_cu, t.shared_bytes_per_cu) == (
        65536, 64, 1, 32, 228 * KIB)
    assert t.sgprs_per_simd == 0 and t.torch_hip_version is None  # AMD's alone
    assert t.device.regs_per_multiprocessor == t.regs_per_lane
    assert t.device.shared_memory_per_multiprocessor == t.shared_bytes_per_cu
    assert t.device.max_threads_per_multi_processor == t.max_waves_per_simd * t.warp_size  # 64 warps of 32
    # Without opting in, a block has 48 KiB; opted in, 227 KiB (one of the SM's 228 is the driver's reserve).
    assert (t.device.shared_memory_per_block, t.device.shared_memory_per_block_optin) == (48 * KIB, 227 * KIB)
    assert t.device.reserved_shared_memory_per_block == 1 * KIB


def test_sm120_occupancy_limits() -> None:
    # Compute capability 12.0 (RTX 50-series, RTX PRO 6000 Blackwell): the register file of the data-center
    # parts, but 48 warps, 24 blocks and 100 KiB of shared memory per SM, 99 KiB a block with opt-in.
    t = TARGETS["sm120"]
    assert (t.regs_per_lane, t.max_waves_per_simd, t.simds_per_cu, t.max_blocks_per_cu, t.shared_bytes_per_cu) == (
        65536, 48, 1, 24, 100 * KIB)
    allocation = (t.reg_alloc_granule, t.reg_sub_partitions, t.max_regs_per_thread, t.shared_alloc_granule)
    assert allocation == (256, 4, 255, 128)
    assert t.device.regs_per_multiprocessor == t.device.regs_per_block == t.regs_per_lane
    assert t.device.shared_memory_per_multiprocessor == t.shared_bytes_per_cu
    assert t.device.max_threads_per_multi_processor == t.max_waves_per_simd * t.warp_size == 1536
    assert (t.device.shared_memory_per_block, t.device.shared_memory_per_block_optin) == (48 * KIB, 99 * KIB)
    assert t.device.shared_memory_per_block_optin + t.device.reserved_shared_memory_per_block == t.shared_bytes_per_cu
    assert (t.device.major, t.device.minor) == (12, 0) and (TARGETS["sm103"].device.major,
                                                            TARGETS["sm103"].device.minor) == (10, 3)


def test_what_the_management_libraries_report_is_the_same_gpu() -> None:
    ids = {t.name: t.management.pci_device_id for t in TARGETS.values() if t.management is not None}
    assert ids == {"gfx942": 0x74A1, "gfx950": 0x75A3, "gfx1100": 0x744C, "gfx1151": 0x1586, "gfx1201": 0x7550,
                   "gfx1250": 0x75C1, "sm90": 0x2335, "sm100": 0x2901, "sm103": 0x3182, "sm120": 0x2B85}
    vram = {t.name: t.management.vram_type for t in TARGETS.values() if t.is_amd and t.management is not None}
    assert vram == {"gfx942": "HBM", "gfx950": "HBM", "gfx1100": "GDDR6", "gfx1151": "LPDDR5", "gfx1201": "GDDR6",
                    "gfx1250": "HBM"}
    for t in TARGETS.values():
        assert t.management is not None
        if t.is_amd:  # AMD SMI reads its VRAM from the figure HIP reports; no driver version answered
            assert (t.management.memory_total, t.management.driver_version) == (t.device.total_memory, "")
            assert t.management.cuda_driver_version == 0
        else:  # NVML's total counts what the driver reserves, which torch's does not
            assert t.management.memory_total > t.device.total_memory
            assert t.management.cuda_driver_version == 13000


# Each target is one record holding every per-arch fact the readers, the lint and the occupancy rules use.
AMD_ONLY = ("sgprs_per_simd", "sgpr_alloc_granule", "trap_sgprs", "torch_hip_version")
# From gfx10 on SGPRs do not limit waves (LLVM's getOccupancyWithNumSGPRs): no SGPR facts.
SGPR_FACTS = AMD_ONLY[:3]
NVIDIA_ONLY = ("reg_sub_partitions", "max_regs_per_thread", "param_bank_base")


def test_a_target_has_every_fact_of_its_vendor_and_none_of_the_other() -> None:
    # A vendor's facts have no default worth having: a new target that leaves one out fails here.
    assert {f.name for f in fields(Target)} >= {*AMD_ONLY, *NVIDIA_ONLY, "reg_alloc_granule", "shared_alloc_granule"}
    for target in TARGETS.values():
        mine, other = (AMD_ONLY, NVIDIA_ONLY) if target.is_amd else (NVIDIA_ONLY, AMD_ONLY)
        if target.is_amd and target.warp_size == 32:
            assert not any(getattr(target, name) for name in SGPR_FACTS), target.name
            mine = tuple(name for name in mine if name not in SGPR_FACTS)
        assert all(getattr(target, name) for name in mine), target.name
        assert not any(getattr(target, name) for name in other), target.name
        assert target.reg_alloc_granule > 0 and target.shared_alloc_granule > 0, target.name
